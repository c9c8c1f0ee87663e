"""DescribeConfigs / IncrementalAlterConfigs / AlterConfigs and DeleteRecords against real broker
processes: through the AdminClient and the ``kafkalite configs`` / ``delete-records`` commands."""

from __future__ import annotations

import json
import time

import pytest

from kafkalite import errors
from kafkalite.cli.main import main
from kafkalite.client.admin import AdminClient
from kafkalite.client.admin_configs import AlterConfigOp, ConfigResource
from kafkalite.client.consumer import Consumer
from kafkalite.client.producer import Producer
from kafkalite.client.structs import NewTopic, TopicPartition

pytestmark = pytest.mark.integration


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def wait_for(condition, timeout_s=30.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            value = condition()
        except errors.KafkaError as exc:
            value, last = None, exc
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last: {last})" if last else ""))


@pytest.fixture
def two_brokers(kafkalite_cluster_factory):
    return kafkalite_cluster_factory(2, **{"log.retention.hours": 100})


def _produce(servers, topic, n, acks="all"):
    with Producer(bootstrap_servers=servers, acks=acks, retries=0, linger_ms=0) as producer:
        futures = [producer.send(topic, value=b"v%d" % i, partition=0) for i in range(n)]
        producer.flush()
        return [f.get(30) for f in futures]


def test_configs_describe_alter_applied_live(two_brokers, capsys):
    servers = two_brokers.bootstrap_servers
    conn = ("--bootstrap-server", servers)
    with AdminClient(servers) as admin:
        admin.create_topics([NewTopic("cfg", 1, 2, topic_configs={"retention.ms": "60000"})])
        topic = ConfigResource("TOPIC", "cfg")
        described = admin.describe_configs([topic], include_synonyms=True)[topic.key]
        retention = described["retention.ms"]
        assert (retention.value, retention.source) == ("60000", "DYNAMIC_TOPIC_CONFIG")
        # Kafka's broker synonym of retention.ms is log.retention.ms alone (unset here), so
        # log.retention.hours is none of its synonyms, though it decides the broker default
        assert [tuple(s) for s in retention.synonyms] == [
            ("retention.ms", "60000", "DYNAMIC_TOPIC_CONFIG")]
        assert described["compression.type"].value == "producer"
        assert described["compression.type"].is_default

    code, out, err = run(capsys, "configs", "--describe", "--entity-type", "topics",
                         "--entity-name", "cfg", *conn)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Dynamic configs for topic cfg are:",
        "  retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000}"]

    # min.insync.replicas=3 on a topic with two replicas: acks=all fails once brokers apply it
    code, out, err = run(capsys, "configs", "--alter", "--topic", "cfg", "--add-config",
                         "min.insync.replicas=3,cleanup.policy=[compact,delete]",
                         "--delete-config", "retention.ms", *conn)
    assert (code, out, err) == (0, "Completed updating config for topic cfg.\n", "")

    def refused():
        try:
            _produce(servers, "cfg", 1)
        except errors.NotEnoughReplicasError:
            return True
        return False
    wait_for(refused, what="brokers to apply min.insync.replicas=3")

    code, out, _ = run(capsys, "configs", "--describe", "--topic", "cfg", *conn)
    assert out.splitlines()[1:] == [
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  min.insync.replicas=3 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "min.insync.replicas=3, DEFAULT_CONFIG:min.insync.replicas=1}"]

    code, out, _ = run(capsys, "configs", "--describe", "--topic", "cfg", "--all", *conn)
    lines = out.splitlines()
    assert lines[0] == "All configs for topic cfg are:"
    assert ("  compression.type=producer sensitive=false synonyms="
            "{DEFAULT_CONFIG:compression.type=producer}") in lines
    assert "  retention.ms=360000000 sensitive=false synonyms={}" in lines

    with AdminClient(servers) as admin:
        topic = ConfigResource("TOPIC", "cfg")
        admin.incremental_alter_configs({topic: [AlterConfigOp("min.insync.replicas", "DELETE"),
                                                 AlterConfigOp("cleanup.policy", "SUBTRACT",
                                                               "compact")]})
        wait_for(lambda: _produce(servers, "cfg", 1), what="acks=all to work again")
        # the legacy AlterConfigs replaces every override
        admin.alter_configs([ConfigResource("TOPIC", "cfg", {"segment.ms": "100000"})])
        overrides = {k: e.value for k, e in admin.describe_configs([topic])[topic.key].items()
                     if e.source == "DYNAMIC_TOPIC_CONFIG"}
        assert overrides == {"segment.ms": "100000"}
        with pytest.raises(errors.InvalidRequestError, match="Invalid value soon for "
                                                             "configuration retention.ms"):
            admin.incremental_alter_configs({topic: [AlterConfigOp("retention.ms", "SET",
                                                                   "soon")]})
        with pytest.raises(errors.InvalidRequestError, match="append is not allowed"):
            admin.incremental_alter_configs({topic: [AlterConfigOp("retention.ms", "APPEND",
                                                                   "5")]})
        with pytest.raises(errors.UnknownTopicOrPartitionError):
            admin.describe_configs([ConfigResource("TOPIC", "nope")])
        # a broker's configs come from that broker; broker.id is static
        for broker_id in (1, 2):
            resource = ConfigResource("BROKER", str(broker_id))
            configs = admin.describe_configs([resource])[resource.key]
            assert configs["broker.id"].value == str(broker_id)
            assert configs["broker.id"].source == "STATIC_BROKER_CONFIG"
            assert configs["broker.id"].read_only

    code, out, err = run(capsys, "configs", "--alter", "--broker", "1", "--add-config",
                         "log.retention.hours=1", *conn)
    assert code == 1 and "Cannot update these configs dynamically: Set(log.retention.hours)" in err
    code, out, _ = run(capsys, "configs", "--describe", "--entity-type", "brokers",
                       "--entity-default", *conn)
    assert (code, out) == (0, "Default configs for brokers in the cluster are:\n")
    code, out, err = run(capsys, "configs", "--alter", "--broker-logger", "2", "--add-config",
                         "kafkalite.server=DEBUG", *conn)
    assert (code, out) == (0, "Completed updating config for broker-logger 2.\n"), err
    code, out, _ = run(capsys, "configs", "--describe", "--broker-logger", "2", *conn)
    assert "  kafkalite.server=DEBUG sensitive=false synonyms={}" in out.splitlines()


def test_delete_records_moves_log_start_on_every_replica(two_brokers, capsys, tmp_path):
    servers = two_brokers.bootstrap_servers
    with AdminClient(servers) as admin:
        admin.create_topics([NewTopic("dr", 2, 2)])
    _produce(servers, "dr", 10)
    tp = TopicPartition("dr", 0)
    with AdminClient(servers) as admin:
        # the answer comes once the follower's log start offset reached 4 too
        assert admin.delete_records({tp: 4}, timeout_ms=20000) == {tp: 4}
        with pytest.raises(errors.OffsetOutOfRangeError):
            admin.delete_records({tp: 11})
        results = admin.delete_records({tp: 2, TopicPartition("dr", 1): -1,
                                        TopicPartition("nope", 0): 1}, raise_on_error=False)
        assert results[tp] == 4 and results[TopicPartition("dr", 1)] == 0
        assert isinstance(results[TopicPartition("nope", 0)],
                          errors.UnknownTopicOrPartitionError)

    consumer = Consumer(bootstrap_servers=servers, auto_offset_reset="earliest")
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 4}
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        records = []
        deadline = time.monotonic() + 20
        while len(records) < 6 and time.monotonic() < deadline:
            records += consumer.poll(500).get(tp, [])
        assert [r.offset for r in records] == list(range(4, 10))
    finally:
        consumer.close()

    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": "dr", "partition": 0, "offset": 7}],
                                   "version": 1}))
    code, out, err = run(capsys, "delete-records", "--bootstrap-server", servers,
                         "--offset-json-file", str(offsets))
    assert (code, err) == (0, "")
    assert out.splitlines() == ["Executing records delete operation",
                                "Records delete operation completed:",
                                "partition: dr-0\tlow_watermark: 7"]

    # the follower moved its log start too: after the leader goes, the new one starts at 7
    leader = two_brokers.wait_for_leader("dr", 0)
    two_brokers.terminate(leader)

    def new_leader_earliest():
        consumer = Consumer(bootstrap_servers=two_brokers.bootstrap_servers)
        try:
            return consumer.beginning_offsets([tp], timeout_ms=5000) == {tp: 7}
        finally:
            consumer.close()
    wait_for(new_leader_earliest, what="the new leader's earliest offset")


def test_kafka_protocol_clients(two_brokers):
    """The same logic through Kafka's own protocol (the kio adapter): confluent-kafka's and
    kafka-python's admin clients."""
    ck = pytest.importorskip("confluent_kafka.admin")
    from confluent_kafka import TopicPartition as CkTopicPartition

    servers = two_brokers.bootstrap_servers
    admin = ck.AdminClient({"bootstrap.servers": servers})
    admin.create_topics([ck.NewTopic("kp", 1, 2)])["kp"].result(timeout=60)
    _produce(servers, "kp", 6)
    resource = ck.ConfigResource(ck.ConfigResource.Type.TOPIC, "kp")

    entries = admin.describe_configs([resource])[resource].result(timeout=60)
    retention = entries["retention.ms"]
    # log.retention.hours=100 decides the value, but Kafka 2.8 reports DEFAULT_CONFIG and no
    # synonym: only a set log.retention.ms is retention.ms's broker synonym
    assert (retention.value, retention.source) == (
        "360000000", ck.ConfigSource.DEFAULT_CONFIG.value)
    assert list(retention.synonyms) == []

    ops = [ck.ConfigEntry("cleanup.policy", "compact",
                          incremental_operation=ck.AlterConfigOpType.APPEND),
           ck.ConfigEntry("retention.ms", "1000", incremental_operation=ck.AlterConfigOpType.SET)]
    changed = ck.ConfigResource(ck.ConfigResource.Type.TOPIC, "kp", incremental_configs=ops)
    admin.incremental_alter_configs([changed])[changed].result(timeout=60)
    entries = admin.describe_configs([resource])[resource].result(timeout=60)
    assert entries["cleanup.policy"].value == "delete,compact"
    assert entries["retention.ms"].source == ck.ConfigSource.DYNAMIC_TOPIC_CONFIG.value

    bad = ck.ConfigResource(ck.ConfigResource.Type.TOPIC, "kp", incremental_configs=[
        ck.ConfigEntry("segment.bytes", "tiny", incremental_operation=ck.AlterConfigOpType.SET)])
    with pytest.raises(Exception, match="segment.bytes"):
        admin.incremental_alter_configs([bad])[bad].result(timeout=60)

    deleted = admin.delete_records([CkTopicPartition("kp", 0, 3)])
    [(tp, future)] = deleted.items()
    assert future.result(timeout=60).low_watermark == 3

    kafka_admin = pytest.importorskip("kafka.admin")
    client = kafka_admin.KafkaAdminClient(bootstrap_servers=servers)
    try:
        described = client.describe_configs([kafka_admin.ConfigResource(
            kafka_admin.ConfigResourceType.BROKER, "1")], config_filter="all")
        broker_one = described["broker"]["1"]
        assert broker_one["broker.id"]["value"] == "1"
        assert broker_one["broker.id"]["config_source"] == "STATIC_BROKER_CONFIG"
        assert broker_one["log.retention.hours"]["value"] == "100"
    finally:
        client.close()
