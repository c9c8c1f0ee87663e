"""The API table: what both ApiVersions answers advertise (through the real pipeline), that every
row is whole (``api_table_check``), and the listener rule for the controller's requests."""

import dataclasses
from types import SimpleNamespace

import pytest
from pipeline_driver import (Script, connect, kafka_frame, native_frame, read_kafka_responses,
                             read_native_responses, table_of)

from kafkalite import errors
from kafkalite.config import BrokerConfig
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.framing import encode_frame
from kafkalite.protocol.kafka.convert import Converter
from kafkalite.protocol.kafka.versions import kio_range
from kafkalite.server import api_table
from kafkalite.server.api_table import CONTROL, ApiSpec
from kafkalite.server.api_table_check import check_table
from kafkalite.server.dispatch import ApiDispatcher

#: The highest version Apache Kafka 2.8 (ZooKeeper mode) advertises for each client-facing API,
#: as its ApiVersions answer lists them (``kafka-broker-api-versions.sh`` against a 2.8 broker).
KAFKA_28_MAX = {
    ApiKey.PRODUCE: 9, ApiKey.FETCH: 12, ApiKey.LIST_OFFSETS: 6, ApiKey.METADATA: 11,
    ApiKey.OFFSET_COMMIT: 8, ApiKey.OFFSET_FETCH: 7, ApiKey.FIND_COORDINATOR: 3,
    ApiKey.JOIN_GROUP: 7, ApiKey.HEARTBEAT: 4, ApiKey.LEAVE_GROUP: 4, ApiKey.SYNC_GROUP: 5,
    ApiKey.DESCRIBE_GROUPS: 5, ApiKey.LIST_GROUPS: 4, ApiKey.SASL_HANDSHAKE: 1,
    ApiKey.API_VERSIONS: 3, ApiKey.CREATE_TOPICS: 7, ApiKey.DELETE_TOPICS: 6,
    ApiKey.DELETE_RECORDS: 2, ApiKey.INIT_PRODUCER_ID: 4, ApiKey.OFFSET_FOR_LEADER_EPOCH: 4,
    24: 3,   # AddPartitionsToTxn
    25: 3,   # AddOffsetsToTxn
    26: 3,   # EndTxn
    27: 1,   # WriteTxnMarkers
    28: 3,   # TxnOffsetCommit
    ApiKey.DESCRIBE_ACLS: 2, ApiKey.CREATE_ACLS: 2, ApiKey.DELETE_ACLS: 2,
    ApiKey.DESCRIBE_CONFIGS: 4, ApiKey.ALTER_CONFIGS: 2,
    34: 2,   # AlterReplicaLogDirs
    35: 2,   # DescribeLogDirs
    ApiKey.SASL_AUTHENTICATE: 2, ApiKey.CREATE_PARTITIONS: 3,
    ApiKey.CREATE_DELEGATION_TOKEN: 2, ApiKey.RENEW_DELEGATION_TOKEN: 2,
    ApiKey.EXPIRE_DELEGATION_TOKEN: 2, ApiKey.DESCRIBE_DELEGATION_TOKEN: 2,
    ApiKey.DELETE_GROUPS: 2,
    ApiKey.ELECT_LEADERS: 2,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0, ApiKey.LIST_PARTITION_REASSIGNMENTS: 0,
    ApiKey.OFFSET_DELETE: 0,
    48: 1, 49: 1,   # DescribeClientQuotas, AlterClientQuotas
    50: 0, 51: 0,   # DescribeUserScramCredentials, AlterUserScramCredentials
    57: 0,   # UpdateFeatures
    ApiKey.DESCRIBE_CLUSTER: 0,
    61: 0,   # DescribeProducers
}

#: The APIs kafkalite serves to Kafka clients today: one leaving the table (or a new one coming)
#: is a change clients see, so it is a change of this list too.
KAFKALITE_SERVES = {
    ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
    ApiKey.SASL_HANDSHAKE, ApiKey.API_VERSIONS, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS,
    ApiKey.DELETE_RECORDS, ApiKey.INIT_PRODUCER_ID, ApiKey.OFFSET_FOR_LEADER_EPOCH,
    ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CONFIGS, ApiKey.SASL_AUTHENTICATE, ApiKey.CREATE_PARTITIONS,
    ApiKey.DELETE_GROUPS, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.OFFSET_DELETE,
    ApiKey.ELECT_LEADERS, ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.DESCRIBE_CLUSTER,
    ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
    ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN,
}
KAFKALITE_SERVES |= {ApiKey.DESCRIBE_LOG_DIRS, ApiKey.ALTER_REPLICA_LOG_DIRS}   # KIP-113
KAFKALITE_SERVES |= {ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,          # KIP-554
                     ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ApiKey.UPDATE_FEATURES}  # KIP-584
KAFKALITE_SERVES |= {ApiKey.DESCRIBE_CLIENT_QUOTAS, ApiKey.ALTER_CLIENT_QUOTAS}   # KIP-546
KAFKALITE_SERVES |= {ApiKey.WRITE_TXN_MARKERS}                                  # KIP-98
KAFKALITE_SERVES |= {ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN,  # KIP-98
                     ApiKey.END_TXN}
KAFKALITE_SERVES |= {ApiKey.TXN_OFFSET_COMMIT}                                  # KIP-98, 447
KAFKALITE_SERVES |= {ApiKey.DESCRIBE_PRODUCERS}                                 # KIP-664

CONTROLLER_REQUESTS = (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA)


def _ranges(entries):
    return {e.api_key: (e.min_version, e.max_version) for e in entries}


# --- what ApiVersions advertises -----------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_kafka_api_versions_lists_the_tables_kafka_ranges(version):
    protocol, transport = connect(ApiDispatcher(None))
    values = ({"client_software_name": "t", "client_software_version": "1"}
              if version >= 3 else {})
    protocol.dataReceived(kafka_frame(ApiKey.API_VERSIONS, version, 1, values))
    [(cid, answer)] = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, version)])
    assert cid == 1 and answer.error_code.value == 0
    assert _ranges(answer.api_keys) == api_table.kafka_ranges()
    assert [k.api_key for k in answer.api_keys] == sorted(api_table.kafka_ranges())


def test_an_unknown_api_versions_version_lists_the_same_ranges():
    protocol, transport = connect(ApiDispatcher(None))
    protocol.dataReceived(encode_frame(b"\x00\x12\x00\x63\x00\x00\x00\x02\x00\x01t"))   # v99
    [(cid, answer)] = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 0)])
    assert cid == 2 and answer.error_code.value == errors.UnsupportedVersionError.code
    assert _ranges(answer.api_keys) == api_table.kafka_ranges()


def test_native_api_versions_lists_the_tables_native_ranges():
    protocol, transport = connect(ApiDispatcher(None))
    protocol.dataReceived(native_frame(m.ApiVersionsRequest(), 3))
    [(cid, answer)] = read_native_responses(transport, [ApiKey.API_VERSIONS])
    assert cid == 3 and answer.error_code == 0
    assert _ranges(answer.api_versions) == api_table.native_ranges()
    assert set(CONTROLLER_REQUESTS) <= set(api_table.native_ranges())   # brokers use them


def test_kafka_ranges_are_kafka_28s_for_the_apis_kafkalite_serves():
    ranges = api_table.kafka_ranges()
    assert set(ranges) == KAFKALITE_SERVES
    for key, (low, high) in ranges.items():
        assert high == KAFKA_28_MAX[key], ApiKey.name_of(key)
        assert (low, high) == kio_range(key, KAFKA_28_MAX[key]), ApiKey.name_of(key)
    assert not set(ranges) & set(CONTROLLER_REQUESTS + (ApiKey.CONTROLLED_SHUTDOWN,))


# --- the table is whole --------------------------------------------------------------------------

def test_the_table_is_whole():
    assert check_table(api_table.TABLE) == []


def _handler(broker, ctx, request):
    raise AssertionError("never called")


CONVERTER = Converter(lambda entity, version: None, lambda response, version: {})


@pytest.mark.parametrize("row, problem", [
    # a handler (or converter) that no version range reaches
    (ApiSpec(ApiKey.METADATA, None, _handler, native=False), "handler but no version range"),
    (ApiSpec(ApiKey.METADATA, None, _handler, CONVERTER), "Kafka converter but no Kafka"),
    # a version range that nothing serves
    (ApiSpec(ApiKey.METADATA, 11, native=False), "Kafka versions up to 11 but no handler"),
    (ApiSpec(ApiKey.METADATA, 11, _handler), "no Kafka converter for its handler"),
    (ApiSpec(ApiKey.METADATA), "native versions but no handler"),
    # versions kio does not know, a model the messages lack, a converter that is not one
    (ApiSpec(ApiKey.METADATA, -1, _handler, CONVERTER), "none that kio knows"),
    (ApiSpec(ApiKey.LEADER_AND_ISR, 5, _handler, CONVERTER), "none that kio knows"),
    (ApiSpec(99, None, _handler), "no model class"),
    (ApiSpec(ApiKey.METADATA, 11, _handler, object()), "no request/response functions"),
    (ApiSpec(ApiKey.METADATA, 11, _handler, CONVERTER, listeners="anywhere"),
     "unknown listener rule"),
])
def test_a_broken_row_is_reported(row, problem):
    table = dict(api_table.TABLE)
    table[row.key] = row
    problems = check_table(table)
    assert len(problems) == 1 and problem in problems[0], problems


def test_a_row_filed_under_another_key_is_reported():
    table = dict(api_table.TABLE)
    table[ApiKey.FETCH] = api_table.TABLE[ApiKey.METADATA]
    assert check_table(table) == ["the row filed under api key 1 is for api key 3"]


def test_whole_rows_of_every_shape_pass():
    assert check_table(table_of([
        ApiSpec(ApiKey.METADATA, 11, _handler, CONVERTER),                  # both protocols
        ApiSpec(ApiKey.FETCH, 12, _handler, CONVERTER, native=False),       # Kafka's only
        ApiSpec(ApiKey.LEADER_AND_ISR, None, _handler, listeners=CONTROL),  # native only
        ApiSpec(ApiKey.STOP_REPLICA, None, native=False),                   # not served at all
    ])) == []


# --- the controller's requests only on the controller's listener ---------------------------------

def _config(control_plane: bool) -> BrokerConfig:
    if control_plane:
        return BrokerConfig.from_dict({
            "broker.id": 1, "zookeeper.connect": "zk:2181",
            "listeners": "PLAINTEXT://:9092,CONTROL://:9093",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROL:PLAINTEXT",
            "control.plane.listener.name": "CONTROL"})
    return BrokerConfig.from_dict({
        "broker.id": 1, "zookeeper.connect": "zk:2181",
        "listeners": "INTERNAL://:9092,EXTERNAL://:9093",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL"})


def _leader_and_isr():
    return m.LeaderAndIsrRequest(controller_id=2, controller_epoch=5, broker_epoch=7,
                                 partition_states=[
                                     m.LeaderAndIsrPartitionState("t", 0, 5, 1, 3, [1], 0, [1]),
                                     m.LeaderAndIsrPartitionState("t", 1, 5, 1, 3, [1], 0, [1])])


def _controller_pipeline(config):
    """The real LeaderAndIsr row (its listener rule) with a handler that records its calls."""
    script = Script()
    row = dataclasses.replace(api_table.TABLE[ApiKey.LEADER_AND_ISR],
                              handler=script.handler(lambda ctx, r: m.LeaderAndIsrResponse()))
    broker = SimpleNamespace(config=config, security=None)
    return script, ApiDispatcher(broker, table=table_of([row]))


def test_controller_requests_are_control_rows():
    for key in CONTROLLER_REQUESTS:
        assert api_table.TABLE[key].listeners == CONTROL, ApiKey.name_of(key)


@pytest.mark.parametrize("control_plane, listener", [(True, "PLAINTEXT"), (False, "EXTERNAL")])
def test_a_controller_request_on_another_listener_is_refused(control_plane, listener):
    script, dispatcher = _controller_pipeline(_config(control_plane))
    protocol, transport = connect(dispatcher, listener=listener)
    protocol.dataReceived(native_frame(_leader_and_isr(), 4))
    [(cid, answer)] = read_native_responses(transport, [ApiKey.LEADER_AND_ISR])
    assert cid == 4 and answer.error_code == errors.NotControllerError.code
    assert [e.error_code for e in answer.partition_errors] == [errors.NotControllerError.code] * 2
    assert listener in answer.error_message
    assert script.calls == [] and not transport.disconnecting


@pytest.mark.parametrize("control_plane, listener", [(True, "CONTROL"), (False, "INTERNAL")])
def test_a_controller_request_on_the_controllers_listener_reaches_its_handler(control_plane,
                                                                              listener):
    script, dispatcher = _controller_pipeline(_config(control_plane))
    protocol, transport = connect(dispatcher, listener=listener)
    protocol.dataReceived(native_frame(_leader_and_isr(), 5))
    [(cid, answer)] = read_native_responses(transport, [ApiKey.LEADER_AND_ISR])
    assert cid == 5 and answer.error_code == 0
    [call] = script.calls
    assert call.ctx.listener == listener and call.request == _leader_and_isr()
