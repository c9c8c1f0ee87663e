"""bench/chaos_verifiable.py: the JSON-lines events of Kafka's VerifiableProducer and
VerifiableConsumer, and the accounting bench/chaos.py makes of them (pure, no JVM). The lines are
in the tools' 2.8.2 format (their Jackson classes' property order)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

from chaos_history import account  # noqa: E402
from chaos_verifiable import (ConsumerLog, ProducerLog, parse_event,  # noqa: E402
                              unconsumed, verifiable_sequence)

TOPIC = "chaos"


def _feed(log, lines):
    for line in lines:
        event = parse_event(line)
        if event is not None:
            log.feed(event)
    return log


def _success(value, partition, offset, topic=TOPIC):
    return ('{"timestamp":1764180000000,"name":"producer_send_success","key":null,'
            f'"value":"{value}","topic":"{topic}","partition":{partition},"offset":{offset}}}')


def _record(value, partition, offset):
    return ('{"timestamp":1764180000001,"name":"record_data","key":null,'
            f'"value":"{value}","topic":"{TOPIC}","partition":{partition},"offset":{offset}}}')


ERROR = ('{"timestamp":1764180000002,"name":"producer_send_error","exception":'
         '"class org.apache.kafka.common.errors.NotEnoughReplicasException","message":'
         '"Messages are rejected since there are fewer in-sync replicas than required.",'
         '"topic":"chaos","key":null,"value":"3"}')


def test_producer_events_give_acknowledged_values_and_failed_sends_by_class():
    log = _feed(ProducerLog(TOPIC), [
        '{"timestamp":1764180000000,"name":"startup_complete"}',
        "SLF4J: a line that is not JSON",
        _success(0, 0, 0), _success(1, 2, 0), ERROR, _success(2, 0, 1),
        _success(9, 0, 0, topic="other"),
        '{"timestamp":1764180000009,"name":"shutdown_complete"}',
        '{"timestamp":1764180000010,"name":"tool_data","sent":4,"acked":3,'
        '"target_throughput":500,"avg_throughput":499.5}'])
    assert log.acknowledged == [(b"0", 0, 0), (b"1", 2, 0), (b"2", 0, 1)]
    assert dict(log.errors) == {"NotEnoughReplicasException": 1} and log.failed == 1
    assert (log.other_topic, log.shutdowns) == (1, 1)
    assert (log.tool_data["sent"], log.tool_data["acked"]) == (4, 3)


def test_consumer_events_give_reads_redeliveries_commits_and_rebalances():
    log = _feed(ConsumerLog(TOPIC), [
        '{"timestamp":1,"name":"partitions_assigned","partitions":['
        '{"topic":"chaos","partition":0},{"topic":"chaos","partition":1}]}',
        _record(0, 0, 0), _record(2, 0, 1),
        '{"timestamp":2,"name":"records_consumed","count":2,"partitions":[{"topic":"chaos",'
        '"partition":0,"count":2,"minOffset":0,"maxOffset":1}]}',
        '{"timestamp":3,"name":"offsets_committed","offsets":[{"topic":"chaos","partition":0,'
        '"offset":2}],"success":true}',
        '{"timestamp":4,"name":"offsets_committed","offsets":[{"topic":"chaos","partition":1,'
        '"offset":5}],"error":"the coordinator moved","success":false}',
        '{"timestamp":5,"name":"partitions_revoked","partitions":[{"topic":"chaos",'
        '"partition":1}]}',
        _record(2, 0, 1), _record(7, 0, 1)])      # a redelivery, then another value there
    assert log.reads == {0: {0: b"0", 1: b"7"}}
    assert (log.delivered, log.count(), log.redelivered, log.polled) == (4, 2, 2, 2)
    assert log.conflicts == [(0, 1, b"2", b"7")]
    assert log.committed == {0: 2} and (log.commits, log.commit_failures) == (2, 1)
    assert (log.assignments, log.revocations, log.assigned) == (1, 1, {0})


def test_verifiable_accounting_finds_lost_duplicated_and_unconsumed_records():
    acked = [(b"0", 0, 0), (b"1", 1, 0), (b"2", 0, 1), (b"3", 0, 2)]
    log_reads = {0: {0: b"0", 1: b"2", 2: b"2", 3: b"probe-0"}, 1: {0: b"1"}}
    result = account([], [(b"probe-0", 0, 3)], log_reads, acked_values=acked,
                     sequence_of=verifiable_sequence)
    assert (result.acknowledged, result.probes, result.read) == (4, 1, 5)
    # "3" was acknowledged at offset 2, where the log holds a second copy of "2"
    assert result.lost == [(0, 2, b"3")] and result.duplicated == 1 and result.failed
    consumer_reads = {0: {0: b"0", 1: b"2"}}
    assert unconsumed(acked, consumer_reads) == [(b"1", 1, 0), (b"3", 0, 2)]
    clean = account([], [], {0: {0: b"0", 1: b"1"}}, acked_values=[(b"0", 0, 0), (b"1", 0, 1)],
                    sequence_of=verifiable_sequence)
    assert not clean.failed and clean.duplicated == 0 and clean.out_of_order == []


def test_verifiable_sequences_are_the_values_and_probes_have_none():
    assert [verifiable_sequence(v) for v in (b"0", b"42", b"probe-3", None, b"")] == \
        [0, 42, None, None, None]
    assert parse_event("[1, 2]") is None and parse_event('{"no": "name"}') is None


def test_per_fault_table_gives_each_window_its_increases_and_its_lost_records():
    from chaos_history import FaultMark, per_fault_table

    acked = [(b"%d" % i, 0, i) for i in range(10)]
    marks = [FaultMark("before the faults", {}),
             FaultMark("#1 leader-kill", {"acked": 4, "send errors": 0}),
             FaultMark("#2 zombie-controller", {"acked": 7, "send errors": 3})]
    table = per_fault_table(marks, {"acked": 10, "send errors": 5}, acked,
                            {"lost": [(b"5", 0, 5), (b"probe-1", 1, 0)],
                             "never consumed": [(b"0", 0, 0), (b"8", 0, 8), (b"9", 0, 9)]})
    rows = [line.split() for line in table.splitlines()[2:]]
    assert rows == [["before", "the", "faults", "4", "0", "0", "1"],
                    ["#1", "leader-kill", "3", "3", "1", "0"],
                    ["#2", "zombie-controller", "3", "2", "0", "2"],
                    ["(probes,", "not", "the", "producer)", "1", "0"]]
