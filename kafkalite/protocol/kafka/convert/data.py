"""Produce and Fetch between Kafka's protocol and the model: the broker's hottest path.

Record data passes through untouched both ways: kio reads a ``records`` field as bytes, which the
model carries as they are, and a fetched partition's stored batches go out as read. The work
here is per partition, never per record.

A Kafka-protocol Fetch is always a consumer's (replica id -1), whatever replica id it carries:
brokers replicate over the native protocol.
"""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter
from kafkalite.protocol.kafka.entities import millis

__all__ = ["PRODUCE", "FETCH"]


def _records(data) -> bytes:
    """A partition's batch bytes (null records: none). kio gives bytes: no copy then."""
    if data is None:
        return b""
    return data if type(data) is bytes else bytes(data)


def _produce_request(entity, version: int) -> m.ProduceRequest:
    topic_data: dict[str, dict[int, bytes]] = {}
    for topic in entity.topic_data:
        partitions = topic_data.setdefault(topic.name, {})
        for p in topic.partition_data:
            partitions[p.index] = _records(p.records)
    # a negative timeout means "do not wait" (Kafka expires it at once); the purgatory's timer
    # refuses negative delays, after the records are appended
    return m.ProduceRequest(transactional_id=entity.transactional_id, acks=entity.acks,
                            timeout_ms=max(0, millis(entity.timeout)), topic_data=topic_data)


def _produce_partition(index: int, r: m.ProducePartitionResponse) -> dict:
    return {
        # Kafka sends an error message only with record errors (KIP-467); kafkalite's own
        # wording of the other refusals stays on its native protocol
        "index": index, "error_code": r.error_code,
        "error_message": r.error_message if r.record_errors else None,
        "base_offset": r.base_offset, "log_append_time": r.log_append_time,
        "log_start_offset": r.log_start_offset,
        "record_errors": [{"batch_index": e.batch_index, "batch_index_error_message": e.message}
                          for e in r.record_errors]}


def _produce_response(r: m.ProduceResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "responses": [
        {"name": topic, "partition_responses": [_produce_partition(index, p)
                                                for index, p in partitions.items()]}
        for topic, partitions in r.responses.items()]}


PRODUCE = Converter(_produce_request, _produce_response)


def _fetch_request(entity, version: int) -> m.FetchRequest:
    return m.FetchRequest(
        # kept as sent: a replica id >= 0 makes it a follower's fetch, which Kafka authorizes
        # with ClusterAction on the cluster, not Read on the topics (kafkalite's own brokers
        # replicate over the native protocol; this is anyone speaking Kafka's)
        replica_id=int(entity.replica_id),
        max_wait_ms=max(0, millis(entity.max_wait)),
        min_bytes=entity.min_bytes,
        max_bytes=getattr(entity, "max_bytes", 0x7FFFFFFF),
        isolation_level=int(getattr(entity, "isolation_level", m.READ_UNCOMMITTED)),
        session_id=getattr(entity, "session_id", 0),
        session_epoch=getattr(entity, "session_epoch", -1),
        # Kafka's KafkaApis gives a fetch client metadata from v11 on, rack or not
        rack_id=entity.rack_id if version >= 11 else None,
        topics=[m.FetchTopic(t.topic, [
            m.FetchPartition(p.partition, p.fetch_offset, p.partition_max_bytes,
                             getattr(p, "current_leader_epoch", -1))
            for p in t.partitions]) for t in entity.topics])


def _aborted(aborted) -> list[dict] | None:
    """Fetch v4+'s aborted transactions: null for read_uncommitted (None), else the list."""
    if aborted is None:
        return None
    # (producer id, first offset) pairs: the model's FetchAbortedTransaction or plain tuples
    return [{"producer_id": a[0], "first_offset": a[1]} for a in aborted]


def _fetch_response(r: m.FetchResponse, version: int) -> dict:
    # kafkalite opens no fetch session (id 0)
    return {"throttle_time": r.throttle_time_ms, "error_code": r.error_code, "session_id": 0,
            "responses": [{
                "topic": t.topic,
                "partitions": [{
                    "partition_index": p.partition, "error_code": p.error_code,
                    "high_watermark": p.high_watermark,
                    "last_stable_offset": (p.last_stable_offset if p.last_stable_offset >= 0
                                           else p.high_watermark),
                    "log_start_offset": p.log_start_offset,
                    "aborted_transactions": _aborted(p.aborted_transactions),
                    "preferred_read_replica": p.preferred_read_replica,
                    "records": p.records} for p in t.partitions],
            } for t in r.responses]}


FETCH = Converter(_fetch_request, _fetch_response)
