"""Typed ZooKeeper operations of Kafka 0.8's ZooKeeper consumer groups: member registrations,
partition owners and committed offsets under ``/consumers/<g>``.

A mixin over :class:`~kafkalite.zk.ops.ZnodeOps`: it only uses the raw operations, never kazoo.
"""

from __future__ import annotations

import contextlib
from typing import Mapping

import zk_schema
from zk_schema import consumers as s_consumers
from zk_schema.consumers import ConsumerRegistration

from kafkalite.errors import NonEmptyGroupError
from kafkalite.zk.errors import ZkBadVersionError, ZkNodeExistsError, ZkNotEmptyError
from kafkalite.zk.ops import TopicPartition, ZnodeOps


class ConsumerZkOps(ZnodeOps):
    """``/consumers/<g>/{ids,owners,offsets}``."""

    def list_consumer_groups(self) -> list[str]:
        return self.get_children(s_consumers.CONSUMERS_PATH)

    def consumer_group_exists(self, group: str) -> bool:
        return self.exists(s_consumers.group_path(group))

    def register_consumer(self, group: str, member_id: str,
                          registration: ConsumerRegistration) -> None:
        """Create the member's ephemeral ``/consumers/<g>/ids/<member>``."""
        self._create_ephemeral_checked(s_consumers.member_path(group, member_id),
                                       registration.encode())

    def update_consumer_registration(self, group: str, member_id: str,
                                     registration: ConsumerRegistration) -> None:
        """Rewrite a live member's registration (its subscription or recorded assignment)."""
        self.set_data(s_consumers.member_path(group, member_id), registration.encode())

    def unregister_consumer(self, group: str, member_id: str) -> bool:
        return self.delete(s_consumers.member_path(group, member_id))

    def get_consumer_members(self, group: str) -> list[str]:
        return self.get_children(s_consumers.group_ids_path(group))

    def get_consumer_registration(self, group: str, member_id: str
                                  ) -> ConsumerRegistration | None:
        path = s_consumers.member_path(group, member_id)
        got = self.get_data(path)
        return ConsumerRegistration.decode(got[0], got[1], path=path) if got else None

    def get_consumer_registrations(self, group: str) -> dict[str, ConsumerRegistration]:
        members = self.get_consumer_members(group)
        paths = [s_consumers.member_path(group, m) for m in members]
        out = {}
        for m, path, got in zip(members, paths, self._get_many(paths)):
            if got is not None:
                out[m] = ConsumerRegistration.decode(got[0], got[1].version, path=path)
        return out

    def claim_partition_owner(self, group: str, topic: str, partition: int, owner_id: str) -> bool:
        """Create the ephemeral owner znode. True when we own it (now or already), False when
        another consumer still does (release pending: back off and retry)."""
        path = s_consumers.owner_path(group, topic, partition)
        data = s_consumers.PartitionOwner(owner_id).encode()
        try:
            self.create(path, data, ephemeral=True, makepath=True)
            return True
        except ZkNodeExistsError:
            got = self.get_data(path)
            return got is not None and got[0] == data

    def release_partition_owner(self, group: str, topic: str, partition: int,
                                owner_id: str | None = None) -> bool:
        """Delete the owner znode (only if ``owner_id`` holds it, when given)."""
        path = s_consumers.owner_path(group, topic, partition)
        if owner_id is None:
            return self.delete(path)
        got = self.get_data(path)
        if got is None or s_consumers.PartitionOwner.decode(got[0]).owner != owner_id:
            return False
        try:
            return self.delete(path, version=got[1])
        except ZkBadVersionError:
            return False

    def get_partition_owner(self, group: str, topic: str, partition: int) -> str | None:
        got = self.get_data(s_consumers.owner_path(group, topic, partition))
        return s_consumers.PartitionOwner.decode(got[0]).owner if got else None

    def get_partition_owners(self, group: str) -> dict[TopicPartition, str]:
        out = {}
        for topic in self.get_children(s_consumers.group_owners_path(group)):
            parts = self.get_children(s_consumers.topic_owners_path(group, topic))
            tps = [(topic, int(p)) for p in parts if p.isdigit()]
            paths = [s_consumers.owner_path(group, t, p) for t, p in tps]
            for tp, got in zip(tps, self._get_many(paths)):
                if got is not None:
                    out[tp] = s_consumers.PartitionOwner.decode(got[0]).owner
        return out

    def get_consumer_offset(self, group: str, topic: str, partition: int) -> int | None:
        got = self.get_data(s_consumers.offset_path(group, topic, partition))
        return s_consumers.ConsumerOffset.decode(got[0]).offset if got else None

    def get_consumer_offsets(self, group: str, topic: str | None = None
                             ) -> dict[TopicPartition, int]:
        topics = [topic] if topic is not None else self.get_children(
            s_consumers.group_offsets_path(group))
        out = {}
        for t in topics:
            parts = self.get_children(s_consumers.topic_offsets_path(group, t))
            tps = [(t, int(p)) for p in parts if p.isdigit()]
            paths = [s_consumers.offset_path(group, tt, p) for tt, p in tps]
            for tp, got in zip(tps, self._get_many(paths)):
                if got is not None:
                    with contextlib.suppress(zk_schema.SchemaError):
                        out[tp] = s_consumers.ConsumerOffset.decode(got[0]).offset
        return out

    def set_consumer_offset(self, group: str, topic: str, partition: int, offset: int) -> None:
        self._create_or_set(s_consumers.offset_path(group, topic, partition),
                            s_consumers.ConsumerOffset(offset).encode())

    def set_consumer_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        for (topic, partition), offset in offsets.items():
            self.set_consumer_offset(group, topic, partition, offset)

    def delete_consumer_group(self, group: str) -> bool:
        """Remove a group's znodes; NonEmptyGroupError while it has live members."""
        if self.get_consumer_members(group):
            raise NonEmptyGroupError(f"group {group!r} still has members")
        try:
            return self.delete(s_consumers.group_path(group), recursive=True)
        except ZkNotEmptyError:
            raise NonEmptyGroupError(f"group {group!r} gained members while deleting") from None
