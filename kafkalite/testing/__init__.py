"""What users' and kafkalite's own tests use: a real ZooKeeper, helpers, the pytest plugin.

Names are imported lazily (``from kafkalite.testing import ZooKeeperServer`` works) so that the
pytest plugin, which loads in every pytest run, stays cheap to import.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "ZooKeeperServer": "kafkalite.testing.zookeeper",
    "ZooKeeperEnsemble": "kafkalite.testing.zookeeper",
    "ZooKeeperInstall": "kafkalite.testing.zookeeper",
    "ExternalZooKeeper": "kafkalite.testing.zookeeper",
    "DockerZooKeeper": "kafkalite.testing.zookeeper",
    "ZooKeeperNotFoundError": "kafkalite.testing.zookeeper",
    "ZooKeeperStartError": "kafkalite.testing.zookeeper",
    "find_zookeeper_install": "kafkalite.testing.zookeeper",
    "start_zookeeper": "kafkalite.testing.zookeeper",
    "expire_session": "kafkalite.testing.zookeeper",
    "unique_chroot": "kafkalite.testing.zookeeper",
    "four_letter_word": "kafkalite.testing.zookeeper",
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
