"""What only the brokers know, read with kafkalite's blocking clients (on a console thread).

- Each partition's high watermark (ListOffsets, latest), last stable offset (the same with
  isolation level read_committed: the first offset of the earliest open transaction, or the HW)
  and log end offset (OffsetForLeaderEpoch for the newest epoch: its end is the leader's LEO,
  KIP-101), asked of its leader.
- The coordinator's consumer groups (Kafka 0.9+): members, assignments and committed offsets,
  through the AdminClient.
- What the transaction coordinators wrote to ``__transaction_state`` since the last sample
  (:mod:`kafkalite.console.txn_log_reader`).

ZooKeeper groups are not read here: the console watches their znodes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kafkalite.client.admin import AdminClient
from kafkalite.client.connection import BrokerConnection
from kafkalite.console.transactions import TxnRecord
from kafkalite.console.txn_log_reader import TxnLogReader
from kafkalite.errors import KafkaError
from kafkalite.protocol import messages as m

log = logging.getLogger(__name__)

NEWEST_EPOCH = 2**31 - 1         # "the latest epoch": its end offset is the LEO


@dataclass(frozen=True)
class LeaderTarget:
    topic: str
    partition: int
    leader: int
    host: str
    port: int


@dataclass(frozen=True)
class PartitionOffsets:
    high_watermark: int
    log_end_offset: int
    last_stable_offset: int | None = None     # None: the leader did not answer read_committed


class BrokerReader:
    """Blocking; used from one thread at a time (the console's sampler thread)."""

    def __init__(self, request_timeout_ms: int = 5000):
        self.request_timeout_ms = request_timeout_ms
        self._connections: dict[tuple[int, str, int], BrokerConnection] = {}
        self._admin: AdminClient | None = None
        self._admin_bootstrap: str | None = None
        self._txn_log = TxnLogReader(request_timeout_ms)

    # --- offsets ---------------------------------------------------------------------------------
    def read_offsets(self, targets: list[LeaderTarget]
                     ) -> dict[tuple[str, int], PartitionOffsets]:
        by_leader: dict[tuple[int, str, int], list[LeaderTarget]] = {}
        for target in targets:
            by_leader.setdefault((target.leader, target.host, target.port), []).append(target)
        out: dict[tuple[str, int], PartitionOffsets] = {}
        for key, group in by_leader.items():
            try:
                out.update(self._read_leader(key, group))
            except KafkaError as exc:
                log.debug("offsets from broker %s: %s", key[0], exc)
                self._drop(key)
        return out

    def _read_leader(self, key: tuple[int, str, int], targets: list[LeaderTarget]
                     ) -> dict[tuple[str, int], PartitionOffsets]:
        conn = self._connection(key)
        topics: dict[str, list[int]] = {}
        for t in targets:
            topics.setdefault(t.topic, []).append(t.partition)
        hw_response = conn.request(m.ListOffsetsRequest(topics=[
            m.ListOffsetsTopic(topic, [m.ListOffsetsPartition(p, m.LATEST_TIMESTAMP)
                                       for p in parts]) for topic, parts in topics.items()]))
        lso_response = conn.request(m.ListOffsetsRequest(
            isolation_level=m.READ_COMMITTED, topics=[
                m.ListOffsetsTopic(topic, [m.ListOffsetsPartition(p, m.LATEST_TIMESTAMP)
                                           for p in parts]) for topic, parts in topics.items()]))
        leo_response = conn.request(m.OffsetForLeaderEpochRequest(topics=[
            m.OffsetForLeaderEpochTopic(topic, [m.OffsetForLeaderEpochPartition(p, -1,
                                                                               NEWEST_EPOCH)
                                                for p in parts])
            for topic, parts in topics.items()]))
        hws = {(t.topic, p.partition): p.offset for t in hw_response.topics
               for p in t.partitions if p.error_code == 0}
        leos = {(t.topic, p.partition): p.end_offset for t in leo_response.topics
                for p in t.partitions if p.error_code == 0}
        lsos = {(t.topic, p.partition): p.offset for t in lso_response.topics
                for p in t.partitions if p.error_code == 0}
        # a leader that never stored a record knows no epoch yet (end offset -1): LEO = HW
        return {tp: PartitionOffsets(hw, max(leos.get(tp, hw), hw), lsos.get(tp))
                for tp, hw in hws.items()}

    def _connection(self, key: tuple[int, str, int]) -> BrokerConnection:
        conn = self._connections.get(key)
        if conn is None or conn.dead:
            conn = BrokerConnection(key[1], key[2], client_id="kafkalite-console",
                                    request_timeout_ms=self.request_timeout_ms, node_id=key[0])
            self._connections[key] = conn
        return conn

    def _drop(self, key: tuple[int, str, int]) -> None:
        conn = self._connections.pop(key, None)
        if conn is not None:
            conn.close()

    def broker_addresses(self, bootstrap: str) -> dict[int, tuple[str, int]]:
        """Each live broker's address on the listener ``bootstrap`` reaches (a compose cluster
        registers an internal and an external one: ZooKeeper alone cannot say which works from
        here); {} when the brokers cannot be asked."""
        try:
            return {b.node_id: (b.host, b.port)
                    for b in self._admin_for(bootstrap).describe_cluster().brokers}
        except KafkaError as exc:
            log.debug("describe cluster: %s", exc)
            self._close_admin()
            return {}

    # --- coordinator groups ----------------------------------------------------------------------
    def read_coordinator_groups(self, bootstrap: str) -> list[dict] | None:
        """Every coordinator group as the console's JSON shows it; None when the brokers could
        not be asked (the previous answer stays on the page)."""
        try:
            admin = self._admin_for(bootstrap)
            out = []
            for name in admin.list_consumer_groups(kind="coordinator"):
                out.append(self._describe(admin, str(name)))
            return out
        except KafkaError as exc:
            log.debug("coordinator groups: %s", exc)
            self._close_admin()
            return None

    @staticmethod
    def _describe(admin: AdminClient, group: str) -> dict:
        description = admin.describe_consumer_groups([group], kind="coordinator")[0]
        committed = admin.list_consumer_group_offsets(group, kind="coordinator")
        coordinator = description.coordinator
        return {
            "group": group, "kind": "coordinator", "state": description.state,
            "assignment_strategy": description.assignment_strategy or None,
            "coordinator": getattr(coordinator, "node_id", None),
            "members": [{"id": mem.member_id, "client_id": mem.client_id, "host": mem.host,
                         "partitions": sorted([tp.topic, tp.partition] for tp in mem.assignment)}
                        for mem in sorted(description.members, key=lambda x: x.member_id)],
            "committed": {f"{tp.topic}:{tp.partition}": om.offset
                          for tp, om in committed.items()},
        }

    # --- transactions ----------------------------------------------------------------------------
    def read_transactions(self, bootstrap: str) -> list[TxnRecord] | None:
        """The ``__transaction_state`` records written since the last call; None when the
        brokers could not be asked (the next call goes on)."""
        try:
            return self._txn_log.read(bootstrap, self._admin_for(bootstrap))
        except KafkaError as exc:
            log.debug("transaction log: %s", exc)
            self._close_admin()
            return None

    def _admin_for(self, bootstrap: str) -> AdminClient:
        if self._admin is None or self._admin_bootstrap != bootstrap:
            self._close_admin()
            self._admin = AdminClient(bootstrap, client_id="kafkalite-console",
                                      request_timeout_ms=self.request_timeout_ms)
            self._admin_bootstrap = bootstrap
        return self._admin

    def _close_admin(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            finally:
                self._admin = None

    def close(self) -> None:
        for key in list(self._connections):
            self._drop(key)
        self._txn_log.close()
        self._close_admin()
