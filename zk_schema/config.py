"""``/config/<type>/<name>`` (dynamic config overrides) and ``/config/changes/config_change_<seq>``.

Entity config: ``{"version":1,"config":{"retention.ms":"1000"}}`` (values are strings, as in Kafka).
Change notification (sequential): ``{"version":2,"entity_path":"topics/t"}``.

Dynamic broker configs (KIP-226) are entities of type ``brokers``: ``/config/brokers/<id>`` for one
broker, ``/config/brokers/<default>`` for the cluster-wide default (Kafka's
``ConfigEntityName.Default``), announced as ``brokers/<id>`` / ``brokers/<default>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from zk_schema._codec import (
    SchemaError, dict_field, dump, int_field, load_object, segment, str_field,
)
from zk_schema.topics import validate_topic_name

CONFIG_PATH = "/config"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
TOPICS = "topics"
CLIENTS = "clients"
USERS = "users"
BROKERS = "brokers"
IPS = "ips"            # IP connection-rate quotas (Kafka 2.8, KIP-612)
# Kafka 2.8's ConfigType.all: each has a /config/<type> znode made at broker start-up
ENTITY_TYPES = (TOPICS, CLIENTS, USERS, BROKERS, IPS)


#: Kafka's ConfigEntityName.Default: the entity name of a cluster-wide default
DEFAULT_ENTITY = "<default>"


def config_entity_type_path(entity_type: str) -> str:
    if entity_type not in ENTITY_TYPES:
        raise SchemaError(f"unknown config entity type {entity_type!r}; one of {ENTITY_TYPES}")
    return f"{CONFIG_PATH}/{entity_type}"


def config_entity_path(entity_type: str, name: str) -> str:
    return f"{config_entity_type_path(entity_type)}/{segment(name, 'config entity')}"


def topic_config_path(topic: str) -> str:
    return config_entity_path(TOPICS, validate_topic_name(topic))


def broker_config_entity(broker_id: int | None) -> str:
    """The entity name of a broker's dynamic configs: its id, or ``<default>`` for None."""
    if broker_id is None:
        return DEFAULT_ENTITY
    if isinstance(broker_id, bool) or not isinstance(broker_id, int) or broker_id < 0:
        raise SchemaError(f"broker id {broker_id!r} must be an integer >= 0 (or None for "
                          f"the cluster default)")
    return str(broker_id)


def parse_broker_config_entity(name: str) -> int | None:
    """The broker id of entity name ``name`` (None for ``<default>``); SchemaError otherwise."""
    if name == DEFAULT_ENTITY:
        return None
    if not name.isdigit():
        raise SchemaError(f"broker config entity {name!r} is neither a broker id nor "
                          f"{DEFAULT_ENTITY}")
    return int(name)


def broker_config_path(broker_id: int | None) -> str:
    """``/config/brokers/<id>``, or ``/config/brokers/<default>`` for None (KIP-226)."""
    return config_entity_path(BROKERS, broker_config_entity(broker_id))


def sanitize_entity_name(name: str) -> str:
    """A user or client name as a znode name: URL-encoded, as Kafka's Sanitizer does it
    (``CN=a,O=b`` becomes ``CN%3Da%2CO%3Db``; ``*`` and ``~`` are encoded too)."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize_entity_name(child: str) -> str:
    return unquote(child)


def user_config_path(user: str) -> str:
    """``/config/users/<user>``: the user's SCRAM credentials (and quotas, in Kafka)."""
    if not isinstance(user, str) or not user:
        raise SchemaError(f"user {user!r} cannot be a config entity")
    return config_entity_path(USERS, sanitize_entity_name(user))


def quota_entity_name(name: str | None) -> str:
    """A quota entity's name in a znode path, as Kafka's ZkAdminManager.sanitizeEntityName:
    ``<default>`` for the default (None), else the sanitized name."""
    return DEFAULT_ENTITY if name is None else sanitize_entity_name(name)


def quota_entity_from_znode(child: str) -> str | None:
    """The inverse of ``quota_entity_name``: None for ``<default>``."""
    return None if child == DEFAULT_ENTITY else desanitize_entity_name(child)


def user_client_entity_path(user_child: str, client_child: str) -> str:
    """``<user>/clients/<client-id>`` (both already sanitized): the path below ``/config/users``
    of a (user, client-id) quota entity, as Kafka names it in notifications
    (``users/<user>/clients/<client-id>``)."""
    return f"{segment(user_child, 'user')}/{CLIENTS}/{segment(client_child, 'client-id')}"


def user_clients_path(user_child: str) -> str:
    """``/config/users/<user>/clients``: the user's (user, client-id) quota entities."""
    return f"{config_entity_path(USERS, user_child)}/{CLIENTS}"


def quota_entity_znode_path(entity_type: str, entity_path: str) -> str:
    """``/config/<type>/<path>`` where ``path`` may be ``<user>/clients/<client-id>``."""
    parts = entity_path.split("/")
    if entity_type == USERS and len(parts) == 3 and parts[1] == CLIENTS:
        return f"{user_clients_path(parts[0])}/{segment(parts[2], 'client-id')}"
    return config_entity_path(entity_type, entity_path)


def config_changes_path() -> str:
    return CONFIG_CHANGES_PATH


def config_change_prefix_path() -> str:
    """The prefix to create a sequential change notification with."""
    return f"{CONFIG_CHANGES_PATH}/{CONFIG_CHANGE_PREFIX}"


def config_change_path(child: str) -> str:
    return f"{CONFIG_CHANGES_PATH}/{segment(child, 'config change')}"


@dataclass(frozen=True)
class EntityConfig:
    """Config overrides of one entity (e.g. a topic). Values are strings."""

    config: dict[str, str] = field(default_factory=dict)
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({"version": 1, "config": {str(k): str(v) for k, v in self.config.items()}})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None, *,
               path: str = "entity config") -> "EntityConfig":
        obj = load_object(data, path)
        cfg = dict_field(obj, "config", path)
        for k, v in cfg.items():
            if not isinstance(v, str):
                raise SchemaError(f"{path}: config value of {k!r} must be a string, got {v!r}")
        return cls(config=dict(cfg), zk_version=zk_version)


TopicConfig = EntityConfig


@dataclass(frozen=True)
class ConfigChangeNotification:
    """Announces that ``/config/<entity_path>`` changed, e.g. ``entity_path="topics/t"``."""

    entity_path: str
    zk_version: int | None = None

    @classmethod
    def for_topic(cls, topic: str) -> "ConfigChangeNotification":
        return cls(entity_path=f"{TOPICS}/{validate_topic_name(topic)}")

    @classmethod
    def for_broker(cls, broker_id: int | None) -> "ConfigChangeNotification":
        """``brokers/<id>`` or ``brokers/<default>`` (None)."""
        return cls(entity_path=f"{BROKERS}/{broker_config_entity(broker_id)}")

    @classmethod
    def for_user(cls, user: str) -> "ConfigChangeNotification":
        return cls(entity_path=f"{USERS}/{sanitize_entity_name(user)}")

    @classmethod
    def for_entity_path(cls, entity_type: str, entity_path: str) -> "ConfigChangeNotification":
        """``<type>/<path>``, e.g. ``users/alice/clients/c1`` for a (user, client-id) quota."""
        quota_entity_znode_path(entity_type, entity_path)        # checks the path's shape
        return cls(entity_path=f"{entity_type}/{entity_path}")

    @property
    def entity_type(self) -> str:
        return self.entity_path.split("/", 1)[0]

    @property
    def entity_name(self) -> str:
        return self.entity_path.split("/", 1)[-1]

    def encode(self) -> bytes:
        return dump({"version": 2, "entity_path": self.entity_path})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "ConfigChangeNotification":
        what = CONFIG_CHANGES_PATH
        obj = load_object(data, what)
        version = int_field(obj, "version", what)
        if version != 2:
            raise SchemaError(f"{what}: unsupported notification version {version}")
        path = str_field(obj, "entity_path", what)
        if "/" not in path:
            raise SchemaError(f"{what}: entity_path {path!r} is not <type>/<name>")
        return cls(entity_path=path, zk_version=zk_version)
