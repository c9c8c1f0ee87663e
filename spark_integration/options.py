"""The "kafkalite" data source's options, parsed and checked (pure: no Spark, no network).

Names and meanings follow Spark's own Kafka source (spark-sql-kafka-0-10), so a pipeline written
for Kafka moves to kafkalite by changing the format name:

============================  =================================================================
option                        meaning
============================  =================================================================
kafkalite.bootstrap.servers   ``host:port,...`` of any brokers (``kafka.bootstrap.servers`` is
                              accepted too)
kafkalite.zookeeper           ``host:port[/chroot]``: find the brokers in ZooKeeper instead
subscribe                     comma-separated topics              } exactly one
subscribePattern              a regex that whole topic names match } of these
assign                        JSON ``{"topic": [0, 1]}``           } three
startingOffsets               ``earliest`` | ``latest`` | JSON ``{"t": {"0": 23, "1": -2}}``
                              (-2 = earliest, -1 = latest); batch default earliest, stream
                              default latest
endingOffsets                 batch only: ``latest`` | JSON (-1 = latest); default latest
maxOffsetsPerTrigger          stream only: at most this many records per micro-batch
failOnDataLoss                ``true`` (default): fail when offsets were lost to retention (or
                              a topic was deleted); ``false``: skip them with a warning
includeHeaders                ``true``: add ``headers array<struct<key string, value binary>>``
minPartitions                 split the offset ranges into at least this many Spark partitions
kafkaConsumer.pollTimeoutMs   how long an executor waits for one fetch (default 120000)
topic                         writer: the topic of every row (wins over a ``topic`` column)
============================  =================================================================

Partitions that a JSON ``startingOffsets`` does not name start at the earliest offset, and ones
that a JSON ``endingOffsets`` does not name end at the latest (Spark's Kafka source instead
insists on every partition being named).

Every mistake raises :class:`OptionError` whose message starts with the option's name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from spark_integration.offsets import EARLIEST, LATEST, OffsetSpec, TopicPartition

__all__ = [
    "OptionError", "Subscription", "ReadOptions", "WriteOptions", "parse_read_options",
    "check_read_options",
    "parse_write_options", "parse_offset_spec", "parse_assign", "check_write_columns",
    "SUBSCRIPTION_OPTIONS",
]

SUBSCRIPTION_OPTIONS = ("assign", "subscribe", "subscribePattern")

# Spark Kafka options kafkalite does not implement: refusing them beats silently reading
# something else than asked.
_UNSUPPORTED = {
    "startingtimestamp": "startingTimestamp",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "startingoffsetsbytimestampstrategy": "startingOffsetsByTimestampStrategy",
    "endingtimestamp": "endingTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "kafka.group.id": "kafka.group.id",
    "groupidprefix": "groupIdPrefix",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
}

# client settings passed through from ``kafkalite.<name>`` / ``kafka.<name>`` options
_CONSUMER_SETTINGS = {
    "fetch.max.bytes": "fetch_max_bytes",
    "max.partition.fetch.bytes": "max_partition_fetch_bytes",
    "fetch.max.wait.ms": "fetch_max_wait_ms",
    "request.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "client.id": "client_id",
    "check.crcs": "check_crcs",
}
_PRODUCER_SETTINGS = {
    "linger.ms": "linger_ms",
    "batch.size": "batch_size",
    "compression.type": "compression_type",
    "retries": "retries",
    "retry.backoff.ms": "retry_backoff_ms",
    "request.timeout.ms": "request_timeout_ms",
    "delivery.timeout.ms": "delivery_timeout_ms",
    "max.request.size": "max_request_size",
    "buffer.memory": "buffer_memory",
    "max.in.flight.requests.per.connection": "max_in_flight_requests_per_connection",
    "enable.idempotence": "enable_idempotence",
    "client.id": "client_id",
}
_INT_SETTINGS = {"fetch_max_bytes", "max_partition_fetch_bytes", "fetch_max_wait_ms",
                 "request_timeout_ms", "retry_backoff_ms", "linger_ms", "batch_size", "retries",
                 "delivery_timeout_ms", "max_request_size", "buffer_memory",
                 "max_in_flight_requests_per_connection"}
_BOOL_SETTINGS = {"check_crcs", "enable_idempotence"}


class OptionError(ValueError):
    """A data source option is missing, malformed, or not allowed here."""

    def __init__(self, option: str, problem: str):
        super().__init__(f"{option}: {problem}")
        self.option = option


# --- small parsers ----------------------------------------------------------------------------
def _lower(options: Mapping[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (options or {}).items():
        out[str(key).lower()] = value
    return out


def parse_bool(option: str, value, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise OptionError(option, f"must be true or false, got {value!r}")


def parse_positive_int(option: str, value, default: int | None = None) -> int | None:
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise OptionError(option, f"must be a positive integer, got {value!r}") from None
    if number <= 0:
        raise OptionError(option, f"must be a positive integer, got {value!r}")
    return number


def _json(option: str, value: str, shape: str):
    try:
        return json.loads(value)
    except (TypeError, ValueError) as exc:
        raise OptionError(option, f"malformed JSON ({exc}); expected {shape}, got "
                                  f"{value!r}") from None


def _check_topic(option: str, topic) -> str:
    from zk_schema.topics import topic_name_problem

    if not isinstance(topic, str) or not topic:
        raise OptionError(option, f"topic names must be non-empty strings, got {topic!r}")
    problem = topic_name_problem(topic)
    if problem:
        raise OptionError(option, f"invalid topic {topic!r}: {problem}")
    return topic


def _partition_number(option: str, topic: str, value) -> int:
    if isinstance(value, bool):
        value = None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or value < 0:
        raise OptionError(option, f"partition of topic {topic!r} must be a non-negative integer, "
                                  f"got {value!r}")
    return value


def parse_assign(value: str) -> tuple[TopicPartition, ...]:
    """``{"t": [0, 1], "u": [2]}`` -> (TopicPartition("t", 0), ...) in a stable order."""
    shape = 'a JSON object of topic -> list of partitions, e.g. {"payments": [0, 1]}'
    data = _json("assign", value, shape)
    if not isinstance(data, dict) or not data:
        raise OptionError("assign", f"expected {shape}, got {value!r}")
    out: list[TopicPartition] = []
    for topic, partitions in data.items():
        _check_topic("assign", topic)
        if not isinstance(partitions, list) or not partitions:
            raise OptionError("assign", f"topic {topic!r} needs a non-empty list of partitions, "
                                        f"got {partitions!r}")
        for p in partitions:
            tp = TopicPartition(topic, _partition_number("assign", topic, p))
            if tp in out:
                raise OptionError("assign", f"partition {tp} is listed twice")
            out.append(tp)
    return tuple(sorted(out))


def parse_offset_spec(option: str, value: str | None, default: str, *,
                      allow_earliest: bool = True, allow_latest: bool = True,
                      context: str = "") -> OffsetSpec:
    """``earliest`` / ``latest`` / JSON ``{"t": {"0": 12, "1": -2}}`` -> an OffsetSpec.

    In JSON, -2 means earliest and -1 latest (Spark's convention).
    """
    if value is None:
        value = default
    text = str(value).strip()
    where = f" for {context}" if context else ""
    if text.lower() == "earliest":
        if not allow_earliest:
            raise OptionError(option, f"'earliest' is not allowed{where}")
        return OffsetSpec.earliest()
    if text.lower() == "latest":
        if not allow_latest:
            raise OptionError(option, f"'latest' is not allowed{where}")
        return OffsetSpec.latest()
    shape = ('earliest, latest, or a JSON object of topic -> {partition: offset}, e.g. '
             '{"payments": {"0": 23, "1": -2}} (-2 = earliest, -1 = latest)')
    if not text.startswith("{"):
        raise OptionError(option, f"expected {shape}, got {value!r}")
    data = _json(option, text, shape)
    if not isinstance(data, dict) or not data:
        raise OptionError(option, f"expected {shape}, got {value!r}")
    offsets: dict[TopicPartition, int] = {}
    for topic, per_partition in data.items():
        _check_topic(option, topic)
        if not isinstance(per_partition, dict) or not per_partition:
            raise OptionError(option, f"topic {topic!r} needs an object of partition -> offset, "
                                      f"got {per_partition!r}")
        for p, offset in per_partition.items():
            tp = TopicPartition(topic, _partition_number(option, topic, p))
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise OptionError(option, f"offset of {tp} must be an integer >= 0, or -2 "
                                          f"(earliest) or -1 (latest), got {offset!r}")
            if offset == EARLIEST and not allow_earliest:
                raise OptionError(option, f"-2 (earliest) is not allowed{where} ({tp})")
            if offset == LATEST and not allow_latest:
                raise OptionError(option, f"-1 (latest) is not allowed{where} ({tp})")
            offsets[tp] = offset
    return OffsetSpec.specific(offsets)


# --- subscription -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Subscription:
    """Which partitions to read: ``subscribe``, ``subscribePattern`` or ``assign``."""

    kind: str                                      # one of SUBSCRIPTION_OPTIONS
    topics: tuple[str, ...] = ()                   # subscribe
    pattern: str | None = None                     # subscribePattern
    assigned: tuple[TopicPartition, ...] = ()      # assign

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Subscription:
        opts = _lower(options)
        given = [name for name in SUBSCRIPTION_OPTIONS if opts.get(name.lower()) is not None]
        if not given:
            raise OptionError("subscribe", "one of 'assign', 'subscribe' or 'subscribePattern' "
                                           "is required (which topics to read)")
        if len(given) > 1:
            names = " and ".join(f"'{g}'" for g in given)
            raise OptionError(given[0], f"only one of 'assign', 'subscribe' or "
                                        f"'subscribePattern' may be given, got {names}")
        kind = given[0]
        value = str(opts[kind.lower()])
        if kind == "subscribe":
            topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
            if not topics:
                raise OptionError("subscribe", f"needs at least one topic name, got {value!r}")
            for topic in topics:
                _check_topic("subscribe", topic)
            return cls("subscribe", topics=topics)
        if kind == "subscribePattern":
            if not value.strip():
                raise OptionError("subscribePattern", "must be a non-empty regular expression")
            try:
                re.compile(value)
            except re.error as exc:
                raise OptionError("subscribePattern", f"invalid regular expression {value!r}: "
                                                      f"{exc}") from None
            return cls("subscribePattern", pattern=value)
        return cls("assign", assigned=parse_assign(value))

    @property
    def option(self) -> str:
        return self.kind

    def matches(self, topic: str) -> bool:
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return re.fullmatch(self.pattern, topic) is not None
        return any(tp.topic == topic for tp in self.assigned)

    def named_topics(self) -> tuple[str, ...]:
        """Topics the options name explicitly (empty for a pattern)."""
        if self.kind == "subscribe":
            return self.topics
        if self.kind == "assign":
            return tuple(dict.fromkeys(tp.topic for tp in self.assigned))
        return ()

    def resolve(self, partitions_by_topic: Mapping[str, object], *,
                strict: bool = True) -> list[TopicPartition]:
        """The subscribed partitions, given ``{topic: partition ids}`` of the cluster.

        ``strict``: a topic (or assigned partition) that does not exist raises OptionError naming
        the option; otherwise it is left out (a stream waits for it to appear).
        """
        out: list[TopicPartition] = []
        if self.kind == "assign":
            for tp in self.assigned:
                parts = partitions_by_topic.get(tp.topic)
                if parts is None or tp.partition not in parts:
                    if strict:
                        what = ("unknown topic" if parts is None else
                                f"unknown partition (the topic has partitions "
                                f"{sorted(parts)})")
                        raise OptionError("assign", f"{what}: {tp.topic!r} partition "
                                                    f"{tp.partition}")
                    continue
                out.append(tp)
            return sorted(out)
        if self.kind == "subscribe":
            missing = [t for t in self.topics if partitions_by_topic.get(t) is None]
            if missing and strict:
                listed = ", ".join(repr(t) for t in missing)
                raise OptionError("subscribe", f"unknown topic{'s' if len(missing) > 1 else ''} "
                                               f"{listed}")
            topics = [t for t in self.topics if t not in missing]
        else:
            topics = [t for t in partitions_by_topic if self.matches(t)]
        for topic in topics:
            out.extend(TopicPartition(topic, p) for p in partitions_by_topic[topic])
        return sorted(out)

    def describe(self) -> str:
        if self.kind == "subscribe":
            return f"subscribe={','.join(self.topics)}"
        if self.kind == "subscribePattern":
            return f"subscribePattern={self.pattern}"
        return "assign=" + ",".join(str(tp) for tp in self.assigned)


# --- read options -----------------------------------------------------------------------------
def _connection(opts: dict[str, str]) -> tuple[str | None, str | None]:
    servers = opts.get("kafkalite.bootstrap.servers") or opts.get("kafka.bootstrap.servers")
    zookeeper = opts.get("kafkalite.zookeeper") or opts.get("kafkalite.zookeeper.connect")
    if servers is not None and not str(servers).strip():
        raise OptionError("kafkalite.bootstrap.servers", "must not be empty")
    if servers is None and zookeeper is None:
        raise OptionError("kafkalite.bootstrap.servers",
                          "required (host:port,...), or give 'kafkalite.zookeeper' "
                          "(host:port[/chroot]) to find the brokers in ZooKeeper")
    return (None if servers is None else str(servers).strip(),
            None if zookeeper is None else str(zookeeper).strip())


def _client_settings(opts: dict[str, str], table: dict[str, str]) -> dict:
    settings: dict = {}
    for key, value in opts.items():
        for prefix in ("kafkalite.", "kafka."):
            if key.startswith(prefix) and key[len(prefix):] in table:
                name = table[key[len(prefix):]]
                if name in _INT_SETTINGS:
                    try:
                        settings[name] = int(str(value).strip())
                    except ValueError:
                        raise OptionError(key, f"must be an integer, got {value!r}") from None
                elif name in _BOOL_SETTINGS:
                    settings[name] = parse_bool(key, value, False)
                else:
                    settings[name] = str(value)
    return settings


@dataclass(frozen=True)
class ReadOptions:
    bootstrap_servers: str | None
    zookeeper: str | None
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    streaming: bool
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    poll_timeout_ms: int = 120_000
    consumer_settings: dict = field(default_factory=dict)


def parse_read_options(options: Mapping[str, str] | None, *, streaming: bool) -> ReadOptions:
    """Check a read's options (batch when ``streaming`` is False); OptionError names the option."""
    opts = _lower(options)
    for key, name in _UNSUPPORTED.items():
        if key in opts:
            raise OptionError(name, "is not supported by the kafkalite source")
    servers, zookeeper = _connection(opts)
    subscription = Subscription.from_options(opts)
    kind = "streaming queries" if streaming else "batch queries"
    if streaming:
        starting = parse_offset_spec("startingOffsets", opts.get("startingoffsets"), "latest")
        if opts.get("endingoffsets") is not None:
            raise OptionError("endingOffsets", "is for batch queries only; a stream reads on "
                                               "until stopped")
        ending = OffsetSpec.latest()
    else:
        starting = parse_offset_spec("startingOffsets", opts.get("startingoffsets"), "earliest",
                                     allow_latest=False, context=kind)
        ending = parse_offset_spec("endingOffsets", opts.get("endingoffsets"), "latest",
                                   allow_earliest=False, context=kind)
    max_per_trigger = parse_positive_int("maxOffsetsPerTrigger",
                                         opts.get("maxoffsetspertrigger"))
    if max_per_trigger is not None and not streaming:
        max_per_trigger = None      # Spark's Kafka source ignores it in batch queries
    for spec, option in ((starting, "startingOffsets"), (ending, "endingOffsets")):
        for tp in spec.offsets:
            if not subscription.matches(tp.topic) or (
                    subscription.kind == "assign" and tp not in subscription.assigned):
                raise OptionError(option, f"partition {tp} is not in the subscription "
                                          f"({subscription.describe()})")
    return ReadOptions(
        bootstrap_servers=servers,
        zookeeper=zookeeper,
        subscription=subscription,
        starting=starting,
        ending=ending,
        streaming=streaming,
        max_offsets_per_trigger=max_per_trigger,
        fail_on_data_loss=parse_bool("failOnDataLoss", opts.get("failondataloss"), True),
        include_headers=parse_bool("includeHeaders", opts.get("includeheaders"), False),
        min_partitions=parse_positive_int("minPartitions", opts.get("minpartitions")),
        poll_timeout_ms=parse_positive_int("kafkaConsumer.pollTimeoutMs",
                                           opts.get("kafkaconsumer.polltimeoutms"), 120_000),
        consumer_settings=_client_settings(opts, _CONSUMER_SETTINGS),
    )


def check_read_options(options: Mapping[str, str] | None) -> None:
    """The checks that hold for batch and streaming reads alike (run when a read is loaded)."""
    opts = _lower(options)
    for key, name in _UNSUPPORTED.items():
        if key in opts:
            raise OptionError(name, "is not supported by the kafkalite source")
    _connection(opts)
    Subscription.from_options(opts)
    for option in ("startingOffsets", "endingOffsets"):
        parse_offset_spec(option, opts.get(option.lower()), "latest")
    parse_positive_int("maxOffsetsPerTrigger", opts.get("maxoffsetspertrigger"))
    parse_positive_int("minPartitions", opts.get("minpartitions"))
    parse_bool("failOnDataLoss", opts.get("failondataloss"), True)
    parse_bool("includeHeaders", opts.get("includeheaders"), False)


# --- write options ----------------------------------------------------------------------------
@dataclass(frozen=True)
class WriteOptions:
    bootstrap_servers: str | None
    zookeeper: str | None
    topic: str | None
    producer_settings: dict = field(default_factory=dict)


def parse_write_options(options: Mapping[str, str] | None) -> WriteOptions:
    opts = _lower(options)
    servers, zookeeper = _connection(opts)
    topic = opts.get("topic")
    if topic is not None:
        topic = _check_topic("topic", str(topic).strip())
    for key in ("kafkalite.acks", "kafka.acks"):
        if key in opts and str(opts[key]).strip().lower() not in ("all", "-1"):
            raise OptionError(key, f"the kafkalite sink always writes with acks=all, got "
                                   f"{opts[key]!r}")
    return WriteOptions(servers, zookeeper, topic, _client_settings(opts, _PRODUCER_SETTINGS))


_BYTES_OR_STRING = ("binary", "string")
_HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def check_write_columns(columns: Mapping[str, str], topic_option: str | None) -> None:
    """Check a DataFrame's columns for writing (``{name: simpleString type}``).

    ``value`` is required (binary or string); ``key`` (binary or string), ``topic`` (string),
    ``partition`` (int) and ``headers`` (array<struct<key string, value binary>>) are optional;
    other columns are ignored. Without a ``topic`` option a ``topic`` column is required.
    """
    lowered = {name.lower(): (name, str(kind).lower()) for name, kind in columns.items()}
    if "value" not in lowered:
        raise OptionError("value", f"the DataFrame needs a 'value' column (binary or string) "
                                   f"to write; it has {sorted(columns)}")
    rules = {
        "value": (_BYTES_OR_STRING, "binary or string"),
        "key": (_BYTES_OR_STRING, "binary or string"),
        "topic": (("string",), "string"),
        "partition": (("int",), "int"),
        "headers": ((_HEADERS_TYPE,), _HEADERS_TYPE),
    }
    for column, (allowed, wanted) in rules.items():
        if column in lowered:
            name, kind = lowered[column]
            if kind.replace(" ", "") not in allowed:
                raise OptionError(column, f"the '{name}' column must be {wanted}, got {kind}")
    if topic_option is None and "topic" not in lowered:
        raise OptionError("topic", "no 'topic' option and no 'topic' column: say where to write")
