"""ACLs in ZooKeeper, as Kafka's ZkData keeps them (AclZNode, ExtendedAclZNode, the change
notifications), and the secure-ACL policy for every znode when ``zookeeper.set.acl=true``.

Stores, one per pattern type::

    /kafka-acl/<Type>/<name>                      literal patterns ("Topic", "Group", "Cluster",
                                                  "TransactionalId", "DelegationToken")
    /kafka-acl-extended/prefixed/<Type>/<name>    prefixed patterns

Each resource znode holds ``{"version":1,"acls":[{"principal":"User:alice",
"permissionType":"Allow","operation":"Read","host":"*"}]}``.

Changes are announced with sequential znodes that every broker watches::

    /kafka-acl-changes/acl_changes_<seq>            "TOPIC:<name>" (UTF-8, literal patterns)
    /kafka-acl-extended-changes/acl_changes_<seq>   {"version":1,"resourceType":"TOPIC",
                                                     "name":"t","patternType":"PREFIXED"}

Type and pattern names are plain strings here (zk_schema imports nothing of kafkalite);
kafkalite.security.acl maps them to its enums.
"""

from __future__ import annotations

from dataclasses import dataclass

from zk_schema._codec import (
    SchemaError, dump, field, int_field, load_object, load_text, segment, str_field,
)

LITERAL = "LITERAL"
PREFIXED = "PREFIXED"
PATTERN_TYPES = (LITERAL, PREFIXED)

ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
ACL_CHANGES_PATH = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES_PATH = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"
ACL_CHANGE_EXPIRATION_MS = 15 * 60 * 1000   # Kafka's changeExpirationMs for notifications

#: the ACL persistent paths a broker with an authorizer creates (Kafka's createAclPaths)
ACL_PATHS = (ACL_PATH, EXTENDED_ACL_PATH, f"{EXTENDED_ACL_PATH}/prefixed", ACL_CHANGES_PATH,
             EXTENDED_ACL_CHANGES_PATH)


def _pattern(pattern_type: str) -> str:
    if pattern_type not in PATTERN_TYPES:
        raise SchemaError(f"ACLs are stored for pattern types {PATTERN_TYPES}, not "
                          f"{pattern_type!r}")
    return pattern_type


def store_path(pattern_type: str) -> str:
    """``/kafka-acl`` for literal patterns, ``/kafka-acl-extended/prefixed`` for prefixed."""
    if _pattern(pattern_type) == LITERAL:
        return ACL_PATH
    return f"{EXTENDED_ACL_PATH}/{pattern_type.lower()}"


def resource_type_path(pattern_type: str, resource_type: str) -> str:
    return f"{store_path(pattern_type)}/{segment(resource_type, 'ACL resource type')}"


def resource_path(pattern_type: str, resource_type: str, name: str) -> str:
    return f"{resource_type_path(pattern_type, resource_type)}/{segment(name, 'ACL resource')}"


def change_path(pattern_type: str) -> str:
    """Where changes of ``pattern_type`` patterns are announced."""
    return ACL_CHANGES_PATH if _pattern(pattern_type) == LITERAL else EXTENDED_ACL_CHANGES_PATH


def change_prefix_path(pattern_type: str) -> str:
    """The prefix to create a sequential change notification with."""
    return f"{change_path(pattern_type)}/{ACL_CHANGE_PREFIX}"


def change_child_path(pattern_type: str, child: str) -> str:
    return f"{change_path(pattern_type)}/{segment(child, 'ACL change notification')}"


@dataclass(frozen=True)
class AclEntryRecord:
    """One entry as stored: Kafka's ZooKeeper spellings ("Allow", "Read", "User:alice", "*")."""

    principal: str
    permission_type: str
    operation: str
    host: str


@dataclass(frozen=True)
class ResourceAcls:
    """The entries of one resource pattern (``zk_version`` of the znode they were read from)."""

    acls: tuple[AclEntryRecord, ...] = ()
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({"version": 1, "acls": [
            {"principal": a.principal, "permissionType": a.permission_type,
             "operation": a.operation, "host": a.host} for a in self.acls]})

    @classmethod
    def decode(cls, data: bytes | None, zk_version: int | None = None,
               path: str = "ACL znode") -> "ResourceAcls":
        if data is None or len(data) == 0:
            return cls((), zk_version)            # Kafka reads an empty znode as no ACLs
        obj = load_object(data, path)
        version = int_field(obj, "version", path)
        if version != 1:
            raise SchemaError(f"{path}: unsupported ACL version {version}")
        items = field(obj, "acls", path)
        if not isinstance(items, list):
            raise SchemaError(f"{path}: 'acls' must be a list")
        acls = []
        for item in items:
            if not isinstance(item, dict):
                raise SchemaError(f"{path}: each ACL must be an object, got {item!r}")
            acls.append(AclEntryRecord(str_field(item, "principal", path),
                                       str_field(item, "permissionType", path),
                                       str_field(item, "operation", path),
                                       str_field(item, "host", path)))
        return cls(tuple(acls), zk_version)


@dataclass(frozen=True)
class AclChange:
    """Which resource pattern's ACLs changed. ``resource_type`` is the enum name ("TOPIC")."""

    resource_type: str
    name: str
    pattern_type: str = LITERAL

    def encode(self) -> bytes:
        if _pattern(self.pattern_type) == LITERAL:
            return f"{self.resource_type}:{self.name}".encode("utf-8")
        return dump({"version": 1, "resourceType": self.resource_type, "name": self.name,
                     "patternType": self.pattern_type})

    @classmethod
    def decode(cls, data: bytes | None, pattern_store: str) -> "AclChange":
        """``pattern_store``: LITERAL for /kafka-acl-changes, PREFIXED for the extended one."""
        if _pattern(pattern_store) == LITERAL:
            text = load_text(data, ACL_CHANGES_PATH)
            resource_type, sep, name = text.partition(":")
            if not sep or not resource_type:
                raise SchemaError(f"{ACL_CHANGES_PATH}: expected ResourceType:name, got "
                                  f"{text!r}")
            return cls(resource_type.upper(), name, LITERAL)
        what = EXTENDED_ACL_CHANGES_PATH
        obj = load_object(data, what)
        if int_field(obj, "version", what) > 1:
            raise SchemaError(f"{what}: unsupported ACL change version")
        return cls(str_field(obj, "resourceType", what).upper(), str_field(obj, "name", what),
                   str_field(obj, "patternType", what).upper())
