"""What a refused partition's answer carries besides the error, as Kafka 2.8's ReplicaManager
sets it, and the error for a partition the metadata knows but this broker does not host (real
logs, task.Clock)."""

from types import SimpleNamespace

from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import TopicConfig
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert.data import PRODUCE
from kafkalite.server.data_apis import handle_produce
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.offset_values import EpochQuery, OffsetQuery
from kafkalite.server.replica_manager import ReplicaManager
from kafkalite.server.request_authz import ALLOW_ALL

from test_server_replica_manager import Harness, _batch, _resolved

NOT_LEADER = errors.NotLeaderForPartitionError.code
UNKNOWN = errors.UnknownTopicOrPartitionError.code


def _produce(h, partition=0, acks=1, timeout_ms=5000):
    """The model answer, through the Produce handler (no authorizer)."""
    return _resolved(handle_produce(
        SimpleNamespace(replica_manager=h.manager), SimpleNamespace(authz=ALLOW_ALL),
        m.ProduceRequest(acks=acks, timeout_ms=timeout_ms,
                         topic_data={"t": {partition: _batch()}})))


def test_not_enough_replicas_carries_the_log_start_offset(tmp_path):
    h = Harness(tmp_path, min_isr=2)
    h.lead([1], [1])
    h.produce(acks=1)
    h.manager.partitions[("t", 0)].log.delete_records_before(2)
    answer = _produce(h, acks=-1).responses["t"][0]
    assert (answer.error_code, answer.log_start_offset, answer.base_offset) == \
        (errors.NotEnoughReplicasError.code, 2, -1)


def test_a_partition_not_hosted_answers_without_a_log_start_offset(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1])
    answer = _produce(h, partition=7).responses["t"][7]
    assert (answer.error_code, answer.log_start_offset) == (UNKNOWN, -1)


def test_the_kafka_answer_has_no_message_without_record_errors(tmp_path):
    h = Harness(tmp_path, min_isr=2)
    h.lead([1], [1])
    native = _produce(h, acks=-1)
    assert native.responses["t"][0].error_message      # kafkalite's own wording, natively
    part = PRODUCE.response(native, 9)["responses"][0]["partition_responses"][0]
    assert (part["error_message"], part["log_start_offset"], part["record_errors"]) == \
        (None, 0, [])


def test_a_timed_out_acks_all_keeps_the_appends_offsets(tmp_path):
    """Kafka's DelayedProduce changes only the error of what the append answered."""
    h = Harness(tmp_path)
    h.lead([1, 2], [1, 2])
    h.produce(acks=1)
    pending = h.manager.append_records(100, -1, False, {("t", 0): _batch()})
    h.clock.advance(1)
    answer = _resolved(pending)[("t", 0)]
    assert (answer.error_code, answer.base_offset, answer.log_start_offset) == \
        (errors.RequestTimedOutError.code, 3, 0)


class _Manager:
    """A ReplicaManager hosting nothing, whose metadata knows ``t``-0."""

    def __init__(self, tmp_path):
        clock = Clock()
        logs = LogManager([str(tmp_path)], TopicConfig(), clock)
        logs.startService()
        self.rm = ReplicaManager(1, logs, clock, lambda: int(clock.seconds() * 1000),
                                 topic_config=lambda t: TopicConfig(),
                                 partition_known=lambda t, p: (t, p) == ("t", 0))


def test_a_known_partition_without_a_replica_here_is_not_led_here(tmp_path):
    rm = _Manager(tmp_path).rm
    produced = _resolved(rm.append_records(1000, 1, False,
                                           {("t", 0): _batch(), ("t", 1): _batch()}))
    assert {tp: r.error_code for tp, r in produced.items()} == \
        {("t", 0): NOT_LEADER, ("t", 1): UNKNOWN}
    fetched = _resolved(rm.fetch(FetchParams(-1, max_wait_ms=0, min_bytes=1),
                                 {("t", p): PartitionData(0, max_bytes=1 << 20)
                                  for p in (0, 1)}))
    assert [r.error_code for r in fetched.values()] == [NOT_LEADER, UNKNOWN]
    listed = rm.list_offsets(-1, 0, {("t", p): OffsetQuery(-1) for p in (0, 1)})
    assert [listed["t", p].error_code for p in (0, 1)] == [NOT_LEADER, UNKNOWN]
    epochs = rm.offsets_for_leader_epoch({("t", p): EpochQuery(-1, 0) for p in (0, 1)})
    assert [epochs["t", p].error_code for p in (0, 1)] == [NOT_LEADER, UNKNOWN]
