"""What a broker does with Produce requests a client gave up on: librdkafka's purge (issue 24).

librdkafka 2.0.2's test 0086 (``rd_kafka_purge()`` of queued and in-flight messages) auto-creates
its topic from Metadata and stalls its first ProduceRequest; a purge of the in-flight messages
closes nothing on the broker's side, the request is still appended (librdkafka reports the
messages as "possibly persisted"), and an idempotent producer's next batch must follow it. That
test failed on kafkalite in the issue; it fails on Apache Kafka 2.8.2 as often (a client race,
see tests/integration/test_librdkafka_purge.py), but the broker's side of it is compared here,
with raw requests whose answers are exact: the auto-creating Metadata answers, an idempotent
Produce whose connection is closed before its answer, its retry (a duplicate), the next batch
and a batch after a gap, and what a consumer reads back. It found one difference, fixed: Kafka
answers the retried (duplicate) batch with the stored batch's max timestamp as its log append
time (Log.append: ``logAppendTime = duplicate.timestamp``), kafkalite answered -1.
"""

from __future__ import annotations

import socket
import struct

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.catalogue import records
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("produce-fetch")    # reported with the data path (no family of its own)
scenario = family.scenario


def _idempotent_batch(pid: int, base_sequence: int, count: int) -> bytes:
    """A v2 batch of an idempotent producer (epoch 0) starting at ``base_sequence``."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=pid, producer_epoch=0,
                                        base_sequence=base_sequence, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, timestamp=records.TS + i, key=None,
                       value=b"s%d" % (base_sequence + i), headers=[])
    return bytes(builder.build())


def _produce_and_hang_up(address: str, topic: str, batch: bytes) -> None:
    """Send one acks=all Produce and close the connection without reading its answer: what a
    client's purge of in-flight messages (or its going away) looks like to the broker."""
    body = {"transactional_id": None, "acks": -1, "timeout": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
    payload = raw.codec.encode_request(0, 8, next(raw._correlation), "conformance", body)
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)


def _metadata(address: str, topic: str) -> object:
    """Metadata v4 with auto-creation, as librdkafka asks: the topic's error and partitions
    (id, error, whether a leader is named)."""
    answer = raw.call(address, 3, 4, {"topics": [{"name": topic}],
                                      "allow_auto_topic_creation": True})
    if isinstance(answer, str):
        return answer
    t = answer["topics"][0]
    return {"error": t["error_code"], "partitions": sorted(
        [p["partition_index"], p["error_code"], p["leader_id"] >= 0] for p in t["partitions"])}


@scenario("produce-abandoned-in-flight", "Metadata", "Produce", "InitProducerId", "Fetch")
def produce_abandoned_in_flight(ctx: Context) -> object:
    """librdkafka 0086's broker side: a topic auto-created by Metadata v4 (the first answer,
    then the one with partitions); on a 4-partition topic an idempotent acks=all Produce of 10
    records to partition 0 whose connection is closed unanswered, then (once appended) the same
    batch again, the next 10, a batch after a gap, and the partition read back."""
    auto = ctx.name("auto")
    out: dict = {"auto-created, first answer": _metadata(ctx.addresses[0], auto)}
    out["auto-created, with partitions"] = clients.wait_for(
        lambda: (lambda m: m if isinstance(m, dict) and m["partitions"]
                 and all(p[2] for p in m["partitions"]) else None)(
            _metadata(ctx.addresses[0], auto)), f"{auto}'s partitions", ctx.timeout_s)
    topic = clients.create_topic(ctx, "t", partitions=4)
    leader = clients.leader_address(ctx, topic)
    init = raw.call(leader, 22, 4, {"transactional_id": None, "transaction_timeout": 60000,
                                    "producer_id": -1, "producer_epoch": -1})
    pid = init["producer_id"]
    first = _idempotent_batch(pid, 0, 10)
    _produce_and_hang_up(leader, topic, first)
    try:
        out["abandoned batch appended"] = clients.wait_for(
            lambda: clients.watermarks(ctx, topic) == [0, 10], "the abandoned batch",
            ctx.timeout_s)
    except clients.ScenarioError:
        out["abandoned batch appended"] = clients.watermarks(ctx, topic)
    out["same batch again"] = records.produce(leader, topic, first)
    out["next batch"] = records.produce(leader, topic, _idempotent_batch(pid, 10, 10))
    out["after a gap"] = records.produce(leader, topic, _idempotent_batch(pid, 30, 5))
    read = clients.read_to_end(ctx, topic)
    out["read back"] = [[r.get("offset"), r.get("value")] for r in read]
    return out
