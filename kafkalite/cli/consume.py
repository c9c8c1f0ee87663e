"""``kafkalite consume``: Kafka's console consumer.

    kafkalite consume --topic t [--from-beginning] [--max-messages N] [--timeout-ms N]
                      [--group G [--zookeeper host:port/chroot]]
                      [--partition P [--offset earliest|latest|N]]
                      [--isolation-level read_committed|read_uncommitted]
                      [--property print.key=true] [--property print.timestamp=true] ...

Without ``--group`` it reads every partition of the topic (or only ``--partition``) and commits
nothing; ``--bootstrap-server`` is all it needs. With ``--group`` it joins that consumer group
and commits its position when it stops: through the brokers' group coordinator (Kafka 0.9+'s
groups) with ``--bootstrap-server`` or no flag at all (127.0.0.1:9092), through ZooKeeper (Kafka
0.8's groups; the brokers are found there too unless ``--bootstrap-server`` is given) with
``--zookeeper`` (or KAFKALITE_ZOOKEEPER), as Kafka's 0.9-1.x console consumer chose.

Formatter properties (``--property``), as Kafka's DefaultMessageFormatter, in this order on a
line: ``print.timestamp`` (``CreateTime:<ms>``), ``print.partition`` (``Partition:<p>``),
``print.offset`` (``Offset:<o>``), ``print.headers`` (``k:v,...`` or ``NO_HEADERS``),
``print.key``, ``print.value`` (default true); separated by ``key.separator`` (tab), each record
ended by ``line.separator`` (newline); ``headers.separator`` (``,``); ``null.literal`` (``null``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time

import click

from kafkalite.cli.options import (
    CliError,
    Endpoints,
    bootstrap_option,
    client_kwargs,
    connection_hint,
    parse_bool,
    parse_properties,
    property_option,
    quiet_client_logs,
    unescape,
    zookeeper_option,
)
from kafkalite.errors import NoBrokersAvailableError, ZooKeeperError

FORMATTER_PROPERTIES = ("print.timestamp", "print.partition", "print.offset", "print.headers",
                        "print.key", "print.value", "key.separator", "line.separator",
                        "headers.separator", "null.literal")
TIMESTAMP_TYPES = {0: b"CreateTime", 1: b"LogAppendTime"}


class Formatter:
    """Turns a ConsumerRecord into the bytes Kafka's console consumer prints for it."""

    def __init__(self, props: dict[str, str]):
        unknown = sorted(set(props) - set(FORMATTER_PROPERTIES))
        if unknown:
            raise CliError(f"unknown --property {unknown[0]!r}; known: "
                           f"{', '.join(FORMATTER_PROPERTIES)}", exit_code=2)

        def flag(name: str, default: str = "false") -> bool:
            return parse_bool(props.get(name, default), name)

        self.fields = [name for name in ("timestamp", "partition", "offset", "headers", "key",
                                         "value")
                       if flag(f"print.{name}", "true" if name == "value" else "false")]
        self.separator = unescape(props.get("key.separator", "\t")).encode()
        self.line_separator = unescape(props.get("line.separator", "\n")).encode()
        self.headers_separator = unescape(props.get("headers.separator", ",")).encode()
        self.null = unescape(props.get("null.literal", "null")).encode()
        self.value_only = self.fields == ["value"]

    def _field(self, name: str, r) -> bytes:
        if name == "value":
            return self.null if r.value is None else r.value
        if name == "key":
            return self.null if r.key is None else r.key
        if name == "timestamp":
            kind = TIMESTAMP_TYPES.get(r.timestamp_type)
            return b"NO_TIMESTAMP" if kind is None or r.timestamp < 0 else \
                kind + b":%d" % r.timestamp
        if name == "partition":
            return b"Partition:%d" % r.partition
        if name == "offset":
            return b"Offset:%d" % r.offset
        if not r.headers:
            return b"NO_HEADERS"
        return self.headers_separator.join(
            k.encode() + b":" + (self.null if v is None else v) for k, v in r.headers)

    def format_many(self, records) -> bytes:
        end = self.line_separator
        if self.value_only:
            null = self.null
            return b"".join([(null if r.value is None else r.value) + end for r in records])
        sep = self.separator
        fields = self.fields
        return b"".join([sep.join([self._field(f, r) for f in fields]) + end for r in records])


@click.command("consume", context_settings={"help_option_names": ["-h", "--help"]})
@click.pass_context
@click.option("--topic", help="topic to read")
@click.option("--include", "--whitelist", "include", metavar="REGEX",
              help="read every topic matching this regular expression instead of --topic")
@click.option("--from-beginning", is_flag=True,
              help="start at the earliest offset when there is no committed one")
@click.option("--group", help="consumer group to join (through ZooKeeper with --zookeeper); "
                             "commits offsets")
@click.option("--partition", type=int, help="read only this partition")
@click.option("--offset", help="with --partition: earliest, latest (default) or an offset")
@click.option("--max-messages", type=click.IntRange(min=1),
              help="stop after this many records")
@click.option("--timeout-ms", type=click.IntRange(min=0),
              help="stop when no record arrived for this long")
@property_option
@click.option("--isolation-level", type=click.Choice(["read_uncommitted", "read_committed"]),
              default=None, help="read_committed: only committed transactions' records (up to "
                                 "the last stable offset); read_uncommitted (the default): all")
@click.option("--consumer-property", "consumer_properties", multiple=True, metavar="KEY=VALUE",
              help="consumer setting in Kafka's name (repeatable), e.g. fetch.max.wait.ms=100")
@bootstrap_option
@zookeeper_option
def command(ctx, topic, include, from_beginning, group, partition, offset, max_messages,
            timeout_ms, properties, isolation_level, consumer_properties, bootstrap_server,
            zookeeper):
    """Print records of a topic (Kafka's kafka-console-consumer)."""
    from kafkalite.client.consumer import Consumer
    from kafkalite.topics import validate_topic_name

    if (topic is None) == (include is None):
        raise CliError("give exactly one of --topic NAME or --include REGEX", exit_code=2)
    if topic is not None:
        validate_topic_name(topic)
    if offset is not None and partition is None:
        raise CliError("--offset needs --partition (the offset of which partition?)",
                       exit_code=2)
    if offset is not None and from_beginning:
        raise CliError("--from-beginning and --offset cannot be used together; use --offset "
                       "earliest", exit_code=2)
    if partition is not None and (group is not None or include is not None):
        raise CliError("--partition reads one partition without a group: leave out --group "
                       "and --include", exit_code=2)
    seek_to = None
    if offset is not None:
        if offset in ("earliest", "latest"):
            seek_to = offset
        else:
            try:
                seek_to = int(offset)
            except ValueError:
                raise CliError(f"--offset {offset!r}: expected earliest, latest or a "
                               f"non-negative number", exit_code=2) from None
            if seek_to < 0:
                raise CliError(f"--offset {offset!r}: expected earliest, latest or a "
                               f"non-negative number", exit_code=2)
    formatter = Formatter(parse_properties(properties))
    settings = client_kwargs(Consumer, parse_properties(consumer_properties,
                                                        "--consumer-property"),
                             "--consumer-property")
    settings.setdefault("auto_offset_reset", "earliest" if from_beginning else "latest")
    settings.setdefault("allow_auto_create_topics", False)
    if isolation_level is not None:
        settings["isolation_level"] = isolation_level
    endpoints = Endpoints(ctx, bootstrap_server, zookeeper)
    zookeeper = None
    if group is not None:
        settings["group_id"] = group
        if endpoints.zookeeper is not None:      # Kafka 0.8's group, in ZooKeeper
            zookeeper = endpoints.require_zookeeper("consume --group")
    elif endpoints.zookeeper_given and not endpoints.bootstrap_given:
        zookeeper = endpoints.zookeeper_value    # only to find the brokers
    if zookeeper is not None:
        settings["zookeeper"] = zookeeper
        if not endpoints.bootstrap_given:
            bootstrap_server = None          # find the brokers through ZooKeeper
    quiet_client_logs()
    sys.stdout.flush()
    out = sys.stdout.buffer         # records are bytes: written as they are
    progress = {"count": 0}
    consumer = None
    try:
        with _sigterm_stops():
            from kafkalite.cli.client_security import environment_security

            consumer = Consumer(bootstrap_servers=bootstrap_server,   # + KAFKALITE_COMMAND_CONFIG
                                **{**environment_security(), **settings})
            _assign(consumer, topic, include, partition, seek_to, from_beginning)
            _loop(consumer, formatter, out, max_messages, timeout_ms, progress)
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        sys.stderr.close()   # the reader went away (e.g. `| head`): stop quietly
        return
    except (NoBrokersAvailableError, ZooKeeperError) as exc:
        raise CliError(connection_hint(exc, bootstrap_server or "ZooKeeper's /brokers/ids",
                                       zookeeper, endpoints.defaulted,
                                       endpoints.zookeeper_for)) from None
    finally:
        if consumer is not None:
            consumer.close()     # with --group: commits the position and leaves the group
    click.echo(f"Processed a total of {progress['count']} messages", err=True)


@contextlib.contextmanager
def _sigterm_stops():
    """SIGTERM stops the consumer like Ctrl-C does (so a group member commits and leaves)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _assign(consumer, topic, include, partition, seek_to, from_beginning) -> None:
    if include is not None:
        consumer.subscribe(pattern=include)
        return
    partitions = consumer.partitions_for_topic(topic)
    if not partitions:
        raise CliError(f"topic '{topic}' does not exist (see 'kafkalite topics --list')")
    if partition is None:
        consumer.subscribe([topic])
        return
    if partition not in partitions:
        raise CliError(f"topic '{topic}' has no partition {partition} (it has "
                       f"{min(partitions)}..{max(partitions)})")
    from kafkalite.client.structs import TopicPartition

    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    if seek_to == "earliest" or (seek_to is None and from_beginning):
        consumer.seek_to_beginning(tp)
    elif seek_to is None or seek_to == "latest":
        consumer.seek_to_end(tp)
    else:
        consumer.seek(tp, seek_to)


def _loop(consumer, formatter: Formatter, out, max_messages, timeout_ms, progress) -> None:
    count = 0
    idle_deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
    while max_messages is None or count < max_messages:
        wait = 1.0 if idle_deadline is None else max(0.0, min(1.0, idle_deadline -
                                                              time.monotonic()))
        want = 2000 if max_messages is None else min(2000, max_messages - count)
        batch = consumer.poll(timeout_ms=wait * 1000, max_records=want)
        if not batch:
            if idle_deadline is not None and time.monotonic() >= idle_deadline:
                break
            continue
        for records in batch.values():
            out.write(formatter.format_many(records))
            count += len(records)
            progress["count"] = count
        out.flush()
        if idle_deadline is not None:
            idle_deadline = time.monotonic() + timeout_ms / 1000
