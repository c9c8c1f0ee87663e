"""What users' and kafkalite's own tests use: a real ZooKeeper, helpers, the pytest plugin.

Names are imported lazily (``from kafkalite.testing import ZooKeeperServer`` works) so that the
pytest plugin, which loads in every pytest run, stays cheap to import.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "ZooKeeperServer": "kafkalite.testing.zookeeper",
    "ZooKeeperEnsemble": "kafkalite.testing.zookeeper_ensemble",
    "ZooKeeperInstall": "kafkalite.testing.zookeeper_install",
    "ExternalZooKeeper": "kafkalite.testing.zookeeper",
    "ZooKeeperContainer": "kafkalite.testing.zookeeper_container",
    "DockerZooKeeper": "kafkalite.testing.zookeeper_container",
    "ZooKeeperNotFoundError": "kafkalite.testing.zookeeper_install",
    "ZooKeeperStartError": "kafkalite.testing.zookeeper_process",
    "find_zookeeper_install": "kafkalite.testing.zookeeper_install",
    "start_zookeeper": "kafkalite.testing.zookeeper",
    "expire_session": "kafkalite.testing.zookeeper",
    "unique_chroot": "kafkalite.testing.zookeeper",
    "four_letter_word": "kafkalite.testing.zookeeper_process",
    "Placement": "kafkalite.testing.procs",
    "free_port": "kafkalite.testing.ports",
    "free_ports": "kafkalite.testing.ports",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kafkalite.testing' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
