"""Client quota entities in ZooKeeper, where Kafka 2.8 keeps them (KIP-13, KIP-55, KIP-546):

* ``/config/users/<user>``: a user's quotas, beside its SCRAM credentials in the same znode;
* ``/config/clients/<client-id>``: a client id's quotas;
* ``/config/users/<user>/clients/<client-id>``: a (user, client-id) pair's quotas;
* ``/config/ips/<ip>``: an IP's connection-rate quota (KIP-612);

``<default>`` names the default entity of its kind. Each znode is an entity config
(``{"version":1,"config":{"producer_byte_rate":"1048576"}}``) and each change is announced by a
``/config/changes`` notification naming the entity's path (``users/alice/clients/c1``), as
Kafka's AdminZkClient.changeConfigs does. Names here are as stored (sanitized, see
``zk_schema.config.quota_entity_name``); ``server.quota_admin`` turns them into entities.

``QuotaZkStore(zk)`` uses only the raw ZnodeOps, so it blocks: run it through
``TwistedZk.run`` on the reactor.
"""

from __future__ import annotations

from typing import Mapping

from zk_schema import config as s_config

from kafkalite.zk.errors import ZkNoNodeError
from kafkalite.zk.ops import ZnodeOps
from kafkalite.zk.znode_acls import restrict_if_sensitive, sensitive_acl

__all__ = ["QuotaZkStore"]


class QuotaZkStore:
    def __init__(self, zk: ZnodeOps):
        self.zk = zk

    def fetch(self, entity_type: str, entity_path: str) -> dict[str, str]:
        """The config of ``/config/<type>/<path>`` ({} without a znode), as Kafka's
        fetchEntityConfig."""
        path = s_config.quota_entity_znode_path(entity_type, entity_path)
        got = self.zk.get_data(path)
        if got is None or not got[0]:
            # a user made only as the parent of its (user, client-id) quotas has no data, as
            # Kafka's createRecursive leaves it: no configs
            return {}
        return dict(s_config.EntityConfig.decode(got[0], got[1], path=path).config)

    def fetch_all(self, entity_type: str) -> dict[str, dict[str, str]]:
        """Every child of ``/config/<type>`` with its config (Kafka's fetchAllEntityConfigs)."""
        return {child: self.fetch(entity_type, child) for child in
                self.zk.get_children(s_config.config_entity_type_path(entity_type))}

    def fetch_all_user_clients(self) -> dict[str, dict[str, str]]:
        """Every ``<user>/clients/<client-id>`` with its config (Kafka's
        fetchAllChildEntityConfigs(users, clients))."""
        found = {}
        for user in self.zk.get_children(s_config.config_entity_type_path(s_config.USERS)):
            for client in self.zk.get_children(s_config.user_clients_path(user)):
                path = s_config.user_client_entity_path(user, client)
                found[path] = self.fetch(s_config.USERS, path)
        return found

    def change(self, entity_type: str, entity_path: str, config: Mapping[str, str]) -> None:
        """Write the entity's whole config (the znode stays even with no keys left, as
        Kafka's) and announce the change."""
        path = s_config.quota_entity_znode_path(entity_type, entity_path)
        # under /config/users the znode may hold credentials too: Kafka's sensitive ACL
        acl = sensitive_acl(self.zk, path)
        data = s_config.EntityConfig(dict(config)).encode()
        self.zk._create_or_set(path, data, acl=acl)        # parents made as needed
        restrict_if_sensitive(self.zk, path)
        note = s_config.ConfigChangeNotification.for_entity_path(entity_type,
                                                                 entity_path).encode()
        try:
            self.zk.create(s_config.config_change_prefix_path(), note, sequence=True)
        except ZkNoNodeError:
            self.zk.ensure_path(s_config.CONFIG_CHANGES_PATH)
            self.zk.create(s_config.config_change_prefix_path(), note, sequence=True)
