"""Fault injection for tests: network partitions, process faults, ZooKeeper quorum loss.

- ``network.FaultNetwork``: every broker and ZooKeeper node in a network namespace of its own on
  one bridge; ``cut(a, b)``, ``isolate(node)``, ``heal()`` through an nftables table of our own.
- ``cluster.FaultCluster``: a ZooKeeper ensemble and kafkalite brokers placed on a FaultNetwork,
  with partitions and process faults (``kill``, ``pause``/``resume``, ``restart``) by node name.
- ``fixtures``: pytest fixtures (``fault_network``, ``fault_zookeeper``, ``fault_cluster_factory``)
  registered by kafkalite's pytest plugin; they skip, saying why, where namespaces cannot be made.

Pure parts (``topology``: names, addresses, ``ip`` commands; ``nft``: rules) are unit tested.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "FaultNetwork": "kafkalite.testing.faults.network",
    "FaultNetworkUnavailable": "kafkalite.testing.faults.network",
    "unavailable_reason": "kafkalite.testing.faults.network",
    "FaultCluster": "kafkalite.testing.faults.cluster",
    "HOST": "kafkalite.testing.faults.topology",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kafkalite.testing.faults' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
