"""Where ``kafkalite acls`` reads and writes ACLs: through the brokers (``AdminBackend``: the
AdminClient's DescribeAcls, CreateAcls, DeleteAcls) or straight in ZooKeeper
(``ZooKeeperBackend``: ``zk.acls`` with the same conditional writes and change notifications the
brokers' authorizer uses). Both take and give ``kafkalite.security.acl`` objects.
"""

from __future__ import annotations

from kafkalite.cli.options import CliError
from kafkalite.security.acl import AclBinding, AclBindingFilter, ResourcePattern

__all__ = ["AdminBackend", "ZooKeeperBackend"]


def _dedup(bindings) -> list[AclBinding]:
    return sorted(set(bindings))


class AdminBackend:
    def __init__(self, admin):
        self.admin = admin

    def describe(self, pattern_filters) -> list[AclBinding]:
        found = []
        for pf in pattern_filters:
            found += self.admin.describe_acls(AclBindingFilter(pf))
        return _dedup(found)

    def add(self, bindings: list[AclBinding]) -> None:
        for binding, error in zip(bindings, self.admin.create_acls(bindings)):
            if error is not None:
                raise CliError(f"Error while adding ACLs: {binding}: {error}")

    def remove(self, filters: list[AclBindingFilter]) -> None:
        for binding_filter, (_deleted, error) in zip(filters,
                                                     self.admin.delete_acls(filters)):
            if error is not None:
                raise CliError(f"Error while removing ACLs: {binding_filter}: {error}")


class ZooKeeperBackend:
    """ACLs in ZooKeeper, written as the brokers write them (a context manager)."""

    def __init__(self, connect: str, digest: str | None = None):
        from kafkalite.errors import ZooKeeperError
        from kafkalite.zk.acls import AclZkStore
        from kafkalite.zk.znode_acls import secure_zk_client

        self.zk = secure_zk_client(connect, session_timeout_ms=10000, connection_timeout_s=10,
                                   digest=digest)
        try:
            self.zk.start()
        except ZooKeeperError as exc:
            raise CliError(f"cannot reach ZooKeeper at {connect}: {exc}") from None
        self.store = AclZkStore(self.zk)
        self.store.create_acl_paths()

    def __enter__(self) -> "ZooKeeperBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.zk.stop()

    def _all(self) -> dict[ResourcePattern, frozenset]:
        from kafkalite.security.acl_authorizer import entries_of, pattern_of

        out = {}
        for (kind, rtype, name), stored in self.store.load_all().items():
            try:
                pattern = pattern_of(kind, rtype, name)
            except (KeyError, ValueError):
                continue
            out[pattern] = entries_of(stored.entries, str(pattern))
        return out

    def describe(self, pattern_filters) -> list[AclBinding]:
        return _dedup(AclBinding(p, e) for p, entries in self._all().items() for e in entries
                      if any(pf.matches(p) for pf in pattern_filters))

    def add(self, bindings: list[AclBinding]) -> None:
        from kafkalite.security.acl_authorizer import update_pattern

        grouped: dict[ResourcePattern, set] = {}
        for b in bindings:
            grouped.setdefault(b.pattern, set()).add(b.entry)
        for pattern, new in grouped.items():
            update_pattern(self.store, pattern, lambda current, new=new: current | new)

    def remove(self, filters: list[AclBindingFilter]) -> None:
        from kafkalite.security.acl_authorizer import update_pattern

        patterns = set(self._all())
        for f in filters:
            pf = f.pattern_filter
            if pf.indefinite_field() is None:
                patterns.add(ResourcePattern(pf.resource_type, pf.name, pf.pattern_type))
        for pattern in sorted(patterns):
            matching = [f for f in filters if f.pattern_filter.matches(pattern)]
            if matching:
                update_pattern(self.store, pattern, lambda current, matching=matching: frozenset(
                    e for e in current if not any(f.entry_filter.matches(e) for f in matching)))
