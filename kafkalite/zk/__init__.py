"""ZooKeeper access: the only package that imports kazoo.

- :class:`ZkClient` — blocking typed operations on the zk_schema tree, watches, session state.
- :class:`TwistedZk` (in :mod:`kafkalite.zk.twisted_bridge`) — the same calls as Deferreds.
- :mod:`kafkalite.zk.errors` — what failures look like (all ``ZooKeeperError``).
"""

from kafkalite.zk.client import (
    ZkCheck, ZkClient, ZkCreate, ZkDelete, ZkSetData, ZkState, ZkWatch, expire_session, probe,
    split_connect_string,
)
from kafkalite.zk.errors import (
    ControllerMovedError, ZkBadVersionError, ZkClientClosedError, ZkConnectionLossError,
    ZkNodeExistsError, ZkNoNodeError, ZkNotEmptyError, ZkSessionExpiredError, ZooKeeperError,
)

__all__ = [
    "ZkClient", "ZkState", "ZkWatch", "ZkCreate", "ZkSetData", "ZkDelete", "ZkCheck",
    "expire_session", "probe", "split_connect_string",
    "ZooKeeperError", "ZkNoNodeError", "ZkNodeExistsError", "ZkBadVersionError", "ZkNotEmptyError",
    "ZkConnectionLossError", "ZkSessionExpiredError", "ZkClientClosedError", "ControllerMovedError",
]
