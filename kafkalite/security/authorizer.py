"""The authorizer's decisions, as Kafka 2.x's AclAuthorizer makes them (pure: no I/O).

``authorize(snapshot, settings, principal, host, operation, resource_type, name)``:

1. A principal in ``super.users`` may do anything.
2. The ACLs that apply to a resource are those of the literal pattern with its name, of the
   literal ``*`` pattern of its type, and of every prefixed pattern its name starts with.
3. None apply: the answer is ``allow.everyone.if.no.acl.found``.
4. A matching Deny wins: an entry for the principal (or ``User:*``), the host (or ``*``) and the
   operation (or ``All``) denies.
5. Otherwise a matching Allow is needed. Allowing Read, Write, Delete or Alter implies Describe;
   allowing AlterConfigs implies DescribeConfigs (Kafka's implied operations).

``authorize_by_resource_type`` answers "may this principal do ``operation`` on some resource of
this type?" (Kafka's authorizeByResourceType, which InitProducerId uses to let a producer with
Write on any topic be idempotent).

``AclSnapshot`` is an immutable view of every ACL, indexed for these lookups; the authorizer
service swaps in a new one when ZooKeeper announces a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

from kafkalite.security.acl import (
    WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AccessControlEntry, AclBinding,
    AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourcePattern,
    ResourceType,
)

__all__ = ["AuthorizerSettings", "AclSnapshot", "authorize", "authorize_by_resource_type",
           "IMPLIED_BY", "parse_super_users"]

#: operation asked -> the allowed operations that grant it (Kafka's implied operations)
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.DESCRIBE, AclOperation.READ,
                                      AclOperation.WRITE, AclOperation.DELETE,
                                      AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS,
                                              AclOperation.ALTER_CONFIGS}),
}


def parse_super_users(text: str | None) -> frozenset[str]:
    """``super.users``: principals separated by semicolons (``User:admin;User:broker``)."""
    return frozenset(item.strip() for item in (text or "").split(";") if item.strip())


@dataclass(frozen=True)
class AuthorizerSettings:
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


class AclSnapshot:
    """Every ACL by resource pattern (immutable; ``updated`` makes a new snapshot)."""

    __slots__ = ("_acls", "_literal", "_prefixed")

    def __init__(self, acls: Mapping[ResourcePattern, Iterable[AccessControlEntry]] = ()):
        items = acls.items() if isinstance(acls, Mapping) else acls
        self._acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {
            pattern: frozenset(entries) for pattern, entries in items if entries}
        self._literal: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        self._prefixed: dict[ResourceType, dict[str, frozenset[AccessControlEntry]]] = {}
        for pattern, entries in self._acls.items():
            if pattern.pattern_type == PatternType.LITERAL:
                self._literal[(pattern.resource_type, pattern.name)] = entries
            else:
                self._prefixed.setdefault(pattern.resource_type, {})[pattern.name] = entries

    def updated(self, pattern: ResourcePattern,
                entries: Iterable[AccessControlEntry]) -> "AclSnapshot":
        """A snapshot where ``pattern`` has exactly ``entries`` (none: the pattern is gone)."""
        acls = dict(self._acls)
        entries = frozenset(entries)
        if entries:
            acls[pattern] = entries
        else:
            acls.pop(pattern, None)
        return AclSnapshot(acls)

    def entries(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        return self._acls.get(pattern, frozenset())

    def patterns(self) -> list[ResourcePattern]:
        return sorted(self._acls)

    def bindings(self, binding_filter: AclBindingFilter | None = None) -> Iterator[AclBinding]:
        """Every binding, or those ``binding_filter`` matches, in pattern order."""
        for pattern in sorted(self._acls):
            if binding_filter is not None and \
                    not binding_filter.pattern_filter.matches(pattern):
                continue
            for entry in sorted(self._acls[pattern]):
                if binding_filter is None or binding_filter.entry_filter.matches(entry):
                    yield AclBinding(pattern, entry)

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._acls.values())

    def matching(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        """The entries of every pattern that applies to the resource ``name``."""
        found: list[AccessControlEntry] = []
        found.extend(self._literal.get((resource_type, WILDCARD_RESOURCE), ()))
        if name != WILDCARD_RESOURCE:
            found.extend(self._literal.get((resource_type, name), ()))
        prefixed = self._prefixed.get(resource_type)
        if prefixed:
            for length in range(len(name) + 1):
                found.extend(prefixed.get(name[:length], ()))
        return found

    def of_type(self, resource_type: ResourceType):
        """(pattern, entries) of every pattern of one resource type."""
        return [(p, e) for p, e in self._acls.items() if p.resource_type == resource_type]


def _entry_matches(entry: AccessControlEntry, principal: str, host: str,
                   operations: frozenset[AclOperation] | tuple,
                   permission: AclPermissionType) -> bool:
    return (entry.permission_type == permission
            and (entry.principal == principal or entry.principal == WILDCARD_PRINCIPAL)
            and (entry.operation in operations or entry.operation == AclOperation.ALL)
            and (entry.host == WILDCARD_HOST or entry.host == host))


def authorize(snapshot: AclSnapshot, settings: AuthorizerSettings, principal: str, host: str,
              operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
    """May ``principal`` connected from ``host`` do ``operation`` on the resource?"""
    if principal in settings.super_users:
        return True
    acls = snapshot.matching(resource_type, name)
    if not acls:
        return settings.allow_everyone_if_no_acl_found
    asked = (operation,)
    if any(_entry_matches(e, principal, host, asked, AclPermissionType.DENY) for e in acls):
        return False
    granting = IMPLIED_BY.get(operation, asked)
    return any(_entry_matches(e, principal, host, granting, AclPermissionType.ALLOW)
               for e in acls)


def authorize_by_resource_type(snapshot: AclSnapshot, settings: AuthorizerSettings,
                               principal: str, host: str, operation: AclOperation,
                               resource_type: ResourceType) -> bool:
    """May ``principal`` do ``operation`` on at least one resource of ``resource_type``?
    An Allow counts unless a Deny covers it: a literal Deny of the same name, a prefixed Deny
    of a prefix of it, or a literal Deny of ``*`` (which denies every resource of the type)."""
    if principal in settings.super_users:
        return True
    asked = (operation,)
    names = {(AclPermissionType.DENY, PatternType.LITERAL): set(),
             (AclPermissionType.DENY, PatternType.PREFIXED): set(),
             (AclPermissionType.ALLOW, PatternType.LITERAL): set(),
             (AclPermissionType.ALLOW, PatternType.PREFIXED): set()}
    for pattern, entries in snapshot.of_type(resource_type):
        for permission in (AclPermissionType.DENY, AclPermissionType.ALLOW):
            if any(_entry_matches(e, principal, host, asked, permission) for e in entries):
                names[(permission, pattern.pattern_type)].add(pattern.name)
    deny_literals = names[(AclPermissionType.DENY, PatternType.LITERAL)]
    deny_prefixes = names[(AclPermissionType.DENY, PatternType.PREFIXED)]
    if WILDCARD_RESOURCE in deny_literals:
        return False
    if settings.allow_everyone_if_no_acl_found:
        return True

    def dominated(name: str) -> bool:
        return any(name[:length] in deny_prefixes for length in range(len(name) + 1))

    if any(not dominated(prefix) for prefix in names[(AclPermissionType.ALLOW,
                                                      PatternType.PREFIXED)]):
        return True
    return any(literal == WILDCARD_RESOURCE or (literal not in deny_literals
                                                and not dominated(literal))
               for literal in names[(AclPermissionType.ALLOW, PatternType.LITERAL)])
