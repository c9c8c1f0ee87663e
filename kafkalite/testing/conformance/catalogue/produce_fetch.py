"""Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, InitProducerId: the data path.

confluent-kafka produces and consumes where the client's view is the question (offsets handed
back, records read, timestamps, compression); raw requests where one broker's exact answer is
(errors of a single partition, fetch byte limits, epochs), sent to the partition's leader or,
on purpose, to a follower.
"""

from __future__ import annotations

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.catalogue import records
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("produce-fetch")
scenario = family.scenario


@scenario("produce-consume-roundtrip", "Produce", "Fetch")
def produce_consume_roundtrip(ctx: Context) -> object:
    """Five keyed records with headers: the offsets handed back and what a consumer reads."""
    topic = clients.create_topic(ctx, "t", partitions=1, replication=3)
    p = clients.producer(ctx, acks="all")
    reports: list = []
    for i in range(5):
        p.produce(topic, key=f"k{i}", value=f"v{i}", partition=0, headers=[("h", b"x%d" % i)],
                  on_delivery=lambda err, msg: reports.append(
                      clients.error(err) if err else [msg.offset(), msg.partition()]))
    p.flush(ctx.timeout_s)
    c = clients.consumer(ctx)
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        seen = []
        clients.wait_for(lambda: seen.extend(m for m in [c.poll(0.2)] if m is not None) or
                         len([m for m in seen if not m.error()]) >= 5, "5 records",
                         ctx.timeout_s, 0)
        read = [[m.offset(), m.key().decode(), m.value().decode(), m.headers(),
                 m.timestamp()[0]] for m in seen if not m.error()]
    finally:
        c.close()
    return {"delivered": reports, "read": read}


@scenario("produce-unknown-topic-or-partition", "Produce")
def produce_unknown_topic_or_partition(ctx: Context) -> object:
    """Produce to partition 5 of a 1-partition topic, and to a topic that does not exist
    (Produce never creates topics)."""
    topic = clients.create_topic(ctx, "t", partitions=1)
    leader = clients.leader_address(ctx, topic)
    return {"partition 5": records.produce(leader, topic, records.batch(), partition=5),
            "no topic": records.produce(leader, ctx.name("none"), records.batch())}


@scenario("produce-message-too-large", "Produce")
def produce_message_too_large(ctx: Context) -> object:
    """A 1.1 MB batch (over the broker's default message.max.bytes), and batches around a
    topic's max.message.bytes=2000."""
    big = clients.create_topic(ctx, "big")
    small = clients.create_topic(ctx, "small",
                                 config={"max.message.bytes": "2000"})
    return {"1.1 MB": records.produce(clients.leader_address(ctx, big), big,
                                      records.batch(1, 1_100_000)),
            "3000 B": records.produce(clients.leader_address(ctx, small), small,
                                      records.batch(1, 3000)),
            "1000 B": records.produce(clients.leader_address(ctx, small), small,
                                      records.batch(1, 1000))}


@scenario("produce-client-too-large", "Produce")
def produce_client_too_large(ctx: Context) -> object:
    """confluent-kafka (its own message.max.bytes raised) sends a 1.5 MB record: the delivery
    report's error."""
    topic = clients.create_topic(ctx, "t")
    return clients.produce(ctx, topic, [b"x" * 1_500_000], message_max_bytes=10_000_000)


@scenario("produce-not-enough-replicas", "Produce")
def produce_not_enough_replicas(ctx: Context) -> object:
    """A topic of one replica (the clusters run with min.insync.replicas=2): acks=all is
    refused, acks=1 is not."""
    topic = clients.create_topic(ctx, "t", replication=1)
    leader = clients.leader_address(ctx, topic)
    return {"acks=all": records.produce(leader, topic, records.batch(), acks=-1),
            "acks=1": records.produce(leader, topic, records.batch(), acks=1)}


@scenario("produce-error-answer-fields", "Produce")
def produce_error_answer_fields(ctx: Context) -> object:
    """What a refused partition's Produce v8 answer carries besides the error: the log start
    offset and the error message (Kafka sets the message only for record errors)."""
    topic = clients.create_topic(ctx, "t", replication=1)
    leader = clients.leader_address(ctx, topic)
    return {"not enough replicas": records.produce(leader, topic, records.batch(), detail=True),
            "unknown partition": records.produce(leader, topic, records.batch(), partition=7,
                                                 detail=True)}


@scenario("produce-to-non-replica", "Produce")
def produce_to_non_replica(ctx: Context) -> object:
    """Produce to a broker that does not hold the partition of an existing topic: the broker
    knows the topic from its metadata, so the client is told to find the leader."""
    topic = clients.create_topic(ctx, "t", replication=1)
    other = clients.other_address(ctx, clients.leader_address(ctx, topic))
    return records.produce(other, topic, records.batch())


@scenario("produce-to-follower", "Produce")
def produce_to_follower(ctx: Context) -> object:
    """Produce to a broker that holds the partition but does not lead it."""
    topic = clients.create_topic(ctx, "t", replication=3)
    follower = clients.other_address(ctx, clients.leader_address(ctx, topic))
    return records.produce(follower, topic, records.batch())


@scenario("produce-corrupt-batch", "Produce")
def produce_corrupt_batch(ctx: Context) -> object:
    """A batch whose CRC does not match its bytes."""
    topic = clients.create_topic(ctx, "t")
    data = bytearray(records.batch(2))
    data[-1] ^= 0xFF
    return records.produce(clients.leader_address(ctx, topic), topic, bytes(data))


@scenario("produce-invalid-timestamp", "Produce")
def produce_invalid_timestamp(ctx: Context) -> object:
    """A record timestamped in 2020 to a topic allowing one minute of clock difference."""
    topic, refused = clients.try_create_topic(
        ctx, "t", config={"message.timestamp.difference.max.ms": "60000"})
    if refused:
        return {"create": refused}
    answer = records.produce(clients.leader_address(ctx, topic), topic, records.batch(2))
    return answer


@scenario("produce-log-append-time", "Produce", "Fetch")
def produce_log_append_time(ctx: Context) -> object:
    """A LogAppendTime topic: the produce answer carries the broker's time, and the consumer
    reads the records with timestamp type LogAppendTime."""
    topic = clients.create_topic(ctx, "t",
                                 config={"message.timestamp.type": "LogAppendTime"})
    answer = records.produce(clients.leader_address(ctx, topic), topic, records.batch(2))
    c = clients.consumer(ctx)
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        msg = clients.wait_for(lambda: (lambda m: m if m and not m.error() else None)(
            c.poll(0.2)), "a record", ctx.timeout_s, 0)
        seen = [msg.timestamp()[0], msg.timestamp()[1] != records.TS]
    finally:
        c.close()
    return {"produce": answer, "consumed_type_and_not_create_time": seen}


@scenario("produce-compression-codecs", "Produce", "Fetch")
def produce_compression_codecs(ctx: Context) -> object:
    """Records compressed by the producer with each codec read back by a consumer."""
    topic = clients.create_topic(ctx, "t")
    out = {}
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        out[codec] = clients.produce(ctx, topic, [f"{codec}-{i}" * 20 for i in range(3)],
                                     compression_type=codec)
    read = clients.consume_all(ctx, topic, 12)
    out["read"] = [r.get("value", r)[:8] if isinstance(r.get("value"), str) else r
                   for r in read]
    return out


@scenario("topic-compression-recompresses", "Produce", "Fetch")
def topic_compression_recompresses(ctx: Context) -> object:
    """A topic with compression.type=lz4 and another with gzip take uncompressed batches (the
    broker recompresses) and a consumer reads them."""
    out = {}
    for codec in ("lz4", "gzip"):
        topic, refused = clients.try_create_topic(ctx, codec,
                                                  config={"compression.type": codec})
        if refused:
            out[codec] = {"create": refused}
            continue
        out[codec] = records.produce(clients.leader_address(ctx, topic), topic,
                                     records.batch(3))
        out[f"{codec} read"] = [r.get("offset", r) for r in
                                clients.consume_all(ctx, topic, 3)]
    return out


@scenario("fetch-errors", "Fetch")
def fetch_errors(ctx: Context) -> object:
    """Fetch beyond the log end, from a follower, and of an unknown topic."""
    topic = clients.create_topic(ctx, "t", replication=3)
    leader = clients.leader_address(ctx, topic)
    records.produce(leader, topic, records.batch(3))
    return {"offset 100": records.fetch(leader, [(topic, 0, 100, 1 << 20)]),
            "follower v10": records.fetch(clients.other_address(ctx, leader),
                                          [(topic, 0, 0, 1 << 20)], version=10),
            "unknown": records.fetch(leader, [(ctx.name("none"), 0, 0, 1 << 20)])}


@scenario("fetch-from-follower", "Fetch")
def fetch_from_follower(ctx: Context) -> object:
    """KIP-392: a consumer's Fetch v11+ (it carries a rack id) may read from a follower, up to
    the follower's high watermark; the answer once the follower has caught up."""
    topic = clients.create_topic(ctx, "t", replication=3)
    leader = clients.leader_address(ctx, topic)
    records.produce(leader, topic, records.batch(3))
    follower = clients.other_address(ctx, leader)

    def caught_up():
        answer = records.fetch(follower, [(topic, 0, 0, 1 << 20)])
        return answer if answer[0]["error"] != "NONE" or answer[0]["complete_records"] else None

    return clients.wait_for(caught_up, "the follower to serve the records", ctx.timeout_s)


@scenario("fetch-byte-limits", "Fetch")
def fetch_byte_limits(ctx: Context) -> object:
    """Five 10 KB batches: a fetch limited to 25,000 bytes, one whose partition limit is below
    the first batch (which comes whole), and Fetch v4 (no log start offset)."""
    topic = clients.create_topic(ctx, "t")
    leader = clients.leader_address(ctx, topic)
    for _ in range(5):
        records.produce(leader, topic, records.batch(1, 10_000))
    return {"max 25000": records.fetch(leader, [(topic, 0, 0, 1 << 20)], max_bytes=25_000),
            "partition max 100": records.fetch(leader, [(topic, 0, 0, 100)]),
            "v4": records.fetch(leader, [(topic, 0, 1, 15_000)], version=4)}


@scenario("fetch-limit-across-partitions", "Fetch")
def fetch_limit_across_partitions(ctx: Context) -> object:
    """KIP-74: two partitions with 30 KB each and a fetch limit of 40 KB; and
    fetch.max.bytes=1,000,000 with max.partition.fetch.bytes=20,000,000 over 3 MB (what
    confluent-kafka asks with those settings): the response stays within the fetch limit."""
    topic = clients.create_topic(ctx, "t", assignment=[[1, 2, 3], [1, 3, 2]])
    leaders = [clients.leader_address(ctx, topic, p) for p in (0, 1)]
    for p in (0, 1):
        for _ in range(3):
            records.produce(leaders[p], topic, records.batch(1, 10_000), partition=p)
    big = clients.create_topic(ctx, "big")
    leader = clients.leader_address(ctx, big)
    for _ in range(6):
        records.produce(leader, big, records.batch(5, 100_000))
    two = leaders[0] == leaders[1]
    return {"two partitions": records.fetch(leaders[0], [(topic, 0, 0, 1 << 20),
                                                        (topic, 1, 0, 1 << 20)],
                                            max_bytes=40_000) if two else "different leaders",
            "one partition": records.fetch(leaders[0], [(topic, 0, 0, 1 << 20)],
                                           max_bytes=40_000),
            "1e6 / 2e7": records.fetch(leader, [(big, 0, 0, 20_000_000)],
                                       max_bytes=1_000_000)}


@scenario("list-offsets", "ListOffsets")
def list_offsets(ctx: Context) -> object:
    """Records at 1000 ms steps: earliest, latest, by timestamp (before, exact, between, after
    all) through raw ListOffsets v6 and v1, and AdminClient.list_offsets."""
    topic = clients.create_topic(ctx, "t", replication=3)
    leader = clients.leader_address(ctx, topic)
    for i in range(3):
        records.produce(leader, topic, records.batch(1, timestamp=records.TS + 1000 * i))
    ts = records.TS
    out = {"v6": records.list_offsets(leader, topic, [-2, -1, ts - 5, ts + 1000, ts + 1500,
                                                      ts + 9000]),
           "v1": records.list_offsets(leader, topic, [-2, -1, ts + 1000], version=1),
           "follower": records.list_offsets(clients.other_address(ctx, leader), topic, [-1]),
           "fenced epoch": records.list_offsets(leader, topic, [-1], current_leader_epoch=7),
           "unknown partition": records.list_offsets(leader, topic, [-1], partition=3)}
    client = clients.admin(ctx)
    tp = TopicPartition(topic, 0)
    for name, spec in (("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest()),
                       ("ts+1500", OffsetSpec.for_timestamp(ts + 1500))):
        result = clients.outcome(client.list_offsets({tp: spec})[tp], ctx.timeout_s)
        out[f"admin {name}"] = result if isinstance(result, dict) else [result.offset,
                                                                         result.timestamp]
    return out


@scenario("consumer-offsets-for-times", "ListOffsets")
def consumer_offsets_for_times(ctx: Context) -> object:
    """Consumer.offsets_for_times and get_watermark_offsets."""
    topic = clients.create_topic(ctx, "t")
    clients.produce(ctx, topic, ["a", "b", "c"],
                    timestamps=[records.TS, records.TS + 10, records.TS + 20])
    c = clients.consumer(ctx)
    try:
        found = c.offsets_for_times([TopicPartition(topic, 0, records.TS + 5),
                                     TopicPartition(topic, 0, records.TS + 99)],
                                    ctx.timeout_s)
        return {"for times": [tp.offset for tp in found],
                "watermarks": list(c.get_watermark_offsets(TopicPartition(topic, 0),
                                                           ctx.timeout_s))}
    finally:
        c.close()


@scenario("offset-for-leader-epoch", "OffsetForLeaderEpoch")
def offset_for_leader_epoch(ctx: Context) -> object:
    """Three records in epoch 0: the end offset of epoch 0, of a later epoch, with a current
    epoch that is too new and one that is old; at a follower; of an unknown partition."""
    topic = clients.create_topic(ctx, "t", replication=3)
    leader = clients.leader_address(ctx, topic)
    records.produce(leader, topic, records.batch(3))
    return {"at leader": records.offset_for_leader_epoch(
                leader, topic, [(-1, 0), (0, 0), (-1, 1), (-1, 5), (3, 0)]),
            "follower": records.offset_for_leader_epoch(clients.other_address(ctx, leader),
                                                        topic, [(-1, 0)]),
            "unknown partition": records.offset_for_leader_epoch(leader, topic, [(-1, 0)],
                                                                 partition=4)}


@scenario("offset-for-leader-epoch-empty", "OffsetForLeaderEpoch")
def offset_for_leader_epoch_empty(ctx: Context) -> object:
    """An empty partition: epoch 0 and epoch -1 (no epoch asked)."""
    topic = clients.create_topic(ctx, "t")
    leader = clients.leader_address(ctx, topic)
    return records.offset_for_leader_epoch(leader, topic, [(-1, 0), (-1, -1), (0, 0)])


@scenario("idempotent-producer", "InitProducerId", "Produce")
def idempotent_producer(ctx: Context) -> object:
    """enable.idempotence: the producer gets an id and its records land once, in order; a raw
    InitProducerId v4 without a transactional id."""
    topic = clients.create_topic(ctx, "t", replication=3)
    delivered = clients.produce(ctx, topic, [f"v{i}" for i in range(4)],
                                enable_idempotence=True)
    answer = raw.call(ctx.addresses[0], 22, 4, {"transactional_id": None,
                                                 "transaction_timeout": 60000,
                                                 "producer_id": -1, "producer_epoch": -1})
    return {"delivered": delivered, "read": [r.get("value") for r in
                                             clients.consume_all(ctx, topic, 4)],
            "init": answer}


@scenario("transactional-coordinator", "FindCoordinator", "InitProducerId")
def transactional_coordinator(ctx: Context) -> object:
    """FindCoordinator for a transactional id, then InitProducerId with it at the coordinator
    (the transaction coordinator of each system)."""
    tid = ctx.name("tx")
    found = _find_transaction_coordinator(ctx, tid)
    out = {"find": {"error": found["error_code"]}}
    if found["error_code"] != "NONE":
        return out

    def init():
        # as a client does: NOT_COORDINATOR (a broker named leader of the new topic's
        # partition before it took the role -- seen on Kafka right after the topic's creation)
        # sends it back to FindCoordinator
        where = _find_transaction_coordinator(ctx, tid)
        if where["error_code"] != "NONE":
            return None
        answer = raw.call(f"{where['host']}:{where['port']}", 22, 4, {
            "transactional_id": tid, "transaction_timeout": 60000, "producer_id": -1,
            "producer_epoch": -1})
        return answer if answer["error_code"] not in ("COORDINATOR_LOAD_IN_PROGRESS",
                                                       "COORDINATOR_NOT_AVAILABLE",
                                                       "NOT_COORDINATOR") else None

    out["init"] = clients.wait_for(init, "InitProducerId to be served", ctx.timeout_s, 0.2)
    return out


def _find_transaction_coordinator(ctx: Context, tid: str) -> dict:
    """FindCoordinator(key_type=1) until it stops answering COORDINATOR_NOT_AVAILABLE (Kafka
    creates __transaction_state on the first lookup), or its last answer after 10 s."""
    last: dict = {}

    def found():
        last.update(raw.call(ctx.addresses[0], 10, 3, {"key": tid, "key_type": 1}))
        return last["error_code"] != "COORDINATOR_NOT_AVAILABLE"

    try:
        clients.wait_for(found, "the transaction coordinator", 10, 0.25)
    except clients.ScenarioError:
        pass
    return last
