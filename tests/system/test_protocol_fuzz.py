"""Mutation fuzz of three real brokers over both protocols they speak on one port, with real
clients working beside it; and the broker bugs it found, each kept as a deterministic test.

The fuzz (tests/system/protocol_fuzz_session.py) interleaves mutated Kafka request frames and
mutated native ones: frames recorded from a real kafkalite client session (producers, consumers,
a broker group, the admin client), the controller's own LeaderAndIsr, UpdateMetadata and
StopReplica (recorded through a stand-in broker, mutated in their fields) and controller requests
that ZooKeeper does not back, each case on a raw socket of its own, while confluent-kafka and
kafkalite's own producer (acks=all) and consumer work on replicated topics (rf 3,
min.insync.replicas 2). What the broker owes each Kafka frame is decided by kio's own readers
(fuzz_kio): an answer, in order, that kio decodes, and a close only where Kafka closes.
Afterwards every broker must be alive and answering Metadata on both protocols, no answer
malformed or out of order, no connection closed where an answer was owed, no error in the broker
logs, the live clients still going, every acknowledged record readable once where it was
acknowledged, no partition advertised that its leader does not host, and ZooKeeper whole
(assignments 0..n-1 with live leaders, live topics unchanged, no forged controller epoch written,
the brokers agreeing with it). At most 1% of the cases may be left out unsent.

Each run takes a fresh seed and prints it first; ``KAFKALITE_FUZZ_SEED=<seed>`` replays it.

``bench/protocol_fuzz.py`` runs the same with a configurable case count and prints cases/s.
"""

import re
import socket
import struct

import pytest
from confluent_kafka.admin import AdminClient as KafkaAdminClient, NewTopic as KafkaNewTopic

from kafkalite import AdminClient, NewTopic
from kafkalite.errors import BrokerNotAvailableError, StaleBrokerEpochError
from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import encode_request
from kafkalite.local.cluster import request, wait_until
from kafkalite.zk import ZkClient

from protocol_fuzz_session import CLUSTER_OVERRIDES, SEED_VARIABLE, fresh_seed, run_session

pytestmark = [pytest.mark.system, pytest.mark.slow]

CASES = 15000     # ~50 s on an idle 2-core machine (~470 cases/s); ~3 min under a heavy load


def test_protocol_fuzz_leaves_brokers_zookeeper_and_live_clients_unharmed(
        kafkalite_cluster_factory):
    seed = fresh_seed()
    # printed first, so that even a run that dies says how to replay it (pytest shows it with
    # the failure): KAFKALITE_FUZZ_SEED=<seed> pytest tests/system/test_protocol_fuzz.py
    print(f"\nprotocol fuzz seed {seed} (replay with {SEED_VARIABLE}={seed})", flush=True)
    cluster = kafkalite_cluster_factory(3, **{k.replace(".", "_"): v
                                              for k, v in CLUSTER_OVERRIDES.items()})
    result = run_session(cluster, CASES, seed)
    print("protocol fuzz:\n" + result.describe())
    assert result.report.cases + sum(result.report.left_out.values()) == CASES, \
        f"seed {seed}: {result.report.summary()}"
    result.check()


def _call(port, api_key, version, values, correlation_id=1):
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
    admin = KafkaAdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([KafkaNewTopic("edge", 1, 2)])["edge"].result(60)
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
    # DeleteRecords below the high watermark (above it is OFFSET_OUT_OF_RANGE, rightly): wait
    # for the followers to have replicated the timed-out produces
    wait_until(lambda: _call(leader.port, 2, 6, {
        "replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "edge", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
        ).topics[0].partitions[0].offset >= 6, 30, "the high watermark past the records")
    body = _call(leader.port, 21, 2, {"topics": [
        {"name": "edge", "partitions": [{"partition_index": 0, "offset": 1}]}],
        "timeout": -1})
    assert body.topics[0].partitions[0].error_code.value in (0, 7), body
    assert leader.running


# --- reproductions of what the fuzz found --------------------------------------------------------

@pytest.fixture
def shutdown_target(kafkalite_cluster_factory):
    """A 3-broker cluster with a replicated topic in sync, a ZkClient, and a broker that is not
    the controller: (cluster, zk, controller id, target id)."""
    cluster = kafkalite_cluster_factory(3)
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("cs", 3, 3, topic_configs={"min.insync.replicas": "2"})],
                            timeout_ms=60000)
    zk = ZkClient(cluster.zk_connect).start()
    try:
        controller = zk.get_controller_id()
        wait_until(lambda: all(len(zk.get_partition_state("cs", p).isr) == 3 for p in range(3)),
                   60, "every replica in sync")
        target = min(b for b in cluster.brokers if b != controller)
        yield cluster, zk, controller, target
    finally:
        zk.stop()


def _states(zk):
    return {p: (s.leader, s.leader_epoch, s.isr)
            for p, s in ((p, zk.get_partition_state("cs", p)) for p in range(3))}


def test_forged_controlled_shutdown_without_broker_epoch_is_refused(shutdown_target):
    """Found by the fuzz ("forged-controlled-shutdown", native protocol, to the controller):

        0000003095070001b16b61666b616c6974652d74657374696e6782a962726f6b65725f696402
        ac62726f6b65725f65706f6368ff

    is ControlledShutdownRequest(broker_id=2, broker_epoch=-1), correlation id 1 (here with the
    target broker's id). The controller skipped the epoch check for a negative one, so anyone
    who reached a port made it move a healthy broker's leaderships away, drop it from every ISR
    and send it StopReplica; the broker then stayed "shutting down" (elected nowhere, not even
    for new partitions) until it registered again, and two such frames left one replica per
    ISR: acks=all with min.insync.replicas=2 stalled. kafkalite's brokers always send their
    registration's epoch, so nothing else may be accepted."""
    cluster, zk, controller, target = shutdown_target
    before = _states(zk)
    forged = m.ControlledShutdownRequest(broker_id=target, broker_epoch=-1)
    answer = request("127.0.0.1", cluster.brokers[controller].port, forged)
    after = _states(zk)
    assert answer.error_code != 0, (
        f"{encode_request(forged, 0, 1, 'kafkalite-testing').hex()} was answered with "
        f"{answer}; partition states {before} -> {after}")
    assert after == before


def test_refused_controlled_shutdown_is_logged_as_a_warning(shutdown_target):
    """Found by the fuzz ("refused-controlled-shutdown-logged"): a ControlledShutdown the
    controller refuses (a stale broker epoch, a broker that is not registered) is answered with
    its error, and was also logged as "ERROR controller: event controlled_shutdown failed" with
    a traceback: any client could fill the controller's log with errors, which an operator
    reads as a broken controller (Kafka answers the error and logs nothing)."""
    cluster, zk, controller, target = shutdown_target
    port = cluster.brokers[controller].port
    stale = m.ControlledShutdownRequest(broker_id=target,
                                        broker_epoch=zk.get_broker(target).broker_epoch - 1)
    assert request("127.0.0.1", port, stale).error_code == StaleBrokerEpochError.code
    unknown = m.ControlledShutdownRequest(broker_id=99, broker_epoch=5)
    assert request("127.0.0.1", port, unknown).error_code == BrokerNotAvailableError.code
    log = cluster.brokers[controller].log_tail(400)
    errors_logged = [line for line in log.splitlines() if re.search(r"\] ERROR ", line)]
    assert not errors_logged, errors_logged
