"""``authorizer.class.name=kafka.security.authorizer.AclAuthorizer``: the ACLs in ZooKeeper, kept
in a cache on the reactor and kept current from ZooKeeper's change notifications, and the
authorizer's answers from that cache (decisions: ``security.authorizer``).

Start-up follows Kafka: create the ACL paths, watch both change-notification znodes, then load
every ACL. Each notification names one resource pattern; the broker re-reads just that pattern,
so a removed ACL stops being honoured on every broker as soon as its watch fires. Notifications
older than 15 minutes are deleted (every broker has seen them by then).

CreateAcls and DeleteAcls (and ``kafkalite acls``) change a pattern's znode with a conditional
write, retried when another writer got there first, then announce the change.
All blocking ZooKeeper work runs on the TwistedZk pool; the cache changes only on the reactor.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable

from twisted.internet import defer

from zk_schema import acls as s_acls

from kafkalite import errors
from kafkalite.security.acl import (
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
    PatternType, ResourcePattern, ResourceType,
)
from kafkalite.security.authorizer import (
    AclSnapshot, AuthorizerSettings, authorize, authorize_by_resource_type,
)
from kafkalite.zk.acls import AclZkStore

log = logging.getLogger(__name__)

__all__ = ["AclAuthorizer", "entry_to_record", "record_to_entry", "pattern_of", "entries_of",
           "update_pattern", "MAX_UPDATE_RETRIES"]

MAX_UPDATE_RETRIES = 10        # Kafka's maxUpdateRetries


def entry_to_record(entry: AccessControlEntry) -> s_acls.AclEntryRecord:
    return s_acls.AclEntryRecord(entry.principal, entry.permission_type.zk_name,
                                 entry.operation.zk_name, entry.host)


def record_to_entry(record: s_acls.AclEntryRecord) -> AccessControlEntry:
    """ValueError for a record with an unknown operation or permission."""
    return AccessControlEntry(record.principal, record.host,
                              AclOperation.parse(record.operation),
                              AclPermissionType.parse(record.permission_type))


def pattern_of(pattern_type: str, resource_type: str, name: str) -> ResourcePattern:
    return ResourcePattern(ResourceType.parse(resource_type), name, PatternType[pattern_type])


def entries_of(records, where: str) -> frozenset[AccessControlEntry]:
    out = set()
    for record in records:
        try:
            out.add(record_to_entry(record))
        except ValueError as exc:
            log.warning("ignoring an ACL of %s: %s", where, exc)
    return frozenset(out)


def update_pattern(store: AclZkStore, pattern: ResourcePattern,
                   change: Callable[[frozenset], frozenset]) -> frozenset[AccessControlEntry]:
    """Read-modify-write one pattern's ACLs with a conditional write, retried on a race;
    announce the change. Blocking. Returns the pattern's entries as written."""
    kind, rtype = pattern.pattern_type.name, pattern.resource_type.zk_name
    for _ in range(MAX_UPDATE_RETRIES + 1):
        stored = store.get(kind, rtype, pattern.name)
        current = entries_of(stored.entries, str(pattern))
        wanted = frozenset(change(current))
        if wanted == current:
            return current
        records = tuple(entry_to_record(e) for e in sorted(wanted))
        if store.conditional_set(kind, rtype, pattern.name, records, stored.zk_version):
            store.notify_change(pattern.resource_type.name, pattern.name, kind)
            return wanted
    raise errors.ZooKeeperError(f"could not update the ACLs of {pattern} after "
                                f"{MAX_UPDATE_RETRIES} attempts: others keep changing them")


class AclAuthorizer:
    """The broker's authorizer. ``deferred_zk`` is the broker's TwistedZk; ``store`` its AclZkStore."""

    def __init__(self, settings: AuthorizerSettings, deferred_zk, store: AclZkStore, now_ms=None):
        self.settings = settings
        self.deferred_zk = deferred_zk
        self.store = store
        self.snapshot = AclSnapshot()
        self._now_ms = now_ms
        self._watches = []
        self._last_seen = {kind: -1 for kind in s_acls.PATTERN_TYPES}
        self._busy: dict[str, bool] = {kind: False for kind in s_acls.PATTERN_TYPES}
        self._again: dict[str, list | None] = {kind: None for kind in s_acls.PATTERN_TYPES}
        self.ready = False

    # --- decisions ------------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str, log_denied: bool = True) -> bool:
        allowed = authorize(self.snapshot, self.settings, principal, host, operation,
                            resource_type, name)
        if not allowed and log_denied:
            log.info("Principal = %s is Denied Operation = %s from host = %s on resource = "
                     "%s:LITERAL:%s", principal, operation.zk_name, host,
                     resource_type.zk_name, name)
        return allowed

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        return authorize_by_resource_type(self.snapshot, self.settings, principal, host,
                                          operation, resource_type)

    def acls(self, binding_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        return list(self.snapshot.bindings(binding_filter))

    # --- start and stop -------------------------------------------------------------------------
    @defer.inlineCallbacks
    def start(self, zk):
        """Create the paths, watch for changes, load everything (Kafka's order)."""
        yield self.deferred_zk.run(self.store.create_acl_paths)
        for kind in s_acls.PATTERN_TYPES:
            self._watches.append(zk.watch_children(
                s_acls.change_path(kind), lambda children, kind=kind: self._changed(kind,
                                                                                   children)))
        loaded = yield self.deferred_zk.run(self.store.load_all,
                                    lambda path, exc: log.warning("ignoring %s: %s", path, exc))
        acls = {}
        for (kind, rtype, name), stored in loaded.items():
            try:
                pattern = pattern_of(kind, rtype, name)
            except (ValueError, KeyError):
                log.warning("ignoring ACLs of unknown resource type %s", rtype)
                continue
            acls[pattern] = entries_of(stored.entries, str(pattern))
        self.snapshot = AclSnapshot(acls)
        self.ready = True
        log.info("ACL authorizer ready: %d ACL(s) on %d resource pattern(s); super.users=%s, "
                 "allow.everyone.if.no.acl.found=%s", len(self.snapshot),
                 len(self.snapshot.patterns()), ";".join(sorted(self.settings.super_users)),
                 str(self.settings.allow_everyone_if_no_acl_found).lower())

    def stop(self) -> None:
        for watch in self._watches:
            watch.cancel()
        self._watches = []

    # --- change notifications -------------------------------------------------------------------
    def _changed(self, kind: str, children) -> None:
        """A watch fired (on the reactor): process new notifications one pass at a time."""
        if self._busy[kind]:
            self._again[kind] = list(children or [])
            return
        self._busy[kind] = True
        d = self.deferred_zk.run(self._read_new_changes, kind, list(children or []))
        d.addCallback(self._apply_changes, kind)
        d.addErrback(lambda f: log.warning("processing ACL change notifications failed: %s",
                                           f.getErrorMessage()))
        d.addBoth(lambda _: self._pass_done(kind))

    def _pass_done(self, kind: str) -> None:
        self._busy[kind] = False
        again, self._again[kind] = self._again[kind], None
        if again is not None:
            self._changed(kind, again)

    def _read_new_changes(self, kind: str, children: list[str]):
        """Blocking: the resources named by notifications newer than the last seen, re-read."""
        fresh = sorted((c for c in children if c.startswith(s_acls.ACL_CHANGE_PREFIX)),
                       key=self.store.sequence_of)
        fresh = [c for c in fresh if self.store.sequence_of(c) > self._last_seen[kind]]
        reloaded = {}
        for child in fresh:
            try:
                change, _ctime = self.store.read_change(kind, child)
            except Exception as exc:  # noqa: BLE001 - a bad notification is skipped
                log.warning("ignoring ACL change notification %s: %s", child, exc)
                continue
            if change is None:
                continue
            try:
                pattern = ResourcePattern(ResourceType.parse(change.resource_type), change.name,
                                          PatternType[change.pattern_type])
            except (ValueError, KeyError) as exc:
                log.warning("ignoring ACL change notification %s: %s", child, exc)
                continue
            stored = self.store.get(pattern.pattern_type.name, pattern.resource_type.zk_name,
                                    pattern.name)
            reloaded[pattern] = entries_of(stored.entries, str(pattern))
        self.store.purge_changes_before(kind, children,
                                        self._now_ms() if self._now_ms else None)
        last = self.store.sequence_of(fresh[-1]) if fresh else self._last_seen[kind]
        return last, reloaded

    def _apply_changes(self, result, kind: str) -> None:
        last, reloaded = result
        self._last_seen[kind] = max(self._last_seen[kind], last)
        snapshot = self.snapshot
        for pattern, entries in reloaded.items():
            snapshot = snapshot.updated(pattern, entries)
            log.info("ACLs of %s reloaded: %d entr%s", pattern, len(entries),
                     "y" if len(entries) == 1 else "ies")
        self.snapshot = snapshot

    # --- changes from this broker (CreateAcls, DeleteAcls) ------------------------------------
    def create_acls(self, bindings: Iterable[AclBinding]) -> defer.Deferred:
        """Add the bindings; fires with one exception-or-None per binding, in order."""
        bindings = list(bindings)
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for index, binding in enumerate(bindings):
            by_pattern.setdefault(binding.pattern, []).append(index)
        results: list = [None] * len(bindings)

        def one(pattern, indexes):
            new = {bindings[i].entry for i in indexes}
            d = self.deferred_zk.run(update_pattern, self.store, pattern, lambda cur: cur | new)

            def written(entries):
                self.snapshot = self.snapshot.updated(pattern, entries)

            def failed(failure):
                for i in indexes:
                    results[i] = failure.value
            return d.addCallbacks(written, failed)
        d = defer.gatherResults([one(p, ix) for p, ix in by_pattern.items()])
        return d.addCallback(lambda _: results)

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> defer.Deferred:
        """Remove what each filter matches; fires with ``[(deleted bindings, error or None)]``
        per filter. Filters are matched against the cache (Kafka's behaviour for indefinite
        filters) plus the exact pattern a definite filter names."""
        filters = list(filters)
        patterns = set(self.snapshot.patterns())
        for f in filters:
            pf = f.pattern_filter
            if pf.indefinite_field() is None:
                patterns.add(ResourcePattern(pf.resource_type, pf.name, pf.pattern_type))
        deleted: list[list[AclBinding]] = [[] for _ in filters]
        errors_: list = [None] * len(filters)

        def one(pattern):
            matching = [i for i, f in enumerate(filters) if f.pattern_filter.matches(pattern)]
            if not matching:
                return defer.succeed(None)
            removed: dict[AccessControlEntry, int] = {}

            def change(current):
                removed.clear()
                for entry in current:
                    for i in matching:
                        if filters[i].entry_filter.matches(entry):
                            removed.setdefault(entry, i)
                return current - set(removed)
            d = self.deferred_zk.run(update_pattern, self.store, pattern, change)

            def written(entries):
                self.snapshot = self.snapshot.updated(pattern, entries)
                for entry, i in removed.items():
                    deleted[i].append(AclBinding(pattern, entry))

            def failed(failure):
                for i in matching:
                    errors_[i] = failure.value
            return d.addCallbacks(written, failed)
        d = defer.gatherResults([one(p) for p in sorted(patterns)])
        return d.addCallback(lambda _: list(zip(deleted, errors_)))
