"""The payments pipeline: windowed totals per payer, from kafkalite to kafkalite and Parquet.

Payment events ("Pankaj paid $100.00 to Ashish") are JSON records in a kafkalite topic, keyed by
payer, with the payment's own time (``event_time_ms``) as event time::

    {"id": "p-000042", "payer": "Pankaj", "payee": "Ashish", "amount_cents": 10000,
     "currency": "USD", "event_time_ms": 1718000000000}

The Structured Streaming job reads them with the "kafkalite" source (or, with
``connector="kafka"``, Spark's own Kafka connector: ``topic_io``), and per tumbling window of
event time (1 minute by default) and payer sums the amounts, with a watermark (2 minutes by
default); payments stored twice (an at-least-once producer's retry) count once (deduplicated by
id within the watermark). A window's total is final -- and written, once -- when the watermark (the latest event
time seen minus the delay) passes the window's end; events older than the watermark are dropped
as too late. Output mode is *append*: every (window, payer) total is written exactly once to

* a kafkalite topic (JSON, keyed by payer; at-least-once, like any kafkalite/Kafka sink), and
* Parquet files (exactly-once: Spark's file sink).

Each sink is its own streaming query with its own checkpoint, over the same input. Progress
(rows and batches processed, the watermark) is printed as micro-batches finish.

:func:`reference_totals` computes the same result in plain Python, without Spark, for the tests
and the demo's self-check. :func:`run_demo` is the whole demo on a running cluster.

Run it with ``kafkalite pipeline run ...`` / ``kafkalite pipeline demo ...``. This module does not
import the CLI: the command line sits above the pipeline, never below it.
"""

from __future__ import annotations

import calendar
import json
import os
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

__all__ = [
    "Payment", "PipelineConfig", "PipelineResult", "ReferenceResult", "generate_payments",
    "late_payments", "produce_payments", "ensure_topics", "totals_frame", "start_queries",
    "run_pipeline", "reference_totals", "read_parquet_totals", "read_topic_totals",
    "format_table", "run_demo", "parse_duration_ms", "topic_record_key", "DEFAULT_PAYERS",
]

DEFAULT_PAYERS = ("Pankaj", "Ashish", "Priya", "Wei", "Amara", "Lucas")


# --- events -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Payment:
    id: str
    payer: str
    payee: str
    amount_cents: int
    currency: str
    event_time_ms: int

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> Payment:
        return cls(**json.loads(data))

    def describe(self) -> str:
        dollars, cents = divmod(self.amount_cents, 100)
        amount = f"${dollars}" if cents == 0 else f"${dollars}.{cents:02d}"
        return f"{self.payer} paid {amount} to {self.payee}"


def generate_payments(count: int, *, start_ms: int | None = None, span_s: float = 360,
                      seed: int = 7, payers: Iterable[str] = DEFAULT_PAYERS,
                      late_fraction: float = 0.1, max_late_s: float = 45,
                      id_prefix: str = "p") -> list[Payment]:
    """``count`` payments with event times over ``span_s`` seconds from ``start_ms``.

    Events come roughly in event-time order; ``late_fraction`` of them are out of order by up to
    ``max_late_s`` seconds (late, but within a watermark delay larger than that). Deterministic
    for a given ``seed``. ``start_ms`` defaults to ``span_s`` before now.
    """
    rng = random.Random(seed)
    payers = list(payers)
    if len(payers) < 2:
        raise ValueError("need at least two payers")
    if start_ms is None:
        start_ms = int(time.time() * 1000 - span_s * 1000)
    step = span_s * 1000 / max(count, 1)
    out = []
    for i in range(count):
        event_time = start_ms + int(i * step) + rng.randrange(0, max(int(step), 1))
        if rng.random() < late_fraction:
            event_time -= rng.randrange(1000, int(max_late_s * 1000))
        payer = rng.choice(payers)
        payee = rng.choice([p for p in payers if p != payer])
        amount = 100 * rng.choice((5, 10, 12, 20, 25, 40, 50, 75, 100, 150, 200, 500))
        out.append(Payment(f"{id_prefix}-{i:06d}", payer, payee, amount, "USD", max(event_time, 1)))
    return out


def late_payments(count: int, *, event_time_ms: int, seed: int = 11,
                  payers: Iterable[str] = DEFAULT_PAYERS) -> list[Payment]:
    """``count`` payments all stamped ``event_time_ms`` (e.g. long before the watermark)."""
    rng = random.Random(seed)
    payers = list(payers)
    out = []
    for i in range(count):
        payer = rng.choice(payers)
        payee = rng.choice([p for p in payers if p != payer])
        out.append(Payment(f"late-{seed}-{i:04d}", payer, payee, 100 * rng.randrange(1, 50),
                           "USD", event_time_ms + i))
    return out


def ensure_topics(bootstrap_servers: str, topics: Iterable[str], *, partitions: int = 3,
                  replication_factor: int | None = None) -> None:
    """Create missing topics (replication factor: min(3, live brokers) unless given)."""
    from kafkalite.client import AdminClient, NewTopic

    with AdminClient(bootstrap_servers=bootstrap_servers) as admin:
        existing = set(admin.list_topics())
        if replication_factor is None:
            replication_factor = min(3, len(admin.describe_cluster().brokers))
        missing = [NewTopic(t, partitions, replication_factor) for t in dict.fromkeys(topics)
                   if t not in existing]
        if missing:
            results = admin.create_topics(missing, raise_on_error=False)
            from kafkalite.errors import TopicAlreadyExistsError

            for error in results.values():
                if error is not None and not isinstance(error, TopicAlreadyExistsError):
                    raise error


def produce_payments(bootstrap_servers: str, topic: str, payments: Iterable[Payment]) -> int:
    """Produce payments (key = payer, timestamp = event time) with acks=all; returns the count."""
    from kafkalite.client import Producer

    n = 0
    with Producer(bootstrap_servers=bootstrap_servers, acks="all", linger_ms=5) as producer:
        futures = [producer.send(topic, value=p.to_json(), key=p.payer.encode(),
                                 timestamp_ms=p.event_time_ms) for p in payments]
        producer.flush()
        for future in futures:
            future.get(60)
            n += 1
    return n


# --- durations ----------------------------------------------------------------------------------
_UNITS_MS = {}
for _names, _ms in ((("ms", "milli", "millis", "millisecond", "milliseconds"), 1),
                    (("s", "sec", "secs", "second", "seconds"), 1000),
                    (("m", "min", "mins", "minute", "minutes"), 60_000),
                    (("h", "hour", "hours"), 3_600_000)):
    for _name in _names:
        _UNITS_MS[_name] = _ms


def parse_duration_ms(text: str) -> int:
    """``"1 minute"``, ``"90 seconds"``, ``"2 min"``, ``"500 ms"`` -> milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]+)\s*", text or "")
    if match is None or match.group(2).lower() not in _UNITS_MS:
        raise ValueError(f"not a duration: {text!r} (say e.g. '1 minute' or '30 seconds')")
    return int(match.group(1)) * _UNITS_MS[match.group(2).lower()]


def _spark_duration(text: str) -> str:
    return f"{parse_duration_ms(text) // 1000} seconds" if parse_duration_ms(text) % 1000 == 0 \
        else f"{parse_duration_ms(text)} milliseconds"


# --- the Spark job ------------------------------------------------------------------------------
@dataclass
class PipelineConfig:
    bootstrap_servers: str
    input_topic: str = "payments"
    output_topic: str = "payer-totals"
    output_dir: str = "pipeline-output"          # Parquet under <output_dir>/totals
    checkpoint_dir: str | None = None            # default <output_dir>/checkpoints
    window: str = "1 minute"
    watermark: str = "2 minutes"
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    available_now: bool = True                   # False: run every `interval` until stopped
    interval: str = "5 seconds"
    sinks: tuple[str, ...] = ("kafkalite", "parquet")    # "kafkalite": the output topic
    connector: str = "kafkalite"                 # or "kafka": Spark's own Kafka connector

    @property
    def parquet_path(self) -> str:
        return os.path.join(self.output_dir, "totals")

    @property
    def checkpoints(self) -> str:
        return self.checkpoint_dir or os.path.join(self.output_dir, "checkpoints")


PAYMENT_DDL = ("id STRING, payer STRING, payee STRING, amount_cents BIGINT, currency STRING, "
               "event_time_ms BIGINT")


def totals_frame(spark, config: PipelineConfig):
    """The streaming DataFrame of closed windows: window_start, window_end, payer,
    total_cents, payments."""
    from pyspark.sql import functions as F

    from spark_integration.pipelines.topic_io import topic_stream

    records = topic_stream(spark, config.connector, config.bootstrap_servers, config.input_topic,
                           starting_offsets=config.starting_offsets,
                           max_offsets_per_trigger=config.max_offsets_per_trigger)
    payments = (records
                .select(F.from_json(F.col("value").cast("string"), PAYMENT_DDL).alias("p"))
                .select("p.*")
                .where(F.col("payer").isNotNull() & F.col("event_time_ms").isNotNull())
                .withColumn("event_time", F.timestamp_millis(F.col("event_time_ms"))))
    return (payments
            .withWatermark("event_time", _spark_duration(config.watermark))
            # producers deliver at least once: a retried send can store a payment twice
            .dropDuplicates(["id", "event_time"])
            .groupBy(F.window("event_time", _spark_duration(config.window)).alias("w"), "payer")
            .agg(F.sum("amount_cents").alias("total_cents"), F.count("*").alias("payments"))
            .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                    "payer", "total_cents", "payments"))


def start_queries(spark, config: PipelineConfig) -> list:
    """Start one streaming query per sink; returns them (running)."""
    from pyspark.sql import functions as F

    from spark_integration.pipelines.topic_io import topic_sink

    totals = totals_frame(spark, config)
    queries = []

    def trigger(writer):
        if config.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=_spark_duration(config.interval))

    if "kafkalite" in config.sinks:
        as_records = totals.select(
            F.col("payer").alias("key"),
            F.to_json(F.struct(
                F.col("payer"),
                F.date_format("window_start", "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("window_start"),
                F.date_format("window_end", "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("window_end"),
                F.col("total_cents"), F.col("payments"))).alias("value"))
        writer = (topic_sink(as_records, config.connector, config.bootstrap_servers,
                             config.output_topic)
                  .queryName(f"payer_totals_to_{config.connector}")
                  .option("checkpointLocation", os.path.join(config.checkpoints, "kafkalite"))
                  .outputMode("append"))
        queries.append(trigger(writer).start())
    if "parquet" in config.sinks:
        writer = (totals.writeStream.format("parquet")
                  .queryName("payer_totals_to_parquet")
                  .option("path", config.parquet_path)
                  .option("checkpointLocation", os.path.join(config.checkpoints, "parquet"))
                  .outputMode("append"))
        queries.append(trigger(writer).start())
    return queries


@dataclass
class PipelineResult:
    batches: int = 0
    input_rows: int = 0
    per_query: dict = field(default_factory=dict)      # name -> {"batches", "input_rows"}
    watermark: str | None = None


def _describe_progress(progress: dict) -> str:
    rows = progress.get("numInputRows", 0)
    duration = progress.get("batchDuration") or progress.get("durationMs", {}).get(
        "triggerExecution", 0)
    watermark = (progress.get("eventTime") or {}).get("watermark")
    state = progress.get("stateOperators") or []
    aggregates = [op for op in state if op.get("operatorName") != "dedupe"]
    dedupes = [op for op in state if op.get("operatorName") == "dedupe"]
    text = f"batch {progress.get('batchId')}: {rows} input rows in {duration} ms"
    if aggregates:
        text += f", {sum(op.get('numRowsUpdated', 0) for op in aggregates)} window totals updated"
    late = sum(op.get("numRowsDroppedByWatermark", 0) for op in state)
    if late:
        text += f", {late} late rows dropped"
    duplicates = sum((op.get("customMetrics") or {}).get("numDroppedDuplicateRows", 0)
                     for op in dedupes)
    if duplicates:
        text += f", {duplicates} duplicates dropped"
    if watermark:
        text += f", watermark {watermark.replace('T', ' ').replace('.000Z', '')}"
    return text


def run_pipeline(spark, config: PipelineConfig, *, echo: Callable[[str], None] = print,
                 timeout_s: float | None = None, poll_s: float = 0.5) -> PipelineResult:
    """Run the pipeline's queries, printing each micro-batch's progress.

    With ``available_now`` it returns once everything available at the start is processed;
    otherwise it runs until ``timeout_s`` (None: until Ctrl-C), then stops the queries.
    """
    queries = start_queries(spark, config)
    result = PipelineResult()
    seen: dict[str, int] = {}
    deadline = None if timeout_s is None else time.monotonic() + timeout_s

    def report() -> None:
        for q in queries:
            name = q.name or str(q.id)
            stats = result.per_query.setdefault(name, {"batches": 0, "input_rows": 0})
            for progress in q.recentProgress:
                batch_id = progress.get("batchId", -1)
                if batch_id <= seen.get(name, -1):
                    continue
                seen[name] = batch_id
                stats["batches"] += 1
                stats["input_rows"] += progress.get("numInputRows", 0)
                result.batches += 1
                result.input_rows += progress.get("numInputRows", 0)
                watermark = (progress.get("eventTime") or {}).get("watermark")
                if watermark:
                    result.watermark = watermark
                echo(f"[{name}] {_describe_progress(progress)}")

    try:
        while any(q.isActive for q in queries):
            for q in queries:
                if q.isActive:
                    q.awaitTermination(poll_s)
            report()
            if deadline is not None and time.monotonic() > deadline:
                break
        report()
        for q in queries:
            error = q.exception()
            if error is not None:
                raise error
    finally:
        for q in queries:
            if q.isActive:
                q.stop()
    return result


# --- results ------------------------------------------------------------------------------------
Key = tuple  # (window_start_ms, payer)


def read_parquet_totals(spark, path: str) -> dict[Key, tuple[int, int]]:
    """``{(window_start_ms, payer): (total_cents, payments)}`` from the Parquet sink."""
    if not os.path.isdir(path):
        return {}
    from pyspark.sql import functions as F

    rows = (spark.read.parquet(path)
            .select(F.unix_millis("window_start").alias("start"), "payer", "total_cents",
                    "payments")
            .collect())
    out = {}
    for r in rows:
        key = (int(r.start), r.payer)
        if key in out:
            raise AssertionError(f"window total {key} was written twice to Parquet")
        out[key] = (int(r.total_cents), int(r.payments))
    return out


def read_topic_totals(bootstrap_servers: str, topic: str) -> list[dict]:
    """Every totals record in the output topic (JSON values), in partition/offset order."""
    from kafkalite.client import Consumer, TopicPartition

    out = []
    with Consumer(bootstrap_servers=bootstrap_servers, group_id=None, enable_auto_commit=False,
                  auto_offset_reset="earliest", allow_auto_create_topics=False) as consumer:
        parts = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        if not tps:
            return out
        ends = consumer.end_offsets(tps)
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        remaining = {tp for tp in tps if ends[tp] > consumer.position(tp)}
        deadline = time.monotonic() + 60
        while remaining and time.monotonic() < deadline:
            for tp, records in consumer.poll(500).items():
                out.extend(json.loads(r.value) for r in records if r.offset < ends[tp])
                if consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
    return out


def topic_record_key(record: dict) -> Key:
    """``(window_start_ms, payer)`` of one totals record from the output topic."""
    start = calendar.timegm(time.strptime(record["window_start"], "%Y-%m-%dT%H:%M:%SZ")) * 1000
    return (start, record["payer"])


@dataclass
class ReferenceResult:
    closed: dict          # {(window_start_ms, payer): (total_cents, payments)}, written windows
    open: dict            # windows still waiting for the watermark
    dropped: list         # payments dropped as too late
    watermark_ms: int


def reference_totals(rounds: Iterable[Iterable[Payment]], window: str = "1 minute",
                     watermark: str = "2 minutes") -> ReferenceResult:
    """The pipeline's result computed in plain Python, round by round.

    A round is what one micro-batch reads (e.g. everything produced before one availableNow
    run). Spark's rules: a payment whose event time is at or before the watermark of the previous
    batch is dropped; a payment id seen before is a duplicate (an at-least-once producer's retry)
    and counted once; after the batch the watermark becomes max(watermark, latest event time -
    delay); a window (start aligned to the epoch) is written when its end <= the watermark.
    """
    window_ms, delay_ms = parse_duration_ms(window), parse_duration_ms(watermark)
    current = 0
    state: dict[Key, list[int]] = {}
    closed: dict[Key, tuple[int, int]] = {}
    dropped: list[Payment] = []
    seen: set[str] = set()
    for events in rounds:
        events = list(events)
        if not events:
            continue
        for p in events:
            if p.event_time_ms <= current:
                dropped.append(p)
                continue
            if p.id in seen:
                continue
            seen.add(p.id)
            start = p.event_time_ms - p.event_time_ms % window_ms
            total = state.setdefault((start, p.payer), [0, 0])
            total[0] += p.amount_cents
            total[1] += 1
        current = max(current, max(p.event_time_ms for p in events) - delay_ms)
        for key in sorted(state):
            if key[0] + window_ms <= current:
                closed[key] = tuple(state.pop(key))
    return ReferenceResult(closed, {k: tuple(v) for k, v in state.items()}, dropped, current)


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000))


def format_table(totals: dict[Key, tuple[int, int]], window: str = "1 minute"):
    """A rich Table of ``{(window_start_ms, payer): (total_cents, payments)}``."""
    from rich.table import Table

    window_ms = parse_duration_ms(window)
    table = Table(title="Payments per payer and window (closed windows)")
    table.add_column("window (UTC)")
    table.add_column("payer")
    table.add_column("payments", justify="right")
    table.add_column("total", justify="right")
    for (start, payer), (cents, count) in sorted(totals.items()):
        end = time.strftime("%H:%M:%S", time.gmtime((start + window_ms) / 1000))
        table.add_row(f"{_iso(start)} - {end}", payer, str(count), f"${cents / 100:,.2f}")
    return table


# --- the demo -----------------------------------------------------------------------------------
@dataclass
class DemoResult:
    totals: dict
    reference: ReferenceResult
    topic_records: int
    batches: int
    input_rows: int
    matches: bool
    output_dir: str


def run_demo(bootstrap_servers: str, *, events: int = 1200, late: int = 5,
             output_dir: str | None = None, input_topic: str = "payments",
             output_topic: str = "payer-totals", partitions: int = 3,
             replication_factor: int | None = None, window: str = "1 minute",
             watermark: str = "2 minutes", master: str = "local[2]", spark=None,
             seed: int = 7, console=None, connector: str = "kafkalite") -> DemoResult:
    """Generate payments, run the pipeline (availableNow) twice, print the result table.

    Round 1 produces ``events`` payments over six minutes of event time and runs the pipeline.
    Round 2 produces more payments two minutes later plus ``late`` payments from long before
    the watermark, and runs the pipeline again from its checkpoint: the late ones are dropped.
    The totals (from Parquet) are checked against the topic and a plain-Python computation.
    Uses a fresh work directory (kept, and printed) unless ``output_dir`` is given. ``connector``:
    the topics are read and written by the kafkalite data source or by Spark's own ("kafka").
    """
    from rich.console import Console

    console = console or Console()
    echo = console.print
    output_dir = output_dir or tempfile.mkdtemp(prefix="kafkalite-pipeline-")
    config = PipelineConfig(bootstrap_servers, input_topic=input_topic, output_topic=output_topic,
                            output_dir=output_dir, window=window, watermark=watermark,
                            connector=connector)
    ensure_topics(bootstrap_servers, [input_topic, output_topic], partitions=partitions,
                  replication_factor=replication_factor)
    now_ms = int(time.time() * 1000)
    start_ms = now_ms - now_ms % 60_000 - 8 * 60_000
    first = generate_payments(events, start_ms=start_ms, span_s=360, seed=seed)
    second = (generate_payments(events // 3, start_ms=start_ms + 360_000, span_s=120,
                                seed=seed + 1, id_prefix="q")
              + late_payments(late, event_time_ms=start_ms - 30 * 60_000, seed=seed + 2))
    echo(f"[bold]kafkalite payments pipeline[/] on {bootstrap_servers}; output in {output_dir}")
    for sample in first[:3]:
        echo(f"  e.g. {sample.describe()} at {_iso(sample.event_time_ms)}")

    own_spark = spark is None
    if own_spark:
        from spark_integration.session import spark_session

        with console.status("starting Spark..."):
            spark = spark_session("kafkalite-payments-demo", master, log_level="ERROR",
                                  kafka_connector=(connector == "kafka"))
    try:
        batches = rows = 0
        for number, payments in ((1, first), (2, second)):
            produce_payments(bootstrap_servers, input_topic, payments)
            echo(f"round {number}: produced {len(payments)} payments to '{input_topic}'; "
                 f"running the pipeline (availableNow)")
            result = run_pipeline(spark, config, echo=lambda line: console.print(
                f"  {line}", soft_wrap=True, highlight=False, markup=False))
            batches += result.batches
            rows += result.input_rows
        totals = read_parquet_totals(spark, config.parquet_path)
    finally:
        if own_spark:
            spark.stop()
    topic_records = read_topic_totals(bootstrap_servers, output_topic)
    reference = reference_totals([first, second], window, watermark)
    # the topic sink is at-least-once: a total may be repeated, never different
    topic_ok = ({topic_record_key(r) for r in topic_records} == set(totals) and
                all((r["total_cents"], r["payments"]) == totals[topic_record_key(r)]
                    for r in topic_records))
    matches = totals == reference.closed and topic_ok
    echo(format_table(totals, window))
    echo(f"{len(totals)} window totals written to Parquet ({config.parquet_path}) and "
         f"{len(topic_records)} records to the '{output_topic}' topic, in {batches} micro-batches "
         f"over {rows} input rows")
    echo(f"{len(reference.dropped)} late payments dropped by the watermark; "
         f"{len(reference.open)} windows still open (they close when later payments move the "
         f"watermark, now {_iso(reference.watermark_ms)}, past their end)")
    echo("[green]totals match the plain-Python computation[/]" if matches else
         "[red]totals DIFFER from the plain-Python computation[/]")
    return DemoResult(totals, reference, len(topic_records), batches, rows, matches, output_dir)

