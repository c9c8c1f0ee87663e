"""``kafkalite perf produce|consume``: Kafka's producer and consumer perf-test tools.

    kafkalite perf produce --topic T --num-records N --record-size S --throughput -1
                           [--acks 1] [--producer-props k=v ...]
    kafkalite perf consume --topic T --messages N [--timeout 10000]

``perf produce`` prints a progress line every 5 s (``--reporting-interval``)::

    1557876 records sent, 311575.2 records/sec (29.71 MB/sec), 8.6 ms avg latency, 193.0 ms max latency.

and a final line with the whole run's rate, average and maximum latency and the 50th, 95th, 99th
and 99.9th latency percentiles, as kafka-producer-perf-test does. Latency is the time from
``send()`` to the acknowledgement; it is measured for every ``--latency-sample-every``-th record
only (through a future callback), so the send loop does no per-record bookkeeping: the records in
between are sent by ``map`` over the producer's ``send`` without a Python-level loop. Counts and
rates come from the producer's acknowledged-record counter.

``perf consume`` prints kafka-consumer-perf-test's header and result line (start.time, end.time,
data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms,
fetch.MB.sec, fetch.nMsg.sec), preceded by progress lines every 5 s and followed by a one-line
summary. It reads the topic from the beginning (all partitions, or as a member of ``--group``:
a group of the brokers' coordinator, or with ``--zookeeper`` one of Kafka 0.8's ZooKeeper
groups).
"""

from __future__ import annotations

import contextlib
import gc
import random
import string
import time
from collections import deque
from datetime import datetime
from itertools import repeat
from operator import itemgetter

import click

from kafkalite.cli.options import (
    CliError,
    Endpoints,
    bootstrap_option,
    client_kwargs,
    connection_hint,
    parse_properties,
    quiet_client_logs,
    zookeeper_option,
)
from kafkalite.errors import (
    KafkaError,
    KafkaTimeoutError,
    NoBrokersAvailableError,
    ZooKeeperError,
)

MB = 1024 * 1024


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection during a measured loop. The loops make millions of
    short-lived, acyclic objects (futures, record tuples) that reference counting frees at once;
    the collector would only re-scan the buffered ones over and over (it costs about a third of
    the client's CPU per record). Collected once afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.collect()


@click.group("perf", context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """Throughput and latency tests (Kafka's producer/consumer perf-test tools)."""


# --- produce ------------------------------------------------------------------------------------

class ProduceStats:
    """Sampled latencies (appended by the producer's sender thread) and the progress lines."""

    def __init__(self, record_size: int, echo):
        self.record_size = record_size
        self.echo = echo
        self.latencies: list[float] = []      # ms, one per sampled record
        self.errors = 0
        self.first_error: BaseException | None = None
        self._window_index = 0
        self._window_acked = 0
        self._window_start = 0.0

    # producer sender thread (future callbacks)
    def on_done(self, result, sent_at: float) -> None:
        if isinstance(result, BaseException):
            self.errors += 1
            if self.first_error is None:
                self.first_error = result
            return
        self.latencies.append((time.perf_counter() - sent_at) * 1000.0)

    def start(self, now: float) -> None:
        self._window_start = now

    def report(self, now: float, acked: int) -> None:
        """Print the progress line of the window since the previous one."""
        elapsed = max(now - self._window_start, 1e-9)
        records = acked - self._window_acked
        end = len(self.latencies)
        window = self.latencies[self._window_index:end]
        rate = records / elapsed
        avg = sum(window) / len(window) if window else 0.0
        self.echo(f"{records} records sent, {rate:.1f} records/sec "
                  f"({rate * self.record_size / MB:.2f} MB/sec), {avg:.1f} ms avg latency, "
                  f"{max(window, default=0.0):.1f} ms max latency.")
        self._window_index = end
        self._window_acked = acked
        self._window_start = now

    def final_line(self, records: int, elapsed: float) -> str:
        lat = sorted(self.latencies)
        rate = records / max(elapsed, 1e-9)

        def pct(q: float) -> int:
            return int(lat[min(int(len(lat) * q), len(lat) - 1)]) if lat else 0

        avg = sum(lat) / len(lat) if lat else 0.0
        return (f"{records} records sent, {rate:f} records/sec ({rate * self.record_size / MB:.2f}"
                f" MB/sec), {avg:.2f} ms avg latency, {lat[-1] if lat else 0.0:.2f} ms max "
                f"latency, {pct(0.5)} ms 50th, {pct(0.95)} ms 95th, {pct(0.99)} ms 99th, "
                f"{pct(0.999)} ms 99.9th.")


def make_payload(record_size: int, seed: int | None = None) -> bytes:
    """Random uppercase letters, as kafka-producer-perf-test fills its records."""
    rng = random.Random(seed)
    return "".join(rng.choices(string.ascii_uppercase, k=record_size)).encode()


def produce_records(producer, topic: str, payload: bytes, num_records: int,
                    stats: ProduceStats, throughput: float = -1, sample_every: int = 100,
                    interval_s: float = 5.0) -> float:
    """Send ``num_records`` copies of ``payload`` and wait for every acknowledgement; returns
    the elapsed seconds. One record of each chunk of ``sample_every`` gets a latency callback;
    the rest go through ``map`` (no Python loop, no per-record bookkeeping)."""
    send = producer.send
    sink = deque(maxlen=0).extend
    perf = time.perf_counter
    on_done = stats.on_done
    chunk = max(1, sample_every)
    if throughput > 0:
        chunk = max(1, min(chunk, int(throughput // 50)))   # throttle in small steps
    start = perf()
    stats.start(start)
    with gc_paused():
        next_report = _send_loop(send, sink, perf, producer, topic, payload, num_records, stats,
                                 on_done, chunk, throughput, interval_s, start)
        while True:           # wait for the acknowledgements, still printing progress
            try:
                producer.flush(timeout=max(next_report - perf(), 0.001))
                break
            except KafkaTimeoutError:
                now = perf()
                stats.report(now, producer.metrics()["records_sent"])
                next_report = now + interval_s
        elapsed = perf() - start
    return elapsed


def _send_loop(send, sink, perf, producer, topic, payload, num_records, stats, on_done, chunk,
               throughput, interval_s, start) -> float:
    next_report = start + interval_s
    sent = 0
    while sent < num_records:
        k = min(chunk, num_records - sent)
        t0 = perf()
        if t0 >= next_report:
            stats.report(t0, producer.metrics()["records_sent"])
            next_report = t0 + interval_s
        send(topic, payload).add_both(on_done, t0)
        if k > 1:
            sink(map(send, repeat(topic, k - 1), repeat(payload, k - 1)))
        sent += k
        if throughput > 0:
            ahead = start + sent / throughput - perf()
            if ahead > 0:
                time.sleep(ahead)
    return next_report


def _ensure_topic(bootstrap: str, topic: str, partitions: int | None) -> None:
    """Create the topic (broker defaults unless ``partitions``) if it does not exist."""
    from kafkalite.client.admin import AdminClient
    from kafkalite.client.structs import NewTopic
    from kafkalite.errors import TopicAlreadyExistsError

    with AdminClient(bootstrap_servers=bootstrap) as admin:
        if topic in admin.list_topics():
            return
        try:
            admin.create_topics([NewTopic(topic, partitions or -1, -1)])
        except TopicAlreadyExistsError:
            pass


@command.command("produce", context_settings={"allow_extra_args": True})
@click.pass_context
@click.option("--topic", required=True)
@click.option("--num-records", type=click.IntRange(min=1), required=True,
              help="records to send")
@click.option("--record-size", type=click.IntRange(min=0), default=100, show_default=True,
              help="value size in bytes")
@click.option("--throughput", type=float, default=-1, show_default=True,
              help="records/sec to aim for; -1 = as fast as possible")
@click.option("--acks", type=click.Choice(["0", "1", "all", "-1"]), default=None,
              help="shorthand for --producer-props acks=... (default 1)")
@click.option("--producer-props", "producer_props", multiple=True, metavar="KEY=VALUE",
              help="producer settings in Kafka's names, e.g. linger.ms=5 batch.size=65536 "
                   "(repeatable; several per flag allowed)")
@click.option("--reporting-interval", type=click.IntRange(min=100), default=5000,
              show_default=True, help="ms between progress lines")
@click.option("--latency-sample-every", type=click.IntRange(min=1), default=100,
              show_default=True, help="measure the latency of every Nth record")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="partitions when the topic has to be created (default: the broker's)")
@bootstrap_option
def produce(ctx, topic, num_records, record_size, throughput, acks, producer_props,
            reporting_interval, latency_sample_every, partitions, bootstrap_server):
    """Send N records of S bytes as fast as allowed; print throughput and latency."""
    from kafkalite.client.producer import Producer
    from kafkalite.topics import validate_topic_name

    validate_topic_name(topic)
    # Kafka's tool takes several values after one --producer-props: a=1 b=2
    stray = [arg for arg in ctx.args if "=" not in arg or arg.startswith("-")]
    if stray or (ctx.args and not producer_props):
        raise CliError(f"unexpected argument(s) {' '.join(stray or ctx.args)}; producer "
                       f"settings go after --producer-props, as KEY=VALUE", exit_code=2)
    items = [part for item in list(producer_props) + ctx.args for part in item.split()]
    props = parse_properties(items, "--producer-props")
    bootstrap_server = props.pop("bootstrap.servers", bootstrap_server)
    settings = client_kwargs(Producer, props, "--producer-props")
    if acks is not None:
        settings["acks"] = acks
    settings.setdefault("acks", "1")
    quiet_client_logs()
    try:
        _ensure_topic(bootstrap_server, topic, partitions)
        try:
            producer = Producer(bootstrap_server, **settings)
        except KafkaError as exc:
            raise CliError(f"bad producer setting: {exc}", exit_code=2) from None
        stats = ProduceStats(record_size, click.echo)
        try:
            producer.partitions_for(topic)          # metadata before the clock starts
            elapsed = produce_records(producer, topic, make_payload(record_size), num_records,
                                      stats, throughput, latency_sample_every,
                                      reporting_interval / 1000)
            failed_batches = producer.metrics()["errors"]
        finally:
            producer.close()
    except NoBrokersAvailableError as exc:
        raise CliError(connection_hint(exc, bootstrap_server)) from None
    click.echo(stats.final_line(num_records, elapsed))
    if failed_batches or stats.errors:
        detail = f": {stats.first_error}" if stats.first_error is not None else ""
        raise CliError(f"{failed_batches} batch(es) of records could not be sent{detail}")


# --- consume ------------------------------------------------------------------------------------

def _kafka_time(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S:") + \
        f"{int(ts * 1000) % 1000:03d}"


def consume_records(consumer, num_messages: int, timeout_s: float, interval_s: float, echo
                    ) -> tuple[int, int, float]:
    """Read up to ``num_messages`` records; (records, bytes of keys and values, elapsed s).
    Stops early when nothing arrived for ``timeout_s``."""
    poll = consumer.poll
    value_of = itemgetter(6)
    key_of = itemgetter(5)
    perf = time.perf_counter
    count = 0
    nbytes = 0
    start = perf()
    last_data = start
    next_report = start + interval_s
    window_count = 0
    window_bytes = 0
    window_start = start
    while count < num_messages:
        batch = poll(timeout_ms=100, max_records=min(num_messages - count, 100_000))
        now = perf()
        if batch:
            last_data = now
            for records in batch.values():
                n = len(records)
                size = sum(map(len, filter(None, map(value_of, records))))
                if records[0][5] is not None or records[-1][5] is not None:
                    size += sum(map(len, filter(None, map(key_of, records))))
                count += n
                nbytes += size
                window_count += n
                window_bytes += size
        elif now - last_data >= timeout_s:
            echo(f"WARNING: Exiting before consuming the expected number of messages: timeout "
                 f"({timeout_s * 1000:.0f} ms) exceeded. You can use the --timeout option to "
                 f"increase the timeout.")
            break
        if now >= next_report:
            elapsed = max(now - window_start, 1e-9)
            echo(f"{window_count} records received, {window_count / elapsed:.1f} records/sec "
                 f"({window_bytes / MB / elapsed:.2f} MB/sec).")
            window_count = window_bytes = 0
            window_start = now
            next_report = now + interval_s
    return count, nbytes, (last_data if count else perf()) - start


@command.command("consume")
@click.pass_context
@click.option("--topic", required=True)
@click.option("--messages", type=click.IntRange(min=1), required=True,
              help="records to read")
@click.option("--timeout", "timeout_ms", type=click.IntRange(min=1), default=10000,
              show_default=True, help="stop when no record arrived for this many ms")
@click.option("--group", default=None,
              help="read as this consumer group (a ZooKeeper group with --zookeeper)")
@click.option("--reporting-interval", type=click.IntRange(min=100), default=5000,
              show_default=True, help="ms between progress lines")
@click.option("--hide-header", is_flag=True, help="leave out the CSV header line")
@click.option("--consumer-props", "--consumer-property", "consumer_props", multiple=True,
              metavar="KEY=VALUE", help="consumer settings in Kafka's names (repeatable)")
@bootstrap_option
@zookeeper_option
def consume(ctx, topic, messages, timeout_ms, group, reporting_interval, hide_header,
            consumer_props, bootstrap_server, zookeeper):
    """Read N records from the beginning; print throughput (Kafka's consumer perf test)."""
    from kafkalite.client.consumer import Consumer
    from kafkalite.client.structs import TopicPartition
    from kafkalite.topics import validate_topic_name

    validate_topic_name(topic)
    items = [part for item in consumer_props for part in item.split()]
    props = parse_properties(items, "--consumer-props")
    props_bootstrap = "bootstrap.servers" in props
    bootstrap_server = props.pop("bootstrap.servers", bootstrap_server)
    settings = client_kwargs(Consumer, props, "--consumer-props")
    settings.setdefault("max_poll_records", 100_000)
    settings.setdefault("auto_offset_reset", "earliest")
    settings.setdefault("allow_auto_create_topics", False)
    settings.setdefault("fetch_max_wait_ms", 100)
    endpoints = Endpoints(ctx, bootstrap_server, zookeeper)
    defaulted = endpoints.defaulted and not props_bootstrap
    zookeeper = None
    if group is not None:
        settings["group_id"] = group
        if endpoints.zookeeper is not None:      # Kafka 0.8's group, in ZooKeeper
            zookeeper = endpoints.require_zookeeper("perf consume --group")
    elif endpoints.zookeeper_given and not endpoints.bootstrap_given:
        zookeeper = endpoints.zookeeper_value    # only to find the brokers
    if zookeeper is not None:
        settings["zookeeper"] = zookeeper
        if not endpoints.bootstrap_given and not props_bootstrap:
            bootstrap_server = None              # find the brokers through ZooKeeper
    quiet_client_logs()
    consumer = None
    start_wall = time.time()
    setup_start = time.perf_counter()
    try:
        consumer = Consumer(bootstrap_servers=bootstrap_server, **settings)
        parts = consumer.partitions_for_topic(topic)
        if not parts:
            raise CliError(f"topic '{topic}' does not exist (see 'kafkalite topics --list')")
        if group is None:
            tps = [TopicPartition(topic, p) for p in sorted(parts)]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            for tp in tps:
                consumer.position(tp)
        else:
            consumer.subscribe([topic])
        setup = time.perf_counter() - setup_start
        with gc_paused():
            count, nbytes, elapsed = consume_records(consumer, messages, timeout_ms / 1000,
                                                     reporting_interval / 1000, click.echo)
    except (NoBrokersAvailableError, ZooKeeperError) as exc:
        raise CliError(connection_hint(exc, bootstrap_server or "ZooKeeper's /brokers/ids",
                                       zookeeper, defaulted, endpoints.zookeeper_for)) from None
    finally:
        if consumer is not None:
            consumer.close()
    total = setup + elapsed
    mb = nbytes / MB
    if not hide_header:
        click.echo("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
                   "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    fetch = max(elapsed, 1e-9)
    click.echo(f"{_kafka_time(start_wall)}, {_kafka_time(start_wall + total)}, {mb:.4f}, "
               f"{mb / max(total, 1e-9):.4f}, {count}, {count / max(total, 1e-9):.4f}, "
               f"{setup * 1000:.0f}, {elapsed * 1000:.0f}, {mb / fetch:.4f}, "
               f"{count / fetch:.4f}")
    click.echo(f"{count} records received, {count / fetch:f} records/sec "
               f"({mb / fetch:.2f} MB/sec).")
