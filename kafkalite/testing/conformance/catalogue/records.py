"""Raw data-path requests for the produce/fetch scenarios: batches, Produce, Fetch, ListOffsets
and OffsetForLeaderEpoch aimed at one broker.

Batches are built with kafka-python's v2 record builder at fixed timestamps, so the same batch
has the same size on both systems and the byte counts of Fetch answers can be compared.
"""

from __future__ import annotations

from kafkalite.testing.conformance import raw

TS = 1_600_000_000_000      # a fixed, old timestamp: batches are byte-for-byte reproducible


def batch(count: int = 1, value_size: int = 10, timestamp: int = TS, key: bytes | None = None,
          compression: int = 0) -> bytes:
    """A v2 record batch of ``count`` records of ``value_size`` bytes each."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression,
                                        is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 30)
    for i in range(count):
        builder.append(i, timestamp=timestamp + i, key=key,
                       value=bytes([65 + i % 26]) * value_size, headers=[])
    return bytes(builder.build())


def produce(address: str, topic: str, records: bytes, partition: int = 0, acks: int = -1,
            version: int = 8, detail: bool = False) -> dict:
    """Produce one batch; the partition's answer: error, base offset, log append time, record
    errors, and with ``detail`` the log start offset and message too (Kafka leaves both unset
    in most refusals; one scenario compares them, the others leave them out)."""
    answer = raw.call(address, 0, version, {
        "transactional_id": None, "acks": acks, "timeout": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition,
                                                           "records": records}]}]})
    if isinstance(answer, str):
        return {"answer": answer}
    part = answer["responses"][0]["partition_responses"][0]
    out = {"error": part["error_code"], "base_offset": part["base_offset"],
           "log_append_time": part["log_append_time"], "record_errors": part["record_errors"]}
    if detail:
        out.update(log_start_offset=part["log_start_offset"], message=part["error_message"])
    return out


def fetch(address: str, parts: list[tuple[str, int, int, int]], max_bytes: int = 1 << 20,
          max_wait_ms: int = 0, version: int = 12) -> list[dict] | str:
    """Fetch ``(topic, partition, offset, partition_max_bytes)``s; per partition: error,
    watermarks and the byte count of the records returned."""
    topics: dict[str, list] = {}
    for topic, partition, offset, part_max in parts:
        topics.setdefault(topic, []).append({
            "partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
            "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": part_max})
    answer = raw.call(address, 1, version, {
        "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": 1, "max_bytes": max_bytes,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
        "forgotten_topics_data": [], "rack_id": ""}, raw_records=True)
    if isinstance(answer, str):
        return answer
    out = []
    for topic in answer["responses"]:
        for p in topic["partitions"]:
            out.append({"partition": p["partition_index"], "error": p["error_code"],
                        "high_watermark": p["high_watermark"],
                        "last_stable_offset": p["last_stable_offset"],
                        "log_start_offset": p.get("log_start_offset"),
                        **_records_seen(p["records"], max_bytes)})
    return out


def _records_seen(data: bytes | None, max_bytes: int) -> dict:
    """What a client makes of a partition's record bytes: the complete records in them (Kafka
    may end the data with part of a batch, which clients drop), and whether the bytes stayed
    within the fetch's max_bytes."""
    from kafka.record.memory_records import MemoryRecords

    data = data or b""
    count = 0
    batches = MemoryRecords(bytes(data))
    while True:
        batch = batches.next_batch()
        if batch is None:
            break
        count += sum(1 for _ in batch)
    return {"complete_records": count, "within_max_bytes": len(data) <= max_bytes}


def list_offsets(address: str, topic: str, timestamps: list[int], partition: int = 0,
                 version: int = 6, current_leader_epoch: int = -1) -> list:
    """ListOffsets for each timestamp (-2 earliest, -1 latest): [error, offset, timestamp]."""
    out = []
    for ts in timestamps:
        answer = raw.call(address, 2, version, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "current_leader_epoch": current_leader_epoch,
                 "timestamp": ts}]}]})
        p = answer["topics"][0]["partitions"][0]
        out.append([ts, p["error_code"], p["offset"], p["timestamp"]])
    return out


def offset_for_leader_epoch(address: str, topic: str, asks: list[tuple[int, int]],
                            partition: int = 0) -> list:
    """OffsetForLeaderEpoch v4 for each ``(current_leader_epoch, leader_epoch)``:
    [asked, error, leader_epoch, end_offset]."""
    out = []
    for current, epoch in asks:
        answer = raw.call(address, 23, 4, {"replica_id": -1, "topics": [
            {"topic": topic, "partitions": [{"partition": partition,
                                             "current_leader_epoch": current,
                                             "leader_epoch": epoch}]}]})
        p = answer["topics"][0]["partitions"][0]
        out.append([[current, epoch], p["error_code"], p["leader_epoch"], p["end_offset"]])
    return out
