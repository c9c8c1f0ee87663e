"""The produce and fetch operations that wait in the ReplicaManager's purgatories: acks=all
produces until the ISR has the records, long-poll fetches until enough data arrived, and the
fields of a refused produce answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalite import errors
from kafkalite.errors import (KafkaError, KafkaStorageError, NotLeaderForPartitionError,
                              code_of)
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.topic_partition import TopicPartition
from kafkalite.server.purgatory import DelayedOperation
from kafkalite.server.read_replica import fetch_only_from_leader, serve_refusal

if TYPE_CHECKING:
    from kafkalite.server.partition import Partition
    from kafkalite.server.replica_manager import ReplicaManager


#: refusals Kafka's appendToLocalLog answers without the log start offset
NO_LOG_START_ERRORS = (errors.UnknownTopicOrPartitionError, NotLeaderForPartitionError,
                        errors.MessageTooLargeError, errors.RecordListTooLargeError,
                        errors.CorruptRecordError, KafkaStorageError, errors.InvalidTopicError)


def error_text(exc: BaseException) -> str:
    return exc.message if isinstance(exc, KafkaError) else f"{type(exc).__name__}: {exc}"


class DelayedProduce(DelayedOperation):
    """acks=all: wait until the HW of every written partition passes the appended records."""

    def __init__(self, timeout_ms, manager: "ReplicaManager", pending: dict, results: dict):
        super().__init__(timeout_ms)
        self.manager = manager
        self.pending = pending      # tp -> required offset (last offset + 1)
        self.results = results      # tp -> ProduceResult (answered as a whole at the end)

    def try_complete(self) -> bool:
        for tp, required in list(self.pending.items()):
            partition = self.manager.partitions.get(tp)
            if partition is None:
                self._fail(tp, self.manager.not_hosted_error(*tp))
                continue
            done, error = partition.enough_replicas_for(
                required, self.manager.topic_config(tp[0]).min_insync_replicas)
            if done:
                if error is not None:
                    self._fail(tp, error)      # (drops tp from pending too)
                self.pending.pop(tp, None)
        return not self.pending

    def _fail(self, tp, error) -> None:
        # as Kafka's DelayedProduce: only the error changes, the append's offsets stay
        self.results[tp] = self.results[tp]._replace(error_code=code_of(error),
                                                      error_message=error_text(error))
        self.pending.pop(tp, None)

    def on_complete(self, timed_out: bool):
        for tp in list(self.pending):
            self._fail(tp, errors.RequestTimedOutError(
                f"{tp[0]}-{tp[1]}: the in-sync replicas did not acknowledge within the "
                "request timeout"))
        return self.results


def is_consumer_fetch(operation: DelayedOperation) -> bool:
    """Whether a waiting operation is a consumer's fetch (not a follower's: replica id -1)."""
    return isinstance(operation, DelayedFetch) and operation.params.replica_id < 0


class DelayedFetch(DelayedOperation):
    """A fetch that waits for min_bytes of new data or max_wait_ms."""

    def __init__(self, timeout_ms, manager: "ReplicaManager", params: FetchParams,
                 fetch_infos: dict[TopicPartition, PartitionData], bytes_so_far: int):
        super().__init__(timeout_ms)
        self.manager = manager
        self.params = params
        self.fetch_infos = fetch_infos
        self.watermarks = self._positions()
        self.bytes_so_far = bytes_so_far
        self.only_leader = fetch_only_from_leader(params.replica_id, params.client_rack)

    def _positions(self):
        positions = {}
        for tp in self.fetch_infos:
            partition = self.manager.partitions.get(tp)
            if partition is not None:
                positions[tp] = self._limit(partition)
        return positions

    def _limit(self, partition: Partition) -> int:
        """What bounds this fetch: the log end (followers), the last stable offset
        (read_committed consumers: Kafka's DelayedFetch reads FetchTxnCommitted's end) or the
        high watermark."""
        if self.params.replica_id >= 0:
            return partition.log_end_offset
        if self.params.isolation_level == 1:
            return partition.last_stable_offset
        return partition.high_watermark

    def try_complete(self) -> bool:
        grown = 0
        for tp, before in self.watermarks.items():
            partition = self.manager.partitions.get(tp)
            if partition is None or serve_refusal(
                    partition, self.fetch_infos[tp].current_leader_epoch, self.only_leader):
                return True  # answer now with the error (KIP-392: a follower may serve it)
            now = self._limit(partition)
            if now < before:
                return True  # truncated: let the fetcher see it
            if now > before:
                grown += 1
        if not grown:
            return False
        # estimate: any growth in a min_bytes=1 fetch completes; otherwise re-read sizes
        if self.params.min_bytes <= 1:
            return True
        _results, size = self.manager.read_fetch(self.params, self.fetch_infos)
        return size >= self.params.min_bytes

    def on_complete(self, timed_out: bool):
        return self.manager.read_fetch(self.params, self.fetch_infos)[0]
