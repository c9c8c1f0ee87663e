"""Which znodes get which ZooKeeper ACL when ``zookeeper.set.acl=true`` (Kafka's
ZkData.defaultAcls), as data: kazoo's ACL objects are made in kafkalite.zk.znode_acls.

* ``secure``: the creator's identity may do everything, everyone may read (most znodes).
* ``sensitive``: only the creator's identity, not even reading: users' SCRAM credentials,
  broker configs and delegation tokens (Kafka's SensitiveRootPaths), so their salts and keys
  are not public.
* ``open``: everyone may do everything: ``/consumers``, where Kafka 0.8 consumers register
  themselves (kafkalite's ZooKeeper groups), as Kafka keeps it.
"""

from __future__ import annotations

from zk_schema.config import BROKERS, USERS, config_entity_type_path
from zk_schema.consumers import CONSUMERS_PATH
from zk_schema.delegation_tokens import TOKENS_PATH

SECURE, SENSITIVE, OPEN = "secure", "sensitive", "open"

SENSITIVE_ROOT_PATHS = (config_entity_type_path(USERS), config_entity_type_path(BROKERS),
                        TOKENS_PATH)
OPEN_PATHS = (CONSUMERS_PATH,)


def acl_kind(path: str) -> str:
    """SECURE, SENSITIVE or OPEN for a znode created with zookeeper.set.acl=true."""
    if path in OPEN_PATHS:
        return OPEN
    if any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOT_PATHS):
        return SENSITIVE
    return SECURE
