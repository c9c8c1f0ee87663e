"""ACLs in ZooKeeper (Kafka's KafkaZkClient ACL methods over zk_schema.acls).

``AclZkStore(zk)`` takes any :class:`~kafkalite.zk.ops.ZnodeOps` (a ZkClient) and only uses its
raw operations, so its methods block: call them through ``TwistedZk.run`` from the reactor.
Writes are conditional on the znode's version, as Kafka's are, so two admins adding ACLs to one
resource at once both land (the loser re-reads and retries, in ``AclAuthorizer``).

Every change of a resource's ACLs is followed by a sequential change notification; brokers
watch the two notification znodes and reload just the resources named there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from zk_schema import acls as s_acls
from zk_schema._codec import SchemaError, child_name

from kafkalite.zk.errors import ZkBadVersionError, ZkNodeExistsError, ZkNoNodeError
from kafkalite.zk.ops import ZnodeOps

__all__ = ["AclZkStore", "StoredAcls", "NOT_STORED"]

NOT_STORED = -1     # zk_version of a resource that has no znode


@dataclass(frozen=True)
class StoredAcls:
    entries: tuple[s_acls.AclEntryRecord, ...]
    zk_version: int       # NOT_STORED when the znode does not exist


class AclZkStore:
    def __init__(self, zk: ZnodeOps):
        self.zk = zk

    def create_acl_paths(self) -> None:
        """The persistent ACL znodes (Kafka's createAclPaths)."""
        for path in s_acls.ACL_PATHS:
            self.zk.ensure_path(path)

    # --- reading -------------------------------------------------------------------------------
    def resource_types(self, pattern_type: str) -> list[str]:
        return self.zk.get_children(s_acls.store_path(pattern_type))

    def resource_names(self, pattern_type: str, resource_type: str) -> list[str]:
        return self.zk.get_children(s_acls.resource_type_path(pattern_type, resource_type))

    def get(self, pattern_type: str, resource_type: str, name: str) -> StoredAcls:
        path = s_acls.resource_path(pattern_type, resource_type, name)
        got = self.zk.get_data(path)
        if got is None:
            return StoredAcls((), NOT_STORED)
        data, version = got
        return StoredAcls(s_acls.ResourceAcls.decode(data, version, path).acls, version)

    def load_all(self, on_error: Callable[[str, Exception], None] | None = None
                 ) -> dict[tuple[str, str, str], StoredAcls]:
        """Every stored resource: ``{(pattern_type, resource_type, name): StoredAcls}``.
        A znode that is not an ACL payload is reported to ``on_error`` and skipped."""
        out = {}
        for pattern_type in s_acls.PATTERN_TYPES:
            for resource_type in self.resource_types(pattern_type):
                for name in self.resource_names(pattern_type, resource_type):
                    try:
                        out[(pattern_type, resource_type, name)] = self.get(
                            pattern_type, resource_type, name)
                    except SchemaError as exc:
                        if on_error is not None:
                            on_error(s_acls.resource_path(pattern_type, resource_type, name),
                                     exc)
        return out

    # --- writing -------------------------------------------------------------------------------
    def conditional_set(self, pattern_type: str, resource_type: str, name: str,
                        entries: tuple[s_acls.AclEntryRecord, ...], expected_version: int) -> bool:
        """Write the resource's entries where it is still at ``expected_version``
        (NOT_STORED: create it). No entries: delete it. False when someone else got there
        first (re-read and retry)."""
        path = s_acls.resource_path(pattern_type, resource_type, name)
        data = s_acls.ResourceAcls(tuple(entries)).encode()
        try:
            if not entries:
                if expected_version == NOT_STORED:
                    return not self.zk.exists(path)
                self.zk.delete(path, expected_version)
            elif expected_version == NOT_STORED:
                self.zk.create(path, data, makepath=True)
            else:
                self.zk.set_data(path, data, expected_version)
        except (ZkBadVersionError, ZkNodeExistsError, ZkNoNodeError):
            return False
        return True

    def notify_change(self, resource_type: str, name: str, pattern_type: str) -> str:
        """Announce that a resource's ACLs changed; returns the notification's path."""
        change = s_acls.AclChange(resource_type, name, pattern_type)
        return self.zk.create(s_acls.change_prefix_path(pattern_type), change.encode(),
                              sequence=True, makepath=True)

    # --- change notifications ------------------------------------------------------------------
    def change_children(self, pattern_store: str) -> list[str]:
        return [c for c in self.zk.get_children(s_acls.change_path(pattern_store))
                if c.startswith(s_acls.ACL_CHANGE_PREFIX)]

    def read_change(self, pattern_store: str, child: str) -> tuple[s_acls.AclChange | None, int]:
        """(the change, its creation time in ms); (None, 0) when it is gone already."""
        got = self.zk._get_with_stat(s_acls.change_child_path(pattern_store, child))
        if got is None:
            return None, 0
        data, stat = got
        return s_acls.AclChange.decode(data, pattern_store), int(stat.ctime)

    def purge_changes_before(self, pattern_store: str, children: list[str],
                             now_ms: int | None = None) -> int:
        """Delete notifications older than Kafka's 15 minutes (every broker has seen them);
        returns how many went."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        removed = 0
        for child in children:
            path = s_acls.change_child_path(pattern_store, child)
            got = self.zk._get_with_stat(path)
            if got is None:
                continue
            if now_ms - int(got[1].ctime) > s_acls.ACL_CHANGE_EXPIRATION_MS:
                if self.zk.delete(path):
                    removed += 1
        return removed

    @staticmethod
    def sequence_of(child: str) -> int:
        """``acl_changes_0000000012`` -> 12."""
        return int(child_name(child)[len(s_acls.ACL_CHANGE_PREFIX):])
