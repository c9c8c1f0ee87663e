"""zk_schema: paths, Kafka's exact JSON shapes, encode/decode round trips, SchemaError on garbage."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import zk_schema
from zk_schema import (
    PERSISTENT_PATHS, BrokerRegistration, ClusterId, ConfigChangeNotification, ConsumerOffset,
    ConsumerRegistration, ControllerEpoch, ControllerRegistration, EntityConfig,
    IsrChangeNotification, PartitionOwner, PartitionReassignment, PartitionState,
    PreferredReplicaElection, ProducerIdBlock, SchemaError, TopicAssignment,
)
from zk_schema import admin, brokers, cluster, config, consumers, controller, isr, producer_ids, topics


def as_json(payload) -> object:
    return json.loads(payload.encode())


# ------------------------------------------------------------------------------------- purity

def test_imports_neither_kazoo_nor_kafkalite():
    code = ("import sys, zk_schema, zk_schema.admin, zk_schema.brokers, zk_schema.cluster, "
            "zk_schema.config, zk_schema.consumers, zk_schema.controller, zk_schema.isr, "
            "zk_schema.producer_ids, zk_schema.topics\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('kazoo', 'kafkalite', 'twisted')]\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_schema_error_is_a_value_error():
    assert issubclass(SchemaError, ValueError)


# -------------------------------------------------------------------------------------- paths

def test_paths():
    assert cluster.cluster_id_path() == "/cluster/id"
    assert brokers.broker_path(3) == "/brokers/ids/3"
    assert brokers.BROKER_SEQID_PATH == "/brokers/seqid"
    assert topics.topic_path("t") == "/brokers/topics/t"
    assert topics.partitions_path("t") == "/brokers/topics/t/partitions"
    assert topics.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert controller.CONTROLLER_PATH == "/controller"
    assert controller.CONTROLLER_EPOCH_PATH == "/controller_epoch"
    assert config.topic_config_path("t") == "/config/topics/t"
    assert config.config_change_prefix_path() == "/config/changes/config_change_"
    assert admin.delete_topic_path("t") == "/admin/delete_topics/t"
    assert admin.REASSIGN_PARTITIONS_PATH == "/admin/reassign_partitions"
    assert admin.PREFERRED_REPLICA_ELECTION_PATH == "/admin/preferred_replica_election"
    assert isr.isr_change_prefix_path() == "/isr_change_notification/isr_change_"
    assert isr.isr_change_path("isr_change_0000000003") == \
        "/isr_change_notification/isr_change_0000000003"
    assert consumers.member_path("g", "g_h-1-abcd") == "/consumers/g/ids/g_h-1-abcd"
    assert consumers.owner_path("g", "t", 1) == "/consumers/g/owners/t/1"
    assert consumers.offset_path("g", "t", 1) == "/consumers/g/offsets/t/1"
    assert producer_ids.latest_producer_id_block_path() == "/latest_producer_id_block"


def test_persistent_paths_are_kafkas():
    assert set(PERSISTENT_PATHS) == {
        "/consumers", "/brokers/ids", "/brokers/topics", "/config/changes",
        "/admin/delete_topics", "/brokers/seqid", "/isr_change_notification",
        "/latest_producer_id_block", "/config/topics", "/config/clients", "/config/users",
        "/config/brokers", "/config/ips", "/log_dir_event_notification",
    }
    assert all(p.startswith("/") and not p.endswith("/") for p in PERSISTENT_PATHS)


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "x" * 250, "sp ace", "ü"])
def test_bad_topic_names_cannot_become_paths(bad):
    assert topics.topic_name_problem(bad)
    with pytest.raises(SchemaError):
        topics.topic_path(bad)


@pytest.mark.parametrize("bad", ["", "a/b", ".."])
def test_bad_group_and_member_names(bad):
    with pytest.raises(SchemaError):
        consumers.group_path(bad)
    with pytest.raises(SchemaError):
        consumers.member_path("g", bad)


def test_good_topic_names():
    for name in ("t", "a.b_c-D9", "x" * 249):
        assert topics.topic_name_problem(name) is None


def test_parse_broker_id():
    assert brokers.parse_broker_id("7") == 7
    assert brokers.parse_broker_id("/brokers/ids/12") == 12
    with pytest.raises(SchemaError):
        brokers.parse_broker_id("seven")


# ------------------------------------------------------------------------ exact JSON shapes

def test_cluster_id_shape():
    assert ClusterId("abc").encode() == b'{"version":"1","id":"abc"}'
    cid = cluster.new_cluster_id()
    assert len(cid) == 22 and "=" not in cid and not cid.startswith("-")
    assert cluster.new_cluster_id() != cid


def test_broker_registration_shape():
    reg = BrokerRegistration.plaintext(1, "h1", 9092, rack="r1", timestamp_ms=1700000000000)
    assert as_json(reg) == {
        "version": 5, "host": "h1", "port": 9092, "endpoints": ["PLAINTEXT://h1:9092"],
        "rack": "r1", "jmx_port": -1, "timestamp": "1700000000000", "features": {},
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
    }
    assert b" " not in reg.encode()  # compact, as Kafka writes it
    assert "rack" not in as_json(BrokerRegistration.plaintext(1, "h", 1))  # Kafka omits no rack


def test_broker_registration_decodes_what_kafka_writes():
    kafka_v4 = (b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},'
                b'"endpoints":["PLAINTEXT://b1:9092","SSL://b1:9093"],"jmx_port":-1,"host":"b1",'
                b'"timestamp":"1589000000000","port":9092,"version":4}')
    reg = BrokerRegistration.decode(kafka_v4, 3, broker_id=1, broker_epoch=77)
    assert (reg.broker_id, reg.host, reg.port, reg.rack, reg.zk_version, reg.broker_epoch) == \
        (1, "b1", 9092, None, 3, 77)
    assert reg.endpoint("SSL") == ("b1", 9093)
    assert reg.endpoint("SASL_SSL") is None
    assert reg.timestamp_ms == 1589000000000
    no_plaintext = (b'{"endpoints":["SSL://b2:9093"],"host":null,"port":-1,"version":4,'
                    b'"jmx_port":-1,"timestamp":"1"}')
    reg2 = BrokerRegistration.decode(no_plaintext, broker_id=2)
    assert (reg2.host, reg2.port) == ("b2", 9093)


def test_topic_assignment_shape():
    a = TopicAssignment(partitions={1: (2, 3), 0: (1, 2)}, topic_id="tid")
    assert a.encode() == (b'{"version":3,"partitions":{"0":[1,2],"1":[2,3]},'
                          b'"adding_replicas":{},"removing_replicas":{},"topic_id":"tid"}')
    assert a.partition_count == 2 and a.replication_factor == 2


def test_topic_assignment_decodes_old_versions():
    v1 = b'{"version":1,"partitions":{"1":[2],"0":[1]}}'
    a = TopicAssignment.decode(v1, 5)
    assert a.partitions == {0: (1,), 1: (2,)}
    assert a.topic_id is None and a.adding_replicas == {} and a.zk_version == 5


def test_partition_state_shape():
    s = PartitionState(leader=1, leader_epoch=4, controller_epoch=2, isr=(1, 2))
    assert s.encode() == b'{"version":1,"leader":1,"leader_epoch":4,"controller_epoch":2,"isr":[1,2]}'


def test_controller_shapes():
    assert as_json(ControllerRegistration(3, 1700000000000)) == \
        {"version": 1, "brokerid": 3, "timestamp": "1700000000000"}
    assert ControllerEpoch(7).encode() == b"7"
    assert ControllerEpoch.decode(b"12", zk_version=11) == ControllerEpoch(12, 11)
    assert controller.INITIAL_CONTROLLER_EPOCH == 0


def test_config_shapes():
    assert as_json(EntityConfig({"retention.ms": "1000"})) == \
        {"version": 1, "config": {"retention.ms": "1000"}}
    note = ConfigChangeNotification.for_topic("t")
    assert as_json(note) == {"version": 2, "entity_path": "topics/t"}
    assert (note.entity_type, note.entity_name) == ("topics", "t")
    assert zk_schema.TopicConfig is EntityConfig


def test_admin_shapes():
    r = PartitionReassignment({("t", 0): (1, 2), ("t", 1): (2, 3)})
    assert as_json(r) == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2]},
        {"topic": "t", "partition": 1, "replicas": [2, 3]}]}
    e = PreferredReplicaElection((("t", 0), ("u", 3)))
    assert as_json(e) == {"version": 1, "partitions": [{"topic": "t", "partition": 0},
                                                       {"topic": "u", "partition": 3}]}
    assert admin.DELETE_TOPIC_MARKER == b""


def test_isr_change_shape():
    n = IsrChangeNotification((("t", 0), ("t", 1)))
    assert n.encode() == b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]}'


def test_consumer_shapes():
    reg = ConsumerRegistration({"t": 1}, "static", 1700000000000)
    assert as_json(reg) == {"version": 1, "subscription": {"t": 1}, "pattern": "static",
                            "timestamp": "1700000000000"}
    member = consumers.new_member_id("g", "host1", 1700000000000, "abcd1234")
    assert member == "g_host1-1700000000000-abcd1234"
    assert len(consumers.new_member_id("g", "h", 1).rsplit("-", 1)[1]) == 8
    owner = PartitionOwner(consumers.owner_thread_id(member))
    assert owner.encode() == b"g_host1-1700000000000-abcd1234-0"
    assert owner.member_id == member
    assert ConsumerOffset(42).encode() == b"42"
    with pytest.raises(SchemaError):
        ConsumerRegistration({"t": 1}, "regex")


def test_producer_id_block_shape():
    b = ProducerIdBlock.first(broker=2)
    assert as_json(b) == {"version": 1, "broker": 2, "block_start": "0", "block_end": "999"}
    nxt = b.next(broker=3)
    assert (nxt.broker, nxt.block_start, nxt.block_end) == (3, 1000, 1999)


# -------------------------------------------------------------------------------- round trips

ROUND_TRIPS = [
    ClusterId("Xy3_-abcDEF0123456789zz"),
    BrokerRegistration.plaintext(5, "broker5.example", 19092, rack="eu-1a", timestamp_ms=123),
    BrokerRegistration(7, "h", 1, ("PLAINTEXT://h:1", "SSL://h:2"), None, 9, 9999,
                       {"metadata.version": {"min_version": 1, "max_version": 7}},
                       {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}),
    TopicAssignment({0: (1, 2, 3), 1: (2, 3, 1)}, "tid", {1: (4,)}, {1: (1,)}),
    TopicAssignment({0: (1,)}),
    PartitionState(-1, 0, 0, ()),
    PartitionState(3, 17, 4, (3, 1, 2)),
    ControllerRegistration(2, 1700000000123),
    ControllerEpoch(41),
    EntityConfig({"cleanup.policy": "compact", "min.insync.replicas": "2"}),
    EntityConfig(),
    ConfigChangeNotification("topics/orders"),
    PartitionReassignment({("a", 0): (1, 2)}),
    PreferredReplicaElection((("a", 0),)),
    IsrChangeNotification((("a", 0), ("b", 9))),
    ConsumerRegistration({"a": 1, "b": 2}, "white_list", 5),
    PartitionOwner("g_h-1-abcdabcd-0"),
    ConsumerOffset(0),
    ConsumerOffset(2**62),
    ProducerIdBlock(1, 5000, 5999),
]


def _decode(payload, data, zk_version):
    if isinstance(payload, BrokerRegistration):
        return type(payload).decode(data, zk_version, broker_id=payload.broker_id)
    return type(payload).decode(data, zk_version)


@pytest.mark.parametrize("payload", ROUND_TRIPS, ids=lambda p: type(p).__name__)
def test_round_trip_keeps_zk_version(payload):
    decoded = _decode(payload, payload.encode(), 9)
    assert decoded.zk_version == 9
    assert decoded.encode() == payload.encode()
    fields = {k: v for k, v in vars(decoded).items() if k not in ("zk_version",)}
    assert fields == {k: v for k, v in vars(payload).items() if k not in ("zk_version",)}
    assert _decode(payload, payload.encode(), None).zk_version is None


@pytest.mark.parametrize("payload", ROUND_TRIPS, ids=lambda p: type(p).__name__)
def test_payloads_are_frozen(payload):
    with pytest.raises(AttributeError):
        payload.zk_version = 3  # type: ignore[misc]


@given(
    partitions=st.dictionaries(st.integers(0, 10_000),
                               st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=5),
                               max_size=50),
    topic_id=st.one_of(st.none(), st.text(min_size=1, max_size=30)),
)
def test_topic_assignment_round_trip_property(partitions, topic_id):
    a = TopicAssignment({p: tuple(r) for p, r in partitions.items()}, topic_id)
    b = TopicAssignment.decode(a.encode())
    assert b.partitions == dict(sorted(a.partitions.items())) and b.topic_id == topic_id


@given(leader=st.integers(-1, 2**31 - 1), le=st.integers(0, 2**31 - 1),
       ce=st.integers(0, 2**31 - 1), isr_=st.lists(st.integers(0, 2**31 - 1), max_size=10),
       version=st.integers(0, 2**31 - 1))
def test_partition_state_round_trip_property(leader, le, ce, isr_, version):
    s = PartitionState(leader, le, ce, tuple(isr_))
    assert PartitionState.decode(s.encode(), version) == PartitionState(leader, le, ce,
                                                                        tuple(isr_), version)


@given(config_=st.dictionaries(st.text(min_size=1), st.text()))
def test_entity_config_round_trip_property(config_):
    assert EntityConfig.decode(EntityConfig(config_).encode()).config == config_


# ------------------------------------------------------------------------------------ garbage

ALL_JSON_TYPES = [ClusterId, TopicAssignment, PartitionState, ControllerRegistration,
                  EntityConfig, ConfigChangeNotification, PartitionReassignment,
                  PreferredReplicaElection, IsrChangeNotification, ConsumerRegistration,
                  ProducerIdBlock]


@pytest.mark.parametrize("cls", ALL_JSON_TYPES + [BrokerRegistration], ids=lambda c: c.__name__)
@pytest.mark.parametrize("garbage", [b"", b"not json", b"\xff\xfe", b"[1,2]", b"42", b"null",
                                     b'{"version":1}', b"{"])
def test_garbage_raises_schema_error(cls, garbage):
    with pytest.raises(SchemaError):
        cls.decode(garbage)


@pytest.mark.parametrize("cls", [ControllerEpoch, ConsumerOffset])
@pytest.mark.parametrize("garbage", [b"", b"x", b"1.5", b"\xff", b"{}"])
def test_garbage_integer_text_raises(cls, garbage):
    with pytest.raises(SchemaError):
        cls.decode(garbage)


@pytest.mark.parametrize("data", [
    b'{"version":1,"leader":"x","leader_epoch":0,"controller_epoch":0,"isr":[]}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":0,"isr":"1,2"}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":0,"isr":[true]}',
    b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1]}',
])
def test_partition_state_wrong_fields(data):
    with pytest.raises(SchemaError):
        PartitionState.decode(data)


@pytest.mark.parametrize("data", [
    b'{"version":2,"partitions":{"x":[1]}}',
    b'{"version":2,"partitions":{"0":1}}',
    b'{"version":2,"partitions":[]}',
])
def test_topic_assignment_wrong_fields(data):
    with pytest.raises(SchemaError):
        TopicAssignment.decode(data)


def test_other_wrong_fields():
    with pytest.raises(SchemaError):
        EntityConfig.decode(b'{"version":1,"config":{"a":1}}')
    with pytest.raises(SchemaError):
        ConfigChangeNotification.decode(b'{"version":1,"entity_path":"topics/t"}')
    with pytest.raises(SchemaError):
        ConfigChangeNotification.decode(b'{"version":2,"entity_path":"topics"}')
    with pytest.raises(SchemaError):
        ProducerIdBlock.decode(b'{"version":1,"broker":1,"block_start":"10","block_end":"9"}')
    with pytest.raises(SchemaError):
        BrokerRegistration.decode(b'{"version":5,"endpoints":["nonsense"],"host":"h","port":1}')
    with pytest.raises(SchemaError):
        PartitionOwner.decode(b"")
    with pytest.raises(SchemaError):
        IsrChangeNotification.decode(b'{"version":1,"partitions":[{"topic":"t"}]}')
