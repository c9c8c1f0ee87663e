"""The data source's options, offsets and planning: pure functions (no Spark, no brokers)."""

from __future__ import annotations

import json
import logging

import pytest

from spark_integration.offsets import (
    EARLIEST,
    LATEST,
    DataLossError,
    OffsetRange,
    OffsetSpec,
    TopicPartition,
    check_start,
    limit_offsets,
    offsets_from_json,
    offsets_to_json,
    plan_ranges,
)
from spark_integration.options import (
    OptionError,
    Subscription,
    check_read_options,
    check_write_columns,
    parse_offset_spec,
    parse_read_options,
    parse_write_options,
)
from spark_integration.pipelines.payments import (
    Payment,
    generate_payments,
    late_payments,
    parse_duration_ms,
    reference_totals,
)

pytestmark = pytest.mark.spark

BASE = {"kafkalite.bootstrap.servers": "127.0.0.1:9092"}
T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


def opts(**kwargs):
    return {**BASE, **kwargs}


def error_of(fn, *args, **kwargs) -> OptionError:
    with pytest.raises(OptionError) as info:
        fn(*args, **kwargs)
    return info.value


# --- subscriptions -----------------------------------------------------------------------------
def test_exactly_one_subscription_option():
    assert "one of 'assign', 'subscribe' or 'subscribePattern' is required" in str(
        error_of(parse_read_options, opts(), streaming=False))
    err = error_of(parse_read_options, opts(subscribe="t", assign='{"t": [0]}'), streaming=False)
    assert str(err).startswith("assign: only one of")
    assert "'assign' and 'subscribe'" in str(err)
    err = error_of(parse_read_options, opts(subscribe="t", subscribePattern="t.*"),
                   streaming=True)
    assert "'subscribe' and 'subscribePattern'" in str(err)


def test_options_are_case_insensitive():
    parsed = parse_read_options({"KAFKALITE.BOOTSTRAP.SERVERS": "h:1", "SUBSCRIBE": "a, b,a",
                                 "STARTINGOFFSETS": "Latest"}, streaming=True)
    assert parsed.bootstrap_servers == "h:1"
    assert parsed.subscription.topics == ("a", "b")
    assert parsed.starting == OffsetSpec.latest()


def test_connection_options():
    assert str(error_of(parse_read_options, {"subscribe": "t"}, streaming=False)).startswith(
        "kafkalite.bootstrap.servers: required")
    zk = parse_read_options({"kafkalite.zookeeper": "zk:2181/kl", "subscribe": "t"},
                            streaming=False)
    assert zk.bootstrap_servers is None and zk.zookeeper == "zk:2181/kl"
    # a pipeline written for Kafka keeps working
    kafka = parse_read_options({"kafka.bootstrap.servers": "h:9", "subscribe": "t"},
                               streaming=False)
    assert kafka.bootstrap_servers == "h:9"


def test_subscribe_and_pattern_resolution():
    cluster = {"t": [0, 1, 2], "tx": [0], "other": [0]}
    sub = Subscription.from_options({"subscribe": "t,other"})
    assert sub.resolve(cluster) == [TopicPartition("other", 0), T0, T1, T2]
    pattern = Subscription.from_options({"subscribePattern": "t.*"})
    assert pattern.resolve(cluster) == sorted([T0, T1, T2, TopicPartition("tx", 0)])
    assert not pattern.matches("xt")          # a whole-name match, as Java's Pattern.matches
    assert pattern.resolve({}) == []
    err = error_of(Subscription.from_options({"subscribe": "t,nope"}).resolve, cluster)
    assert str(err) == "subscribe: unknown topic 'nope'"
    assert Subscription.from_options({"subscribe": "nope"}).resolve(cluster, strict=False) == []


def test_assign():
    sub = Subscription.from_options({"assign": '{"t": [2, 0]}'})
    assert sub.assigned == (T0, T2)
    assert sub.resolve({"t": [0, 1, 2]}) == [T0, T2]
    err = error_of(sub.resolve, {"t": [0, 1]})
    assert str(err).startswith("assign: unknown partition")
    assert "assign: unknown topic: 't'" in str(error_of(sub.resolve, {}))
    for bad in ('{"t": [0', '[0, 1]', '{"t": []}', '{"t": [-1]}', '{"t": ["x"]}',
                '{"t": [0, 0]}', '{"bad topic!": [0]}'):
        assert str(error_of(Subscription.from_options, {"assign": bad})).startswith("assign: ")


def test_bad_subscribe_values():
    assert str(error_of(Subscription.from_options, {"subscribe": " , "})).startswith(
        "subscribe: needs at least one topic")
    assert "invalid topic" in str(error_of(Subscription.from_options, {"subscribe": "a b"}))
    err = error_of(Subscription.from_options, {"subscribePattern": "t(["})
    assert str(err).startswith("subscribePattern: invalid regular expression")


# --- offsets options ---------------------------------------------------------------------------
def test_offset_specs():
    assert parse_offset_spec("startingOffsets", None, "earliest") == OffsetSpec.earliest()
    spec = parse_offset_spec("startingOffsets", '{"t": {"0": 23, "1": -2, "2": -1}}', "latest")
    assert spec.offsets == {T0: 23, T1: EARLIEST, T2: LATEST}
    resolved = spec.resolve([T0, T1, T2, TopicPartition("t", 3)],
                            earliest={T0: 0, T1: 5, T2: 0, TopicPartition("t", 3): 7},
                            latest={T0: 50, T1: 60, T2: 70, TopicPartition("t", 3): 80},
                            default=EARLIEST)
    assert resolved == {T0: 23, T1: 5, T2: 70, TopicPartition("t", 3): 7}


@pytest.mark.parametrize("value, problem", [
    ('{"t": {"0": 1', "startingOffsets: malformed JSON"),
    ('{"t": [1, 2]}', "startingOffsets: topic 't' needs an object"),
    ('{"t": {"0": -3}}', "startingOffsets: offset of t-0 must be"),
    ('{"t": {"x": 1}}', "startingOffsets: partition of topic 't'"),
    ('{"t": {"0": "5"}}', "startingOffsets: offset of t-0 must be"),
    ("earliest-ish", "startingOffsets: expected earliest, latest, or a JSON object"),
])
def test_malformed_offsets_json_names_the_option(value, problem):
    err = error_of(parse_read_options, opts(subscribe="t", startingOffsets=value),
                   streaming=True)
    assert str(err).startswith(problem)
    assert err.option == "startingOffsets"


def test_batch_and_stream_offset_rules():
    # batch: never start at latest, never end at earliest (Spark's rules)
    assert "'latest' is not allowed for batch queries" in str(error_of(
        parse_read_options, opts(subscribe="t", startingOffsets="latest"), streaming=False))
    assert "-1 (latest) is not allowed" in str(error_of(
        parse_read_options, opts(subscribe="t", startingOffsets='{"t": {"0": -1}}'),
        streaming=False))
    assert str(error_of(parse_read_options, opts(subscribe="t", endingOffsets="earliest"),
                        streaming=False)).startswith("endingOffsets: 'earliest' is not allowed")
    # stream: no ending offsets
    assert str(error_of(parse_read_options, opts(subscribe="t", endingOffsets="latest"),
                        streaming=True)).startswith("endingOffsets: is for batch queries only")
    # defaults: batch earliest -> latest, stream latest
    batch = parse_read_options(opts(subscribe="t"), streaming=False)
    assert (batch.starting.kind, batch.ending.kind) == ("earliest", "latest")
    assert parse_read_options(opts(subscribe="t"), streaming=True).starting.kind == "latest"
    # offsets for partitions outside the subscription
    assert "partition u-0 is not in the subscription" in str(error_of(
        parse_read_options, opts(subscribe="t", startingOffsets='{"u": {"0": 1}}'),
        streaming=True))


def test_other_read_options():
    parsed = parse_read_options(opts(subscribe="t", maxOffsetsPerTrigger="100",
                                     failOnDataLoss="False", includeHeaders="true",
                                     minPartitions="8", **{"kafkalite.fetch.max.bytes": "1024"}),
                                streaming=True)
    assert parsed.max_offsets_per_trigger == 100
    assert parsed.fail_on_data_loss is False and parsed.include_headers is True
    assert parsed.min_partitions == 8
    assert parsed.consumer_settings == {"fetch_max_bytes": 1024}
    for name, value in (("maxOffsetsPerTrigger", "0"), ("minPartitions", "x"),
                        ("failOnDataLoss", "maybe"), ("includeHeaders", "2")):
        err = error_of(parse_read_options, opts(subscribe="t", **{name: value}), streaming=True)
        assert str(err).startswith(f"{name}: ")
    assert str(error_of(parse_read_options, opts(subscribe="t", startingTimestamp="1"),
                        streaming=False)).startswith("startingTimestamp: is not supported")


def test_check_read_options_runs_the_checks_common_to_batch_and_stream():
    check_read_options(opts(subscribe="t", endingOffsets="latest"))
    assert str(error_of(check_read_options, opts(subscribe="t", assign='{"t":[0]}'))
               ).startswith("assign:")
    assert str(error_of(check_read_options, opts(subscribe="t", endingOffsets="{"))
               ).startswith("endingOffsets: malformed JSON")


# --- write options -----------------------------------------------------------------------------
def test_write_options_and_columns():
    w = parse_write_options(opts(topic="out", **{"kafkalite.linger.ms": "20"}))
    assert w.topic == "out" and w.producer_settings == {"linger_ms": 20}
    assert str(error_of(parse_write_options, opts(**{"kafkalite.acks": "1"}))).startswith(
        "kafkalite.acks: the kafkalite sink always writes with acks=all")
    check_write_columns({"value": "binary"}, "out")
    check_write_columns({"key": "string", "value": "string", "topic": "string",
                         "partition": "int", "headers": "array<struct<key:string,value:binary>>",
                         "extra": "double"}, None)
    assert str(error_of(check_write_columns, {"key": "binary"}, "out")).startswith(
        "value: the DataFrame needs a 'value' column")
    assert str(error_of(check_write_columns, {"value": "binary"}, None)).startswith(
        "topic: no 'topic' option and no 'topic' column")
    assert str(error_of(check_write_columns, {"value": "int"}, "t")).startswith(
        "value: the 'value' column must be binary or string")
    assert str(error_of(check_write_columns, {"value": "binary", "partition": "bigint"}, "t")
               ).startswith("partition: the 'partition' column must be int")


# --- offsets -----------------------------------------------------------------------------------
def test_offsets_json_round_trip():
    offsets = {T1: 5, T0: 3, TopicPartition("a", 10): 0}
    as_json = offsets_to_json(offsets)
    assert as_json == {"a": {"10": 0}, "t": {"0": 3, "1": 5}}
    assert json.loads(json.dumps(as_json)) == as_json          # what Spark checkpoints
    assert offsets_from_json(as_json) == dict(sorted(offsets.items()))
    assert offsets_from_json({}) == {}
    with pytest.raises(ValueError):
        offsets_from_json({"t": 5})


def test_plan_ranges_one_per_partition_without_min_partitions():
    ranges = [OffsetRange("t", 1, 0, 10), OffsetRange("t", 0, 5, 5), OffsetRange("t", 2, 3, 4)]
    assert plan_ranges(ranges) == [OffsetRange("t", 1, 0, 10), OffsetRange("t", 2, 3, 4)]
    assert plan_ranges(ranges, 2) == plan_ranges(ranges)


@pytest.mark.parametrize("sizes, min_partitions", [
    ([100, 100, 100], 7), ([1000, 10, 1], 10), ([5], 3), ([3, 3], 100), ([7, 0, 9], 4),
])
def test_plan_ranges_splits_exactly(sizes, min_partitions):
    ranges = [OffsetRange("t", p, 10, 10 + size) for p, size in enumerate(sizes)]
    planned = plan_ranges(ranges, min_partitions)
    # the pieces cover every offset exactly once
    covered = sorted((r.partition, o) for r in planned for o in range(r.from_offset,
                                                                     r.until_offset))
    assert covered == sorted((r.partition, o) for r in ranges for o in range(r.from_offset,
                                                                            r.until_offset))
    assert all(r.size > 0 for r in planned)
    assert len(planned) == min(min_partitions, sum(sizes))
    # bigger ranges get more pieces
    pieces = [sum(1 for r in planned if r.partition == p) for p in range(len(sizes))]
    assert all(pieces[i] >= pieces[j] for i in range(len(sizes)) for j in range(len(sizes))
               if sizes[i] > sizes[j])


def test_limit_offsets_spreads_the_budget():
    start = {T0: 0, T1: 100, T2: 50}
    latest = {T0: 300, T1: 200, T2: 50}
    end = limit_offsets(start, latest, 120)
    assert sum(end[tp] - start[tp] for tp in start) == 120
    assert end[T2] == 50
    assert end[T0] - start[T0] == 90 and end[T1] - start[T1] == 30   # 3:1 as available
    assert limit_offsets(start, latest, 10_000) == latest
    # every partition moves at least when the budget allows
    end = limit_offsets({T0: 0, T1: 0}, {T0: 1000, T1: 1}, 2)
    assert sum(end.values()) == 2


def test_check_start_data_loss(caplog):
    assert check_start(T0, 10, 0, 20, True) == 10
    with pytest.raises(DataLossError) as info:
        check_start(T0, 5, 8, 20, True)
    assert "failOnDataLoss" in str(info.value) and "t-0" in str(info.value)
    with caplog.at_level(logging.WARNING, logger="spark_integration"):
        assert check_start(T0, 5, 8, 20, False) == 8
    assert "failOnDataLoss=false" in caplog.text
    with pytest.raises(DataLossError):
        check_start(T0, 30, 0, 20, True)              # the log went backwards


# --- the pipeline's pure parts -----------------------------------------------------------------
def test_durations():
    assert parse_duration_ms("1 minute") == 60_000
    assert parse_duration_ms("2 minutes") == 120_000
    assert parse_duration_ms("500 ms") == 500
    assert parse_duration_ms("90s") == 90_000
    with pytest.raises(ValueError):
        parse_duration_ms("soon")


def test_payments_generator_is_deterministic_and_describes_payments():
    a = generate_payments(50, start_ms=1_700_000_000_000, seed=3)
    assert a == generate_payments(50, start_ms=1_700_000_000_000, seed=3)
    assert all(p.payer != p.payee and p.amount_cents > 0 for p in a)
    assert Payment.from_json(a[0].to_json()) == a[0]
    assert Payment("x", "Pankaj", "Ashish", 10000, "USD", 1).describe() == \
        "Pankaj paid $100 to Ashish"


def test_reference_totals_watermark_rules():
    minute = 60_000
    base = 1_700_000_040_000 - 1_700_000_040_000 % minute

    def p(i, payer, cents, t):
        return Payment(str(i), payer, "X", cents, "USD", base + t)

    round1 = [p(1, "A", 100, 1_000), p(2, "A", 200, 59_000), p(3, "B", 50, 61_000),
              p(4, "A", 1, 200_000)]
    round2 = [p(5, "A", 7, 10_000),                   # before the watermark: dropped
              p(6, "B", 5, 185_000), p(6, "B", 5, 185_000)]   # stored twice: counted once
    result = reference_totals([round1, round2], "1 minute", "2 minutes")
    # watermark after round 1: 200 s - 120 s = 80 s: only window [0, 60 s) is closed
    assert result.closed == {(base, "A"): (300, 2)}
    assert [d.id for d in result.dropped] == ["5"]
    assert result.watermark_ms == base + 80_000
    assert result.open == {(base + minute, "B"): (50, 1), (base + 3 * minute, "A"): (1, 1),
                           (base + 3 * minute, "B"): (5, 1)}
    late = late_payments(3, event_time_ms=base)
    assert len({x.id for x in late}) == 3
