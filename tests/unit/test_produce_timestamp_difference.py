"""message.timestamp.difference.max.ms, as Kafka's LogValidator.validateTimestamp: a CreateTime
topic refuses a batch holding a record too far from the leader's clock, with INVALID_TIMESTAMP
and one record error per such record (real logs, task.Clock)."""

from types import SimpleNamespace

from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import BrokerConfig, TopicConfig
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch
from kafkalite.protocol.kafka.convert.data import PRODUCE
from kafkalite.server.data_apis import handle_produce
from kafkalite.server.replica_manager import ReplicaManager
from kafkalite.server.request_authz import ALLOW_ALL

NOW = 1_700_000_000_000


def _leader(tmp_path, **config):
    clock = Clock()
    clock.advance(NOW / 1000)
    topic = TopicConfig(**config)
    logs = LogManager([str(tmp_path)], topic, clock)
    logs.startService()
    rm = ReplicaManager(1, logs, clock, lambda: int(clock.seconds() * 1000),
                        topic_config=lambda t: topic)
    rm.become_leader_or_follower(m.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=1, partition_states=[m.LeaderAndIsrPartitionState(
            "t", 0, 1, 1, 0, [1], 0, [1])]))
    return rm


def _produce(rm, timestamps):
    batch = build_batch([(ts, b"k", b"v", None) for ts in timestamps])
    # through the Produce handler: the model answer, as both protocols get it
    response = handle_produce(SimpleNamespace(replica_manager=rm),
                              SimpleNamespace(authz=ALLOW_ALL),
                              m.ProduceRequest(acks=1, topic_data={"t": {0: batch}}))
    return response.responses["t"][0]


def test_records_too_far_from_the_clock_refuse_the_batch(tmp_path):
    rm = _leader(tmp_path, message_timestamp_difference_max_ms=60_000)
    answer = _produce(rm, [NOW - 60_001, NOW, NOW + 60_001])
    assert answer.error_code == errors.InvalidTimestampError.code
    assert answer.error_message == \
        "One or more records have been rejected due to invalid timestamp"
    window = f"[{NOW - 60_000}, {NOW + 60_000}]"
    assert answer.record_errors == [
        m.ProduceRecordError(0, f"Timestamp {NOW - 60_001} of message with offset 0 is out of "
                                f"range. The timestamp should be within {window}"),
        m.ProduceRecordError(2, f"Timestamp {NOW + 60_001} of message with offset 2 is out of "
                                f"range. The timestamp should be within {window}")]
    assert answer.log_start_offset == 0 and answer.base_offset == -1
    assert rm.partitions[("t", 0)].log_end_offset == 0
    kafka = PRODUCE.response(m.ProduceResponse(responses={"t": {0: answer}}), 9)
    part = kafka["responses"][0]["partition_responses"][0]
    assert part["error_message"] == answer.error_message
    assert [e["batch_index"] for e in part["record_errors"]] == [0, 2]


def test_records_within_the_difference_are_appended(tmp_path):
    rm = _leader(tmp_path, message_timestamp_difference_max_ms=60_000)
    answer = _produce(rm, [NOW - 60_000, NOW + 60_000])
    assert (answer.error_code, answer.base_offset) == (0, 0)


def test_log_append_time_topics_and_the_default_take_any_timestamp(tmp_path):
    assert _produce(_leader(tmp_path / "a"), [1]).error_code == 0
    rm = _leader(tmp_path / "b", message_timestamp_difference_max_ms=1,
                 message_timestamp_type="LogAppendTime")
    assert _produce(rm, [1]).error_code == 0


def test_the_broker_default_is_the_topics(tmp_path):
    config = BrokerConfig.from_dict({"broker.id": 1, "zookeeper.connect": "zk:2181",
                                     "log.dirs": str(tmp_path),
                                     "log.message.timestamp.difference.max.ms": "5000"})
    assert config.topic_defaults().message_timestamp_difference_max_ms == 5000
    assert TopicConfig().message_timestamp_difference_max_ms == 2**63 - 1
