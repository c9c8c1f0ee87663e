"""Users' configs in ZooKeeper: ``/config/users/<user>``, where Kafka keeps SCRAM credentials.

A user's znode is a config entity like a topic's (``{"version":1,"config":{"SCRAM-SHA-512":
"salt=...,stored_key=...,server_key=...,iterations=4096"}}``); every change is announced with a
``/config/changes`` notification naming ``users/<user>``, which brokers watch. The values are
opaque strings here (``kafkalite.security.scram`` reads them).

``UserConfigZkStore(zk)`` uses only the raw ZnodeOps, so it blocks: run it through
``TwistedZk.run`` on the reactor.
"""

from __future__ import annotations

from typing import Mapping

from zk_schema import config as s_config

from kafkalite.zk.errors import ZkNoNodeError
from kafkalite.zk.ops import ZnodeOps
from kafkalite.zk.znode_acls import restrict_if_sensitive, sensitive_acl

__all__ = ["UserConfigZkStore"]


class UserConfigZkStore:
    def __init__(self, zk: ZnodeOps):
        self.zk = zk

    def users(self) -> list[str]:
        """Every user with a config znode (names desanitized)."""
        return [s_config.desanitize_entity_name(child) for child in
                self.zk.get_children(s_config.config_entity_type_path(s_config.USERS))]

    def get(self, user: str) -> dict[str, str]:
        path = s_config.user_config_path(user)
        got = self.zk.get_data(path)
        if got is None or not got[0]:
            # no data: a user made only as the parent of its (user, client-id) quotas, as
            # Kafka's createRecursive leaves it (and as kafka-configs --zookeeper does)
            return {}
        return dict(s_config.EntityConfig.decode(got[0], got[1], path=path).config)

    def get_all(self) -> dict[str, dict[str, str]]:
        return {user: self.get(user) for user in self.users()}

    def alter(self, user: str, set_values: Mapping[str, str] = (),
              delete_keys=()) -> dict[str, str]:
        """Set and delete keys of the user's config, announce the change, and return the new
        config. A user left with no keys loses its znode, as in Kafka."""
        config = self.get(user)
        config.update(dict(set_values))
        for key in delete_keys:
            config.pop(key, None)
        path = s_config.user_config_path(user)
        if config:
            # credentials are never world-readable: created with the narrow ACL, and an older
            # znode (written before zookeeper.set.acl) narrowed
            self.zk._create_or_set(path, s_config.EntityConfig(config).encode(),
                                   acl=sensitive_acl(self.zk, path))
            restrict_if_sensitive(self.zk, path)
        else:
            self.zk.delete(path)
        self._announce(user)
        return config

    def replace(self, user: str, config: Mapping[str, str]) -> None:
        """Write the user's whole config and announce the change, as Kafka 2.8's
        AdminZkClient.changeConfigs does for AlterUserScramCredentials: the znode stays, even
        with no keys left (``{"version":1,"config":{}}``)."""
        path = s_config.user_config_path(user)
        self.zk._create_or_set(path, s_config.EntityConfig(dict(config)).encode(),
                               acl=sensitive_acl(self.zk, path))
        restrict_if_sensitive(self.zk, path)
        self._announce(user)

    def users_as_stored(self) -> list[str]:
        """The children of ``/config/users`` as they are (sanitized names, Kafka's
        fetchAllEntityConfigs keys)."""
        return list(self.zk.get_children(s_config.config_entity_type_path(s_config.USERS)))

    def get_stored(self, child: str) -> dict[str, str]:
        """The config of the child ``child`` of ``/config/users`` (a sanitized name)."""
        path = s_config.config_entity_path(s_config.USERS, child)
        got = self.zk.get_data(path)
        if got is None or not got[0]:
            # no data: a user made only as the parent of its (user, client-id) quotas, as
            # Kafka's createRecursive leaves it (and as kafka-configs --zookeeper does)
            return {}
        return dict(s_config.EntityConfig.decode(got[0], got[1], path=path).config)

    def _announce(self, user: str) -> None:
        note = s_config.ConfigChangeNotification.for_user(user).encode()
        try:
            self.zk.create(s_config.config_change_prefix_path(), note, sequence=True)
        except ZkNoNodeError:
            self.zk.ensure_path(s_config.CONFIG_CHANGES_PATH)
            self.zk.create(s_config.config_change_prefix_path(), note, sequence=True)

    def changed_users(self, notifications: Mapping[str, s_config.ConfigChangeNotification]
                      ) -> set[str]:
        """The users named by ``/config/changes`` notifications."""
        return {s_config.desanitize_entity_name(n.entity_name) for n in notifications.values()
                if n.entity_type == s_config.USERS}
