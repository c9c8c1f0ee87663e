"""Kafka's ACL model: resource types, pattern types, operations, permissions, principals, ACL
bindings and the filters that select them (org.apache.kafka.common.acl / .resource).

The numeric codes are Kafka's, so they travel unchanged in DescribeAcls, CreateAcls and
DeleteAcls. Names come in three spellings, all Kafka's: the enum name (``TOPIC``, ``READ``,
``ALLOW``: wire strings, ``toString``), the ZooKeeper name (``Topic``, ``Read``, ``Allow``:
znode paths and payloads) and what kafka-acls accepts on its command line (any case,
``IdempotentWrite`` or ``idempotent-write`` or ``IDEMPOTENT_WRITE``).

Pure: no I/O. ``str()`` of a pattern, an entry or a binding is Kafka's ``toString``, which
kafka-acls prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "ResourceType", "PatternType", "AclOperation", "AclPermissionType", "KafkaPrincipal",
    "ResourcePattern", "AccessControlEntry", "AclBinding", "ResourcePatternFilter",
    "AccessControlEntryFilter", "AclBindingFilter", "WILDCARD_RESOURCE", "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL", "CLUSTER_NAME", "ANONYMOUS", "parse_enum",
]

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"     # the one name a Cluster resource has


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class _KafkaEnum(IntEnum):
    @property
    def zk_name(self) -> str:
        """``TRANSACTIONAL_ID`` -> ``TransactionalId`` (SecurityUtils' names, in znodes)."""
        return _camel(self.name)

    @classmethod
    def parse(cls, text: str):
        return parse_enum(cls, text)


def parse_enum(cls, text: str):
    """A member of ``cls`` from any of Kafka's spellings, case-insensitively; ValueError naming
    the accepted values otherwise."""
    key = str(text).strip().replace("-", "").replace("_", "").upper()
    for member in cls:
        if member.name.replace("_", "") == key:
            return member
    choices = ", ".join(m.zk_name for m in cls if m.name not in ("UNKNOWN", "ANY"))
    raise ValueError(f"unknown {cls.__name__} {text!r}; one of {choices}")


class ResourceType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @property
    def is_specific(self) -> bool:
        """LITERAL and PREFIXED name stored patterns; the others only filter them."""
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


ANONYMOUS = "User:ANONYMOUS"


@dataclass(frozen=True)
class KafkaPrincipal:
    """``User:alice``: a principal type and a name (the name may itself hold colons)."""

    principal_type: str
    name: str

    @classmethod
    def parse(cls, text: str) -> "KafkaPrincipal":
        kind, sep, name = str(text).strip().partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"principal {text!r} must look like User:<name>")
        return cls(kind, name)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __post_init__(self):
        if not self.pattern_type.is_specific:
            raise ValueError(f"a stored resource pattern is LITERAL or PREFIXED, not "
                             f"{self.pattern_type.name}")
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(f"a stored resource pattern needs a concrete resource type, not "
                             f"{self.resource_type.name}")

    def __str__(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
                f"patternType={self.pattern_type.name})")


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    principal: str           # "User:alice" (User:* is everyone)
    host: str                # "*" or an address
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission_type.name})")


@dataclass(frozen=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"


@dataclass(frozen=True)
class ResourcePatternFilter:
    """Selects resource patterns. ``name=None`` matches any name. Pattern type ANY matches
    both kinds by exact name; MATCH finds every pattern that would apply to a resource called
    ``name`` (the literal one, the ``*`` wildcard and every prefix of it)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if (self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
                and self.pattern_type != pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:          # MATCH
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return self.name.startswith(pattern.name)

    def indefinite_field(self) -> str | None:
        """Why this filter may match more than one pattern (None when it matches at most one)."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return f"Resource type is {self.resource_type.name}."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type in (PatternType.MATCH, PatternType.UNKNOWN, PatternType.ANY):
            return f"Resource pattern type is {self.pattern_type.name}."
        return None

    def __str__(self) -> str:
        name = "<any>" if self.name is None else self.name
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={name}, "
                f"patternType={self.pattern_type.name})")


@dataclass(frozen=True)
class AccessControlEntryFilter:
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != entry.operation:
            return False
        return (self.permission_type == AclPermissionType.ANY
                or self.permission_type == entry.permission_type)


@dataclass(frozen=True)
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter = ResourcePatternFilter()
    entry_filter: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and \
            self.entry_filter.matches(binding.entry)
