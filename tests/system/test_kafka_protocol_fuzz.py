"""Kafka-protocol fuzz against three real broker processes, with real clients working beside it.

A few thousand mutated Kafka request frames (see kafka_fuzz_tools), each on a raw socket of its
own, go to the brokers of a 3-broker cluster while a confluent-kafka producer (acks=all,
idempotent) and consumer work on a replicated topic (rf 3, min.insync.replicas 2). Afterwards:
every broker process is alive and answers Metadata on both protocols, no answer was malformed or
out of order, no broker logged an error (an unexpected handler failure, a response it could not
encode, an unhandled Deferred), the live clients kept making progress through the fuzz, and
every record the producer had acknowledged is readable, once and where it was acknowledged.

``bench/kafka_fuzz.py`` runs the same with a configurable case count and prints cases/s.
"""

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.protocol import messages as m
from kafkalite.testing.cluster import request, wait_until

from kafka_fuzz_tools import (LiveTraffic, broker_answers_metadata, log_sizes, run_fuzz,
                              unexpected_errors, verify_live)

pytestmark = [pytest.mark.system, pytest.mark.slow]

CASES = 8000
LIVE_TOPIC, LIVE_PARTITIONS = "live", 3
FUZZ_TOPIC = "fuzz-target"


def create_topics(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([
        NewTopic(LIVE_TOPIC, LIVE_PARTITIONS, 3, config={"min.insync.replicas": "2"}),
        NewTopic(FUZZ_TOPIC, 1, 3)], operation_timeout=30)
    for future in futures.values():
        future.result(60)


def test_kafka_protocol_fuzz_leaves_brokers_and_live_clients_unharmed(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(3, replica_lag_time_max_ms=10000)
    bootstrap = cluster.bootstrap_servers
    create_topics(bootstrap)
    for p in range(LIVE_PARTITIONS):
        wait_until(lambda: cluster.leader_of(LIVE_TOPIC, p) > 0, 60, f"a leader for {p}")
    live = LiveTraffic(bootstrap, LIVE_TOPIC, LIVE_PARTITIONS).start()
    wait_until(lambda: min(live.counts()) > 200, 60, "the live clients under way")
    before = live.counts()

    ports = [b.port for b in cluster.brokers.values()]
    logs = log_sizes([b.log_path for b in cluster.brokers.values()])
    try:
        report = run_fuzz(ports, FUZZ_TOPIC, CASES)
        during = live.counts()
        errors_logged = unexpected_errors(logs)
        dead = [b.broker_id for b in cluster.brokers.values() if not b.running]
        assert not dead, (f"brokers {dead} died in the fuzz ({report.summary()}):\n"
                          f"{cluster.describe_logs()}")
        # the clients keep going after the fuzz too
        wait_until(lambda: min(live.counts()) > min(during) + 200, 60, "more live traffic")
    finally:
        live.stop()

    print(f"\nkafka fuzz: {report.summary()}\n  by kind: {dict(report.kinds)}"
          f"\n  live producer: sent {live.sent}, acknowledged {len(live.acked)}, failed "
          f"{len(live.failed)}; consumer read {len(live.consumed)} "
          f"(acked/read {before} before the fuzz, {during} right after)")

    for broker in cluster.brokers.values():
        assert broker_answers_metadata(broker.port), broker.broker_id
        native = request("127.0.0.1", broker.port, m.MetadataRequest(topics=[LIVE_TOPIC]))
        assert native.topics[0].error_code == 0, native
    assert not errors_logged, "the brokers logged errors in the fuzz:\n" + "\n".join(
        errors_logged[:10])
    assert not report.errors, f"connections failed: {report.errors[:5]}"
    assert not report.problems, f"{len(report.problems)} bad answers: {report.problems[:5]}"
    assert report.cases == CASES - report.skipped_heavy
    assert during[0] > before[0] and during[1] > before[1], "live clients stalled in the fuzz"
    assert not live.failed, f"{len(live.failed)} records failed: {live.failed[:3]}"
    problems = verify_live(live)
    assert not problems, problems


def _call(port, api_key, version, values, correlation_id=1):
    import socket
    import struct

    from kafkalite.protocol.kafka import codec

    payload = codec.encode_request(api_key, version, correlation_id, "edge", values)
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(1 << 16)
            assert chunk, "the broker closed the connection instead of answering"
            data += chunk
    cid, body = codec.decode_response(api_key, version, data[4:])
    assert cid == correlation_id
    return body


def test_negative_timeouts_are_answered_not_fatal_to_the_request(kafkalite_cluster_factory):
    """Found by the fuzz (when the followers were slower than the leader): an acks=all Produce
    with a negative timeout was appended, then the purgatory refused the negative delay, so the
    client got a closed connection for records that were in the log. Kafka expires such a wait at
    once; so does kafkalite's Kafka-protocol path now. Same for DeleteRecords."""
    from kafka_fuzz_tools import record_batch

    cluster = kafkalite_cluster_factory(2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("edge", 1, 2)])["edge"].result(60)
    del admin
    wait_until(lambda: cluster.leader_of("edge", 0) > 0, 60, "a leader")
    leader = cluster.brokers[cluster.leader_of("edge", 0)]
    for n, timeout in enumerate((-1, -(1 << 31), 0)):
        body = _call(leader.port, 0, 9, {
            "transactional_id": None, "acks": -1, "timeout": timeout, "topic_data": [
                {"name": "edge", "partition_data": [{"index": 0,
                                                     "records": record_batch(2, n)}]}]})
        result = body.responses[0].partition_responses[0]
        # replicated at once or not: either way an answer, for the batch that is in the log
        assert result.error_code.value in (0, 7), result      # 7: REQUEST_TIMED_OUT
    body = _call(leader.port, 21, 2, {"topics": [
        {"name": "edge", "partitions": [{"partition_index": 0, "offset": 1}]}],
        "timeout": -1})
    assert body.topics[0].partitions[0].error_code.value in (0, 7), body
    assert leader.running
