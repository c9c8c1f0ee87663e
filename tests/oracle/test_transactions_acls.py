"""Transactions under ACLs (issue 22, item 6) on a secured kafkalite cluster and a secured Apache
Kafka 2.8.2 cluster with the same settings (``testing.secure_cluster``: SASL_SSL with SCRAM,
AclAuthorizer, ``admin`` a super user), judged by confluent-kafka logging in as alice or bob, and
by raw requests (over the same SASL_SSL listener, PLAIN) where the exact error code matters.

Each scenario runs on both systems (a module fixture per system) and holds each to what Kafka
2.8's KafkaApis answers, so both answer the same:

- no ACLs: FindCoordinator(transaction) and init_transactions ->
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
- Describe only on the TransactionalId: FindCoordinator answers, InitProducerId is refused;
- Write on the TransactionalId only: AddPartitionsToTxn -> TOPIC_AUTHORIZATION_FAILED and the
  transaction becomes abortable;
- Write on the id and the topic: the commit works, admin reads the records with read_committed;
- send_offsets_to_transaction without Read on the group -> GROUP_AUTHORIZATION_FAILED;
- an idempotent producer (bob): neither IdempotentWrite nor Write on a topic ->
  CLUSTER_AUTHORIZATION_FAILED; IdempotentWrite on the cluster, or Write on a topic -> allowed;
- Produce asks about the transactional id only for transactional records;
- TxnOffsetCommit: the transactional id, then the group, then the topics;
- WriteTxnMarkers from alice -> CLUSTER_AUTHORIZATION_FAILED for every partition;
- kafka-acls (and on kafkalite ``kafkalite acls``) adding ``--transactional-id`` and
  ``--idempotent`` ACLs lists the same on both.

ACLs reach the authorizer's cache asynchronously: each grant is waited for with DescribeAcls (one
broker: the cache that answers it is the one that authorizes).
"""

from __future__ import annotations

import itertools
import socket
import ssl
import struct
import subprocess
import sys
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, NewTopic, ResourcePatternType, ResourceType)

from kafkalite.local.cluster import wait_until
from kafkalite.protocol.kafka import codec
from kafkalite.testing.apache_kafka import run_tool
from kafkalite.testing.conformance.raw import plain
from kafkalite.testing.secure_cluster import PASSWORDS, secure_apache_kafka, secure_cluster

pytestmark = [pytest.mark.integration]

TIMEOUT_S = 60
# one broker per system: the ACL checks do not depend on replication, and both systems start
# their internal topics with replication factor 1
OVERRIDES = {"offsets.topic.replication.factor": 1, "offsets.topic.num.partitions": 3,
             "transaction.state.log.replication.factor": 1,
             "transaction.state.log.min.isr": 1, "transaction.state.log.num.partitions": 3,
             "group.initial.rebalance.delay.ms": 0}
_correlation = itertools.count(1)


@pytest.fixture(scope="module", params=["kafkalite", "kafka"])
def system(request, zookeeper, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp(f"txn-acls-{request.param}"))
    start = secure_cluster if request.param == "kafkalite" else secure_apache_kafka
    with start(zookeeper, workdir, num_brokers=1, name=f"txn-acls-{request.param}",
               overrides=dict(OVERRIDES)) as cluster:
        cluster.extra["name"] = request.param
        admin = AdminClient(cluster.librdkafka("admin"))
        topic = "acl-out"
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
        wait_until(lambda: _leader_known(admin, topic), TIMEOUT_S, f"{topic} to have a leader")
        yield cluster


def _leader_known(admin: AdminClient, topic: str) -> bool:
    metadata = admin.list_topics(topic, timeout=10).topics.get(topic)
    return metadata is not None and not metadata.error and all(
        p.leader >= 0 for p in metadata.partitions.values())


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# --- ACLs ---------------------------------------------------------------------------------------

def _binding(user: str, resource_type, name: str, operation) -> AclBinding:
    return AclBinding(resource_type, name, ResourcePatternType.LITERAL, f"User:{user}", "*",
                      operation, AclPermissionType.ALLOW)


def _grant(system, *bindings: AclBinding) -> None:
    admin = AdminClient(system.librdkafka("admin"))
    for future in admin.create_acls(list(bindings)).values():
        future.result(TIMEOUT_S)
    wanted = set(bindings)
    wait_until(lambda: wanted <= set(_described(admin)), TIMEOUT_S, f"ACLs {bindings} listed")


def _revoke(system, *bindings: AclBinding) -> None:
    admin = AdminClient(system.librdkafka("admin"))
    filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host,
                                b.operation, b.permission_type) for b in bindings]
    for future in admin.delete_acls(filters).values():
        future.result(TIMEOUT_S)
    gone = set(bindings)
    wait_until(lambda: not gone & set(_described(admin)), TIMEOUT_S, f"ACLs {bindings} gone")


def _described(admin: AdminClient) -> list[AclBinding]:
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    return admin.describe_acls(everything).result(TIMEOUT_S)


# --- raw requests as a user (TLS, SASL PLAIN) ---------------------------------------------------

def _frame(sock, api_key: int, version: int, body: dict) -> dict:
    correlation_id = next(_correlation)
    payload = codec.encode_request(api_key, version, correlation_id, "txn-acls", body)
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size = struct.unpack(">i", _read(sock, 4))[0]
    got, entity = codec.decode_response(api_key, version, _read(sock, size))
    assert got == correlation_id
    return plain(entity)


def _read(sock, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def raw_as(system, user: str, api_key: int, version: int, body: dict) -> dict:
    """One request on a connection authenticated as ``user`` (SaslHandshake v1 PLAIN,
    SaslAuthenticate v1), its answer as plain data."""
    host, port = system.bootstrap.split(",")[0].rsplit(":", 1)
    context = ssl.create_default_context(cafile=system.ca_path)
    with socket.create_connection((host, int(port)), timeout=30) as tcp, \
            context.wrap_socket(tcp, server_hostname=host) as sock:
        handshake = _frame(sock, 17, 1, {"mechanism": "PLAIN"})
        assert handshake["error_code"] == "NONE", handshake
        token = b"\0" + user.encode() + b"\0" + PASSWORDS[user].encode()
        authenticated = _frame(sock, 36, 1, {"auth_bytes": token})
        assert authenticated["error_code"] == "NONE", authenticated
        return _frame(sock, api_key, version, body)


def _settled(call, what: str, retried=("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
                                        "COORDINATOR_LOAD_IN_PROGRESS",
                                        "CONCURRENT_TRANSACTIONS")) -> dict:
    last = {}

    def done():
        last.clear()
        last.update(call())
        return last.get("error_code") not in retried
    wait_until(done, TIMEOUT_S, what, interval_s=0.2)
    return last


def find_txn_coordinator(system, user: str, tid: str) -> dict:
    answer = _settled(lambda: raw_as(system, user, 10, 3, {"key": tid, "key_type": 1}),
                      f"FindCoordinator({tid})")
    return {k: answer[k] for k in ("error_code", "error_message", "node_id")}


def init_producer_id(system, user: str, tid: str | None) -> dict:
    """InitProducerId v4 to the one broker; with a transactional id, after FindCoordinator
    found it (which creates __transaction_state)."""
    if tid is not None:
        find_txn_coordinator(system, user, tid)
    answer = _settled(lambda: raw_as(system, user, 22, 4, {
        "transactional_id": tid, "transaction_timeout": 60000, "producer_id": -1,
        "producer_epoch": -1}), f"InitProducerId({tid})")
    return answer


# --- confluent-kafka ----------------------------------------------------------------------------

def _producer(system, user: str, **settings) -> Producer:
    return Producer(system.librdkafka(user, **settings, **{"log_level": 0}))


def _code(exc: KafkaException) -> tuple:
    error: KafkaError = exc.args[0]
    return error.name(), error.txn_requires_abort(), error.fatal()


# --- the scenarios ------------------------------------------------------------------------------

def test_without_acls_the_transactional_id_is_refused(system):
    tid = _unique("tx-none")
    assert find_txn_coordinator(system, "alice", tid) == {
        "error_code": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "error_message": "Transactional Id authorization failed.", "node_id": -1}
    producer = _producer(system, "alice", **{"transactional.id": tid})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(TIMEOUT_S)
    assert _code(refused.value) == ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False, True)


def test_describe_only_finds_the_coordinator_but_init_producer_id_is_refused(system):
    tid = _unique("tx-describe")
    _grant(system, _binding("alice", ResourceType.TRANSACTIONAL_ID, tid, AclOperation.DESCRIBE))
    assert find_txn_coordinator(system, "alice", tid)["error_code"] == "NONE"
    answer = init_producer_id(system, "alice", tid)
    assert (answer["error_code"], answer["producer_id"], answer["producer_epoch"]) == (
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", -1, -1)
    producer = _producer(system, "alice", **{"transactional.id": tid})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(TIMEOUT_S)
    assert _code(refused.value) == ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False, True)
    # the other coordinator requests need Write too, before anything else is looked at
    ids = {"producer_id": 4242, "producer_epoch": 0}
    added = raw_as(system, "alice", 24, 1, {
        "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": 4242,
        "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": "acl-out", "partitions": [0]}]})
    offsets = raw_as(system, "alice", 25, 3, {"transactional_id": tid, **ids,
                                              "group_id": _unique("g")})
    ended = raw_as(system, "alice", 26, 3, {"transactional_id": tid, **ids, "committed": True})
    assert ([p["partition_error_code"] for t in added["results_by_topic_v3_and_below"]
             for p in t["results_by_partition"]],
            offsets["error_code"], ended["error_code"]) == (
        ["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"], "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")


def test_write_on_the_id_without_topic_write_makes_the_transaction_abortable(system):
    tid = _unique("tx-notopic")
    _grant(system, _binding("alice", ResourceType.TRANSACTIONAL_ID, tid, AclOperation.WRITE))
    # the exact answer: the refused topic, and a topic that does not exist (no Write on it
    # either: refused too, not UNKNOWN_TOPIC_OR_PARTITION)
    pid = init_producer_id(system, "alice", tid)
    assert pid["error_code"] == "NONE"
    added = raw_as(system, "alice", 24, 1, {
        "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid["producer_id"],
        "v3_and_below_producer_epoch": pid["producer_epoch"],
        "v3_and_below_topics": [{"name": "acl-out", "partitions": [0]},
                                {"name": "no-such-topic", "partitions": [0]}]})
    assert sorted((t["name"], p["partition_index"], p["partition_error_code"])
                  for t in added["results_by_topic_v3_and_below"]
                  for p in t["results_by_partition"]) == [
        ("acl-out", 0, "TOPIC_AUTHORIZATION_FAILED"),
        ("no-such-topic", 0, "TOPIC_AUTHORIZATION_FAILED")]
    # and through librdkafka
    producer = _producer(system, "alice", **{"transactional.id": tid})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    delivered = []
    producer.produce("acl-out", b"v", on_delivery=lambda err, _msg: delivered.append(err))
    with pytest.raises(KafkaException) as refused:
        producer.commit_transaction(TIMEOUT_S)
    # librdkafka's commit names the failed delivery (_INCONSISTENT, "1 message(s) failed
    # delivery"); the record's own report carries the broker's error
    assert _code(refused.value) == ("_INCONSISTENT", True, False), refused.value
    producer.abort_transaction(TIMEOUT_S)
    producer.flush(TIMEOUT_S)
    assert [e.name() if e else None for e in delivered] == ["TOPIC_AUTHORIZATION_FAILED"]


def test_write_on_the_id_and_the_topic_commits(system):
    tid = _unique("tx-ok")
    _grant(system, _binding("alice", ResourceType.TRANSACTIONAL_ID, tid, AclOperation.WRITE),
           _binding("alice", ResourceType.TOPIC, "acl-out", AclOperation.WRITE))
    producer = _producer(system, "alice", **{"transactional.id": tid})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    values = [f"{tid}-{i}".encode() for i in range(3)]
    for value in values:
        producer.produce("acl-out", value)
    producer.commit_transaction(TIMEOUT_S)
    consumer = Consumer(system.librdkafka("admin", **{
        "group.id": _unique("reader"), "auto.offset.reset": "earliest",
        "isolation.level": "read_committed", "enable.auto.commit": False}))
    consumer.assign([TopicPartition("acl-out", 0, 0)])
    seen = []
    try:
        def read_all():
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                seen.append(message.value())
            return set(values) <= set(seen)
        wait_until(read_all, TIMEOUT_S, "the committed records read with read_committed",
                   interval_s=0)
    finally:
        consumer.close()
    assert [v for v in seen if v.startswith(tid.encode())] == values


def test_a_prefixed_acl_covers_the_transactional_ids_it_begins(system):
    prefix = _unique("tx-pfx") + "-"
    _grant(system, AclBinding(ResourceType.TRANSACTIONAL_ID, prefix, ResourcePatternType.PREFIXED,
                              "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW))
    assert init_producer_id(system, "alice", prefix + "one")["error_code"] == "NONE"
    assert find_txn_coordinator(system, "alice", "other-" + prefix)["error_code"] == \
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def test_send_offsets_without_group_read_is_refused(system):
    tid, group = _unique("tx-offsets"), _unique("g-none")
    _grant(system, _binding("alice", ResourceType.TRANSACTIONAL_ID, tid, AclOperation.WRITE),
           _binding("alice", ResourceType.TOPIC, "acl-out", AclOperation.WRITE))
    producer = _producer(system, "alice", **{"transactional.id": tid})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce("acl-out", b"x")
    consumer = Consumer(system.librdkafka("alice", **{"group.id": group, "log_level": 0}))
    try:
        metadata = consumer.consumer_group_metadata()
        with pytest.raises(KafkaException) as refused:
            producer.send_offsets_to_transaction([TopicPartition("acl-out", 0, 1)], metadata,
                                                 TIMEOUT_S)
    finally:
        consumer.close()
    assert _code(refused.value)[0] == "GROUP_AUTHORIZATION_FAILED"
    assert refused.value.args[0].txn_requires_abort()
    producer.abort_transaction(TIMEOUT_S)


def test_an_idempotent_producer_needs_idempotent_write_or_write_on_a_topic(system):
    """bob, who has no ACL before this test: InitProducerId without a transactional id."""
    answers = [init_producer_id(system, "bob", None)["error_code"]]
    idempotent = _binding("bob", ResourceType.BROKER, "kafka-cluster",
                          AclOperation.IDEMPOTENT_WRITE)
    _grant(system, idempotent)
    answers.append(init_producer_id(system, "bob", None)["error_code"])
    _revoke(system, idempotent)
    answers.append(init_producer_id(system, "bob", None)["error_code"])
    # Write on any one topic is enough (Kafka's authorizeByResourceType), even one that
    # does not exist
    _grant(system, _binding("bob", ResourceType.TOPIC, _unique("elsewhere"), AclOperation.WRITE))
    answers.append(init_producer_id(system, "bob", None)["error_code"])
    assert answers == ["CLUSTER_AUTHORIZATION_FAILED", "NONE", "CLUSTER_AUTHORIZATION_FAILED",
                       "NONE"]
    # librdkafka's idempotent producer, with Write on the topic it writes
    _grant(system, _binding("bob", ResourceType.TOPIC, "acl-out", AclOperation.WRITE))
    producer = _producer(system, "bob", **{"enable.idempotence": True})
    delivered = []
    producer.produce("acl-out", b"idempotent", on_delivery=lambda e, m: delivered.append(e))
    assert producer.flush(TIMEOUT_S) == 0
    assert delivered == [None]
    # a DENY of Write on every topic (the literal wildcard) outweighs the topic ALLOWs
    _grant(system, AclBinding(ResourceType.TOPIC, "*", ResourcePatternType.LITERAL, "User:bob",
                              "*", AclOperation.WRITE, AclPermissionType.DENY))
    assert init_producer_id(system, "bob", None)["error_code"] == "CLUSTER_AUTHORIZATION_FAILED"


def _records(transactional: bool) -> bytes:
    """One v2 batch built by kafka-python (an independent encoder)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=transactional,
        producer_id=4242 if transactional else -1, producer_epoch=0 if transactional else -1,
        base_sequence=0 if transactional else -1, batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_000, key=None, value=b"raw", headers=[])
    return bytes(builder.build())


def test_produce_checks_the_transactional_id_only_for_transactional_records(system):
    """Kafka's handleProduceRequest: transactional records need a transactional id and Write
    on it (else every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED); beside plain
    records the transactional id is not asked about."""
    _grant(system, _binding("alice", ResourceType.TOPIC, "acl-out", AclOperation.WRITE))
    denied = _unique("tx-produce-denied")

    def produce(tid, transactional):
        answer = raw_as(system, "alice", 0, 8, {
            "transactional_id": tid, "acks": 1, "timeout": 30000,
            "topic_data": [{"name": "acl-out", "partition_data": [
                {"index": 0, "records": _records(transactional)}]}]})
        return [p["error_code"] for t in answer["responses"] for p in t["partition_responses"]]
    assert produce(denied, True) == ["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]
    assert produce(None, True) == ["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]
    assert produce(denied, False) == ["NONE"]


def test_txn_offset_commit_refusals(system):
    """TxnOffsetCommit: Write on the transactional id, then Read on the group, then Read on
    each topic, each refusal answered for every partition it covers."""
    tid, group = _unique("tx-toc"), _unique("g-toc")
    _grant(system, _binding("alice", ResourceType.TRANSACTIONAL_ID, tid, AclOperation.WRITE))

    def commit(transactional_id):
        answer = raw_as(system, "alice", 28, 3, {
            "transactional_id": transactional_id, "group_id": group, "producer_id": 4242,
            "producer_epoch": 0, "generation_id": -1, "member_id": "",
            "group_instance_id": None, "topics": [
                {"name": "acl-out", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                    "committed_leader_epoch": -1,
                                                    "committed_metadata": None}]}]})
        return [p["error_code"] for t in answer["topics"] for p in t["partitions"]]
    answers = [commit(_unique("tx-toc-denied")), commit(tid)]
    _grant(system, _binding("alice", ResourceType.GROUP, group, AclOperation.READ))
    answers.append(commit(tid))       # alice may write acl-out but not read it
    assert answers == [["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"],
                       ["GROUP_AUTHORIZATION_FAILED"], ["TOPIC_AUTHORIZATION_FAILED"]]


def test_write_txn_markers_from_a_client_is_refused(system):
    answer = raw_as(system, "alice", 27, 1, {"markers": [{
        "producer_id": 1000, "producer_epoch": 0, "transaction_result": True,
        "topics": [{"name": "acl-out", "partition_indexes": [0]}], "coordinator_epoch": 0}]})
    assert [(m["producer_id"], t["name"], p["partition_index"], p["error_code"])
            for m in answer["markers"] for t in m["topics"] for p in t["partitions"]] == [
        (1000, "acl-out", 0, "CLUSTER_AUTHORIZATION_FAILED")]


def test_kafka_acls_transactional_id_and_idempotent(system):
    """Kafka's own kafka-acls and kafkalite's acls command (over the PLAINTEXT listener, whose
    ANONYMOUS user is a super user): the --producer convenience with --transactional-id and
    --idempotent, then --list; the same listing on both systems (each held to Kafka's)."""
    plaintext = system.cluster.bootstrap_servers
    topic, tid = "acl-tool-topic", "acl-tool-tx"
    add = ["--add", "--producer", "--topic", topic, "--transactional-id", tid, "--idempotent"]
    run_tool("kafka-acls", "--bootstrap-server", plaintext, *add, "--allow-principal",
             "User:carol")
    # dave: on kafkalite through kafkalite's own acls command (it speaks kafkalite's native
    # protocol, so on Kafka kafka-acls again), the same options
    if system.extra["name"] == "kafkalite":
        _kafkalite_acls("--bootstrap-server", plaintext, *add, "--allow-principal", "User:dave")
    else:
        run_tool("kafka-acls", "--bootstrap-server", plaintext, *add, "--allow-principal",
                 "User:dave")
    carol = _listing(run_tool("kafka-acls", "--bootstrap-server", plaintext, "--list",
                              "--principal", "User:carol").stdout)
    dave = _listing(run_tool("kafka-acls", "--bootstrap-server", plaintext, "--list",
                             "--principal", "User:dave").stdout)
    if system.extra["name"] == "kafkalite":
        assert _listing(_kafkalite_acls("--bootstrap-server", plaintext, "--list",
                                        "--principal", "User:dave")) == dave
    assert dave == {resource: {line.replace("User:carol", "User:dave") for line in lines}
                    for resource, lines in carol.items()}
    assert carol == {
        f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)": {
            "(principal=User:carol, host=*, operation=WRITE, permissionType=ALLOW)",
            "(principal=User:carol, host=*, operation=DESCRIBE, permissionType=ALLOW)",
            "(principal=User:carol, host=*, operation=CREATE, permissionType=ALLOW)"},
        f"ResourcePattern(resourceType=TRANSACTIONAL_ID, name={tid}, patternType=LITERAL)": {
            "(principal=User:carol, host=*, operation=WRITE, permissionType=ALLOW)",
            "(principal=User:carol, host=*, operation=DESCRIBE, permissionType=ALLOW)"},
        "ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)": {
            "(principal=User:carol, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)"},
    }


def _kafkalite_acls(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "kafkalite", "acls", *args],
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout


def _listing(text: str) -> dict[str, set[str]]:
    """kafka-acls --list: resource -> its ACL lines (Kafka prints them in a set's order)."""
    resources: dict[str, set[str]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Current ACLs for resource `"):
            current = line[len("Current ACLs for resource `"):line.rindex("`")]
            resources[current] = set()
        elif line.startswith("(principal=") and current is not None:
            resources[current].add(line)
    return resources
