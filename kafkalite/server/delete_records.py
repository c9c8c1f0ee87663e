"""DeleteRecords on the broker: move partitions' log start offsets forward (Kafka's
``ReplicaManager.deleteRecords``), protocol-independent.

``delete_records(broker, {(topic, partition): offset}, timeout_ms)`` returns a Deferred firing
with ``{(topic, partition): (low_watermark, error_code)}``:

* only the partition's leader serves it: a replica that is not the leader answers
  NOT_LEADER_OR_FOLLOWER, a partition this broker does not host answers
  NOT_LEADER_OR_FOLLOWER when the topic exists (the client's metadata is stale) and
  UNKNOWN_TOPIC_OR_PARTITION otherwise;
* ``offset`` -1 means the high watermark; an offset above the high watermark, or another
  negative one, is OFFSET_OUT_OF_RANGE; an offset below the current log start changes nothing;
* a topic whose cleanup.policy lacks ``delete`` answers POLICY_VIOLATION, an internal topic
  (``__consumer_offsets``, ``__transaction_state``) INVALID_TOPIC_EXCEPTION;
* the leader's log start moves at once (``Log.delete_records_before`` also removes the segments
  wholly below it); followers take the leader's log start offset from their fetch responses
  (``Partition.append_as_follower``) and report theirs in their next fetch. The answer waits in
  the ReplicaManager's delete-records purgatory until the low watermark -- the smallest log start
  offset over the leader and its followers on live brokers (Kafka's ``lowWatermarkIfLeader``)
  -- reaches the requested offset, or ``timeout_ms`` passes (REQUEST_TIMED_OUT, with the low
  watermark as it was when the request came).

Afterwards a fetch below the new log start gets OFFSET_OUT_OF_RANGE, and ListOffsets for the
earliest offset answers the new log start.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.errors import KafkaError, code_of
from kafkalite.server.purgatory import DelayedOperation
from kafkalite.topic_partition import TopicPartition

log = logging.getLogger(__name__)

HIGH_WATERMARK = -1            # DeleteRecordsRequest.HIGH_WATERMARK
INVALID_LOW_WATERMARK = -1     # DeleteRecordsResponse.INVALID_LOW_WATERMARK
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def _live_brokers(broker) -> set[int]:
    return set(broker.metadata_cache.brokers)


def _leader_partition(broker, tp: TopicPartition):
    partition = broker.replica_manager.partitions.get(tp)
    if partition is None:
        if broker.metadata_cache.contains(tp[0]) and \
                tp[1] < broker.metadata_cache.partition_count(tp[0]):
            raise errors.NotLeaderForPartitionError(
                f"broker {broker.broker_id} does not host {tp[0]}-{tp[1]}: it is not its leader")
        raise errors.UnknownTopicOrPartitionError(
            f"This server does not host this topic-partition: {tp[0]}-{tp[1]}")
    partition.require_leader()
    return partition


def delete_on_leader(broker, tp: TopicPartition, offset: int) -> tuple[int, int]:
    """Advance the leader's log start for one partition: (required offset, low watermark now).
    Raises the KafkaError to answer with."""
    if tp[0] in INTERNAL_TOPICS:
        raise errors.InvalidTopicError(f"Cannot delete records of internal topic {tp[0]}")
    partition = _leader_partition(broker, tp)
    config = broker.replica_manager.topic_config(tp[0])
    if not config.delete:
        raise errors.PolicyViolationError(
            f"Records of partition {tp[0]}-{tp[1]} can not be deleted due to the configured "
            f"policy (cleanup.policy={','.join(config.cleanup_policy)})")
    high_watermark = partition.high_watermark
    target = high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        raise errors.OffsetOutOfRangeError(
            f"The offset {target} for partition {tp[0]}-{tp[1]} is not valid")
    if target > high_watermark:
        raise errors.OffsetOutOfRangeError(
            f"Cannot increment the log start offset to {target} of partition {tp[0]}-{tp[1]} "
            f"since it is larger than the high watermark {high_watermark}")
    if target > partition.log_start_offset:
        before = partition.log_start_offset
        deleted = partition.log.delete_records_before(target)
        log.info("%s-%d: records before %d deleted (log start was %d, %d segment(s) removed)",
                 tp[0], tp[1], target, before, len(deleted))
    return target, partition.low_watermark(_live_brokers(broker))


class DelayedDeleteRecords(DelayedOperation):
    """Waits until every live replica's log start offset reached the requested offsets."""

    def __init__(self, timeout_ms: int, broker, required: dict[TopicPartition, int],
                 results: dict[TopicPartition, tuple[int, int]]):
        super().__init__(timeout_ms)
        self.broker = broker
        self.required = required      # tp -> offset every replica's log start must reach
        self.results = results        # tp -> (low watermark, error code)

    def try_complete(self) -> bool:
        partitions = self.broker.replica_manager.partitions
        live = _live_brokers(self.broker)
        for tp, required in list(self.required.items()):
            partition = partitions.get(tp)
            if partition is None:
                self.results[tp] = (INVALID_LOW_WATERMARK,
                                    errors.UnknownTopicOrPartitionError.code)
            elif not partition.is_leader:
                self.results[tp] = (INVALID_LOW_WATERMARK, errors.NotLeaderForPartitionError.code)
            else:
                low = partition.low_watermark(live)
                if low < required:
                    continue
                self.results[tp] = (low, errors.NONE)
            del self.required[tp]
        return not self.required

    def on_complete(self, timed_out: bool):
        for tp in self.required:
            low, _code = self.results[tp]
            self.results[tp] = (low, errors.RequestTimedOutError.code)
        return dict(self.results)


def delete_records(broker, offsets: dict[TopicPartition, int], timeout_ms: int
                   ) -> defer.Deferred:
    """Deferred firing with ``{(topic, partition): (low_watermark, error_code)}`` for every
    partition in ``offsets`` (see the module docstring)."""
    results: dict[TopicPartition, tuple[int, int]] = {}
    required: dict[TopicPartition, int] = {}
    for (topic, partition), offset in offsets.items():
        tp = (topic, int(partition))
        try:
            target, low = delete_on_leader(broker, tp, int(offset))
        except Exception as exc:  # noqa: BLE001 - answered per partition
            if not isinstance(exc, KafkaError):
                log.exception("DeleteRecords on %s-%d failed", *tp)
            results[tp] = (INVALID_LOW_WATERMARK, code_of(exc))
            continue
        results[tp] = (low, errors.NONE)
        required[tp] = target
    if not required:
        return defer.succeed(results)
    operation = DelayedDeleteRecords(timeout_ms, broker, required, results)
    return broker.replica_manager.delete_records_purgatory.try_complete_else_watch(
        operation, list(required))
