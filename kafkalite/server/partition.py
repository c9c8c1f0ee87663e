"""One topic-partition on this broker: its log, its role, its ISR and its high watermark.

The leader tracks each follower's log end offset (learned from the follower's fetch offset) and the
last time the follower was caught up. From those come the high watermark (the minimum LEO over the
ISR: a record is committed once every in-sync replica has it), ISR expansion (a follower rejoins
when it reaches the HW) and ISR shrinking (a follower that has not caught up for
``replica.lag.time.max.ms`` leaves). Consumers read only below the high watermark; read_committed
ones only below the last stable offset (LSO), which transactions hold back (``producer_state``).

Every append, as leader or follower, goes through the producer state first (sequences, epochs,
transactions); a transaction marker that aborts a transaction puts an entry in the log's
``.txnindex`` (Kafka's ``Log.append``), which read_committed fetches answer from.

The decisions (``compute_high_watermark``, ``lagging_replicas``, ``can_rejoin_isr``) are pure
functions so they can be tested table-style; this class only holds state and applies them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kafkalite.errors import (FencedLeaderEpochError, NotEnoughReplicasAfterAppendError,
                              NotEnoughReplicasError, NotLeaderForPartitionError,
                              UnknownLeaderEpochError)
from kafkalite.record.header import iter_headers
from kafkalite.server import producer_txns
from kafkalite.server.producer_state import CLIENT, REPLICATION, ProducerStateTable

log = logging.getLogger(__name__)


# --- pure ISR rules ---------------------------------------------------------------------------

def compute_high_watermark(leader_leo: int, isr, follower_leos: dict[int, int],
                           leader_id: int) -> int:
    """HW = the smallest log end offset over the in-sync replicas. ``follower_leos`` holds every
    assigned follower; an ISR member that is no assigned replica (a controller's state may name
    one) is not counted, as Kafka counts only its remote replicas (Partition.remoteReplicasMap)."""
    hw = leader_leo
    for broker in isr:
        if broker != leader_id and broker in follower_leos:
            hw = min(hw, follower_leos[broker])
    return hw


def lagging_replicas(isr, leader_id: int, last_caught_up_ms: dict[int, int], now_ms: int,
                     max_lag_ms: int) -> set[int]:
    """Followers in the ISR that have not caught up to the leader's LEO for max_lag_ms."""
    return {b for b in isr if b != leader_id
            and now_ms - last_caught_up_ms.get(b, now_ms) > max_lag_ms}


def can_rejoin_isr(follower_leo: int, high_watermark: int, leader_epoch_start: int) -> bool:
    """An out-of-sync follower rejoins once it has everything up to the HW of this epoch."""
    return follower_leo >= high_watermark and follower_leo >= leader_epoch_start


@dataclass(frozen=True)
class DuplicateAppend:
    """A retried batch that is already in the log: answered with where it was stored and, as
    Kafka's log append time, the stored batch's max timestamp."""
    first_offset: int
    last_offset: int
    log_append_time: int = -1


@dataclass
class FollowerState:
    log_end_offset: int = 0
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    log_start_offset: int = -1     # as the follower's last fetch said; -1 until it fetched


@dataclass
class PartitionState:
    """The controller's view of a partition, as sent in LeaderAndIsr."""
    leader: int
    leader_epoch: int
    isr: list[int]
    replicas: list[int]
    zk_version: int = 0
    controller_epoch: int = 0


class Partition:
    def __init__(self, topic: str, partition: int, broker_id: int, log, clock_ms,
                 replica_lag_time_max_ms: int = 30000):
        self.topic = topic
        self.partition = partition
        self.broker_id = broker_id
        self.producer_states = ProducerStateTable(f"{topic}-{partition}")
        self.log = log
        self._clock_ms = clock_ms
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.leader_id = -1
        self.leader_epoch = -1
        self.controller_epoch = -1
        self.zk_version = 0
        self.isr: list[int] = []
        self.replicas: list[int] = []
        self.high_watermark = 0
        self.leader_epoch_start_offset = 0
        self.followers: dict[int, FollowerState] = {}
        # (epoch, start offset) pairs, as Kafka's leader-epoch-checkpoint, newest last
        self.epoch_starts: list[tuple[int, int]] = []

    @property
    def log(self):
        return self._log

    @log.setter
    def log(self, log_) -> None:
        """The partition's log (a move between data dirs swaps it), which takes a snapshot of
        the producer state when it rolls a segment or closes (Kafka's takeSnapshot), and
        deletes old segments only below the high watermark (Kafka's deletableSegments)."""
        self._log = log_
        log_.producer_state_source = lambda: producer_txns.snapshot_entries(
            self.producer_states)
        log_.high_watermark_source = lambda: self.high_watermark

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def last_stable_offset(self) -> int:
        """min(first unstable offset, HW): read_committed consumers read below it (Kafka's
        Log.lastStableOffset)."""
        hw = self.high_watermark
        first = self.producer_states.first_unstable_offset(hw)
        if first is None:
            return hw
        first = max(first, self.log.log_start_offset)
        return first if first < hw else hw

    # --- role changes (from the controller's LeaderAndIsr) ------------------------------------
    def make_leader(self, state: PartitionState, high_watermark_checkpoint: int | None = None
                    ) -> bool:
        """Become leader; returns True when this is a change of leadership for this broker."""
        was_leader = self.is_leader
        now = self._clock_ms()
        self._apply(state)
        if state.leader_epoch > (self.epoch_starts[-1][0] if self.epoch_starts else -1):
            self.epoch_starts.append((state.leader_epoch, self.log_end_offset))
        self.leader_epoch_start_offset = self.log_end_offset
        self.followers = {b: FollowerState(0, now if b in state.isr else 0, 0)
                          for b in state.replicas if b != self.broker_id}
        if high_watermark_checkpoint is not None:
            self.high_watermark = min(max(self.high_watermark, high_watermark_checkpoint),
                                      self.log_end_offset)
        self.maybe_advance_high_watermark()
        return not was_leader

    def make_follower(self, state: PartitionState) -> bool:
        """Become a follower of ``state.leader``; True when the leader changed."""
        changed = self.leader_id != state.leader or self.leader_epoch != state.leader_epoch
        self._apply(state)
        self.followers = {}
        # a follower learns where epochs start from the leader's batches as it appends them,
        # never from its own log end: that is what lets it find where it diverged
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        return changed

    def _apply(self, state: PartitionState) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.isr = list(state.isr)
        self.replicas = list(state.replicas)
        self.zk_version = state.zk_version
        self.controller_epoch = state.controller_epoch

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Reject requests that name a different leader epoch than ours (KIP-320)."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(
                f"{self.topic}-{self.partition}: request epoch {current_leader_epoch} < "
                f"leader epoch {self.leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise UnknownLeaderEpochError(
                f"{self.topic}-{self.partition}: request epoch {current_leader_epoch} > "
                f"leader epoch {self.leader_epoch}")

    def require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderForPartitionError(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition} "
                f"(leader is {self.leader_id})")

    # --- leader side --------------------------------------------------------------------------
    def append_as_leader(self, records: bytes, required_acks: int, min_insync_replicas: int,
                         origin: str = CLIENT):
        """Append as leader. ``origin``: "client" (Produce: full sequence checks, control
        batches refused), "coordinator" (the group coordinator's offsets and WriteTxnMarkers'
        markers: epoch checks only)."""
        self.require_leader()
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.partition}: ISR {self.isr} has {len(self.isr)} member(s), "
                f"min.insync.replicas is {min_insync_replicas}")
        if producer_txns.plain_batch(records):
            info = self.log.append(records, assign_offsets=True, leader_epoch=self.leader_epoch)
            self.maybe_advance_high_watermark()
            return info
        batches = producer_txns.batch_infos(records, self.log_end_offset, origin, self.tp)
        analysis = producer_txns.analyze(self.producer_states, batches, origin)
        if analysis.duplicate is not None:
            cached = analysis.duplicate
            # Kafka's Log.append answers a duplicate with logAppendTime = the cached batch's
            # (max) timestamp, whatever the topic's timestamp type
            return DuplicateAppend(cached.first_offset, cached.last_offset, cached.timestamp)
        info = self.log.append(records, assign_offsets=True, leader_epoch=self.leader_epoch)
        producer_txns.apply(self, analysis)
        self.maybe_advance_high_watermark()
        return info

    def update_follower_fetch(self, replica_id: int, fetch_offset: int,
                              log_start_offset: int = -1) -> bool:
        """Record a follower's fetch position (and its log start offset, which DeleteRecords
        waits on). Returns True if the ISR should expand."""
        follower = self.followers.get(replica_id)
        if follower is None:
            return False
        now = self._clock_ms()
        follower.log_end_offset = fetch_offset
        if log_start_offset >= 0:
            follower.log_start_offset = log_start_offset
        follower.last_fetch_ms = now
        if fetch_offset >= self.log_end_offset:
            follower.last_caught_up_ms = now
        return (replica_id not in self.isr and replica_id in self.replicas
                and can_rejoin_isr(fetch_offset, self.high_watermark,
                                   self.leader_epoch_start_offset))

    def maybe_advance_high_watermark(self) -> bool:
        if not self.is_leader:
            return False
        leos = {b: f.log_end_offset for b, f in self.followers.items()}
        new_hw = compute_high_watermark(self.log_end_offset, self.isr, leos, self.broker_id)
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            return True
        return False

    def low_watermark(self, live_brokers) -> int:
        """The smallest log start offset over this leader and its followers on live brokers
        (Kafka's lowWatermarkIfLeader): how far DeleteRecords has reached on every replica."""
        low = self.log_start_offset
        for broker, follower in self.followers.items():
            if broker in live_brokers and follower.log_start_offset < low:
                low = follower.log_start_offset
        return low

    def out_of_sync_replicas(self) -> set[int]:
        last = {b: f.last_caught_up_ms for b, f in self.followers.items()}
        return lagging_replicas(self.isr, self.broker_id, last, self._clock_ms(),
                                self.replica_lag_time_max_ms)

    def enough_replicas_for(self, required_offset: int, min_insync_replicas: int):
        """For acks=all: (done, error). Done once the HW reaches ``required_offset``."""
        if not self.is_leader:
            return True, NotLeaderForPartitionError(
                f"leadership of {self.topic}-{self.partition} moved while waiting for acks")
        if self.high_watermark >= required_offset:
            if len(self.isr) < min_insync_replicas:
                return True, NotEnoughReplicasAfterAppendError(
                    f"{self.topic}-{self.partition}: ISR shrank to {self.isr}")
            return True, None
        return False, None

    # --- follower side ------------------------------------------------------------------------
    def append_as_follower(self, records: bytes, leader_high_watermark: int,
                           leader_log_start_offset: int = -1):
        if records:
            headers = list(iter_headers(records, verify_crc=False))
            batches = producer_txns.batch_infos(records, None, REPLICATION, self.tp, headers)
            analysis = producer_txns.analyze(self.producer_states, batches, REPLICATION)
            self.log.append(records, assign_offsets=False)
            producer_txns.apply(self, analysis)
            self._note_epochs(headers)
        self.high_watermark = min(leader_high_watermark, self.log_end_offset)
        self.maybe_increment_log_start_offset(leader_log_start_offset)

    def maybe_increment_log_start_offset(self, leader_log_start_offset: int) -> bool:
        """Follower: move the log start up to the leader's (DeleteRecords or retention there),
        never past this replica's high watermark. True when it moved."""
        target = min(leader_log_start_offset, self.high_watermark)
        if target <= self.log.log_start_offset:
            return False
        log.info("%s-%d: log start offset %d -> %d (the leader's)", self.topic, self.partition,
                 self.log.log_start_offset, target)
        self.log.delete_records_before(target)
        return True

    def _note_epochs(self, headers) -> None:
        last = self.epoch_starts[-1][0] if self.epoch_starts else -1
        for _pos, header in headers:
            epoch = header.partition_leader_epoch
            if epoch > last:
                self.epoch_starts.append((epoch, header.base_offset))
                last = epoch

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, by the rules of Kafka's
        LeaderEpochFileCache.endOffsetFor (KIP-101/279): the latest epoch ends at the LEO; an
        earlier one at the start of the first epoch after it, answered with the largest known
        epoch at or below it; one below every known epoch (its records were deleted) at the
        first known epoch's start, answered with the requested epoch itself. No epoch asked
        (-1), none known, or one above the latest: undefined (-1, -1) -- a follower then
        truncates to its high watermark, which never cuts committed records."""
        if requested_epoch < 0 or not self.epoch_starts:
            return (-1, -1)
        latest = self.epoch_starts[-1][0]
        if requested_epoch == latest:
            return (latest, self.log_end_offset)
        if requested_epoch > latest:
            return (-1, -1)
        chosen = None
        for index, (epoch, _start) in enumerate(self.epoch_starts):
            if epoch <= requested_epoch:
                chosen = index
        if chosen is None:
            return (requested_epoch, self.epoch_starts[0][1])
        next_start = self.epoch_starts[chosen + 1][1]
        return (self.epoch_starts[chosen][0], next_start)

    def truncate_to(self, offset: int) -> None:
        if offset < self.log_end_offset:
            log.info("%s-%d: truncating from %d to %d", self.topic, self.partition,
                     self.log_end_offset, offset)
            self.log.truncate_to(offset)
            self.epoch_starts = [(e, s) for e, s in self.epoch_starts if s < offset]
            # as Kafka's truncateAndReload: the producer state is rebuilt from the log that is
            # left (a marker cut off reopens its transaction; a transaction begun after the
            # cut is gone)
            producer_txns.rebuild(self.producer_states, self.log)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """A follower behind the leader's log start starts over there: an empty log and, as
        Kafka's truncateFullyAndStartAt, an empty producer state."""
        self.log.truncate_fully_and_start_at(offset)
        self.producer_states.clear()


def epoch_starts_from_log(log_, chunk_bytes: int = 4 * 1024 * 1024,
                          producer_states: ProducerStateTable | None = None
                          ) -> list[tuple[int, int]]:
    """Rebuild the (leader epoch, start offset) list from the batches' partition_leader_epoch
    fields (Kafka keeps a leader-epoch-checkpoint file; the batches carry the same facts), and
    replay the producers' batches and markers into ``producer_states`` (Kafka's
    loadProducersFromRecords: completed transactions are completed, the ``.txnindex`` is the
    log's own)."""
    starts: list[tuple[int, int]] = []
    offset = log_.log_start_offset
    end = log_.log_end_offset
    while offset < end:
        data = log_.read(offset, chunk_bytes).records
        if not data:
            break
        last = None
        try:
            for _pos, header in iter_headers(data, verify_crc=False):
                last = header
                if producer_states is not None:
                    producer_txns.replay(producer_states, data, _pos, header)
                epoch = header.partition_leader_epoch
                if epoch >= 0 and (not starts or epoch > starts[-1][0]):
                    starts.append((epoch, header.base_offset))
        except Exception:  # noqa: BLE001 - a partial trailing batch ends this chunk
            pass
        if last is None:
            break
        offset = last.next_offset
    return starts
