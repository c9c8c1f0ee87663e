"""confluent-kafka for the scenarios: clients with short timeouts, errors as plain data, waits.

Every helper takes the scenario's Context and builds its own client from it, so a scenario reads
as the client calls it makes. Errors are reported by librdkafka's name for them (which is Kafka's
error name for broker errors), and a message only where the broker wrote it: librdkafka's own
wording around it is the same for both systems, so it carries no signal but does no harm either.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.testing.conformance import raw
from kafkalite.testing.conformance.scenario import Context

_COMMON = {"socket.timeout.ms": 10_000, "log_level": 0, "client.id": "conformance"}


class ScenarioError(RuntimeError):
    """A scenario could not reach the state it needs (the message says which, and why)."""


def admin(ctx: Context) -> AdminClient:
    return AdminClient({"bootstrap.servers": ctx.bootstrap_servers, **_COMMON})


def producer(ctx: Context, **conf: Any) -> Producer:
    settings = {"bootstrap.servers": ctx.bootstrap_servers, "linger.ms": 0,
                "message.timeout.ms": 10_000, **_COMMON}
    settings.update({k.replace("_", "."): v for k, v in conf.items()})
    return Producer(settings)


def consumer(ctx: Context, group: str | None = None, **conf: Any) -> Consumer:
    settings = {"bootstrap.servers": ctx.bootstrap_servers,
                "group.id": group or ctx.name("g"), "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500, "topic.metadata.refresh.interval.ms": 1000,
                **_COMMON}
    settings.update({k.replace("_", "."): v for k, v in conf.items()})
    return Consumer(settings)


def error(exc: BaseException | KafkaError | None) -> str | None:
    """A KafkaException/KafkaError as its error name (``"UNKNOWN_TOPIC_OR_PART"``...)."""
    if exc is None:
        return None
    if isinstance(exc, KafkaException):
        exc = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if exc is None:
            return "KafkaException"
    if isinstance(exc, KafkaError):
        return exc.name()
    return type(exc).__name__


def outcome(future: Any, timeout_s: float = 20.0) -> Any:
    """A future's result, or ``{"error": name}`` when it failed with a Kafka error."""
    try:
        return future.result(timeout_s)
    except KafkaException as exc:
        return {"error": error(exc)}


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 20.0,
             interval_s: float = 0.1) -> Any:
    """Poll ``condition`` until it returns something truthy (returned); ScenarioError naming
    ``what`` at the deadline. Conditions, never fixed sleeps."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = condition()
        except KafkaException as exc:
            last = error(exc)
        else:
            if last:
                return last
        time.sleep(interval_s)
    raise ScenarioError(f"timed out after {timeout_s}s waiting for {what} (last: {last!r})")


def leaders_known(ctx: Context, topic: str, partitions: int) -> bool:
    """Every broker's metadata lists ``partitions`` partitions of ``topic``, each with a leader.

    Asked of each broker in turn, since a client may go to any of them next."""
    for address in ctx.addresses:
        answer = raw.call(address, 3, 9, {"topics": [{"name": topic}],
                                          "allow_auto_topic_creation": False,
                                          "include_cluster_authorized_operations": False,
                                          "include_topic_authorized_operations": False})
        if not isinstance(answer, dict) or not answer["topics"]:
            return False
        parts = answer["topics"][0]["partitions"]
        if len(parts) != partitions or any(p["leader_id"] < 0 for p in parts):
            return False
    return True


def try_create_topic(ctx: Context, suffix: str = "t", partitions: int = 1,
                     replication: int = 3, config: dict[str, str] | None = None,
                     assignment: list[list[int]] | None = None) -> tuple[str, str | None]:
    """Create ``<prefix>-<suffix>`` and wait until every broker knows its leaders:
    ``(topic, None)``, or ``(topic, error name)`` when the creation was refused.

    Replication 3 by default: the shared clusters run with min.insync.replicas=2, so a topic
    of one replica refuses acks=all (a scenario of its own)."""
    topic = ctx.name(suffix)
    if assignment:
        # confluent-kafka 2.16 refuses any NewTopic with a replica assignment ("a default
        # partition count and a replica assignment are mutually exclusive"): raw CreateTopics
        answer = raw.call(controller_address(ctx), 19, 5, {
            "topics": [{"name": topic, "num_partitions": -1, "replication_factor": -1,
                        "assignments": [{"partition_index": i, "broker_ids": replicas}
                                        for i, replicas in enumerate(assignment)],
                        "configs": [{"name": k, "value": v}
                                    for k, v in (config or {}).items()]}],
            "timeout": 15000, "validate_only": False})
        if answer["topics"][0]["error_code"] != "NONE":
            return topic, answer["topics"][0]["error_code"]
    else:
        client = admin(ctx)       # kept referenced until the future resolves (else: _DESTROY)
        futures = client.create_topics([NewTopic(topic, partitions, replication,
                                                 config=config or {})], operation_timeout=15)
        try:
            futures[topic].result(ctx.timeout_s)
        except KafkaException as exc:
            return topic, error(exc)
    count = len(assignment) if assignment else partitions
    wait_for(lambda: leaders_known(ctx, topic, count), f"leaders of {topic}", ctx.timeout_s)
    return topic, None


def create_topic(ctx: Context, suffix: str = "t", partitions: int = 1, replication: int = 3,
                 config: dict[str, str] | None = None,
                 assignment: list[list[int]] | None = None) -> str:
    """``try_create_topic``, raising ScenarioError when the creation is refused."""
    topic, refused = try_create_topic(ctx, suffix, partitions, replication, config, assignment)
    if refused:
        raise ScenarioError(f"creating {topic} (config {config}): {refused}")
    return topic


def produce(ctx: Context, topic: str, values: list[bytes | str], partition: int = 0,
            keys: list | None = None, timestamps: list[int] | None = None,
            acks: int | str = "all", **conf: Any) -> list[Any]:
    """Produce ``values`` one by one and return each delivery's offset or error."""
    reports: list[Any] = [None] * len(values)
    p = producer(ctx, acks=acks, **conf)

    def delivered(index: int):
        def report(err, msg):
            reports[index] = {"error": error(err)} if err else msg.offset()
        return report

    for index, value in enumerate(values):
        extra = {}
        if timestamps is not None:
            extra["timestamp"] = timestamps[index]
        p.produce(topic, value=value, key=None if keys is None else keys[index],
                  partition=partition, on_delivery=delivered(index), **extra)
    left = p.flush(ctx.timeout_s)
    if left:
        raise ScenarioError(f"{left} of {len(values)} records to {topic} not delivered in "
                            f"{ctx.timeout_s}s")
    return reports


def consume_all(ctx: Context, topic: str, expected: int, partition: int = 0, offset: int = 0,
                **conf: Any) -> list[dict]:
    """Read ``expected`` records of one partition from ``offset`` (assign, no group): each as
    {offset, key, value, timestamp type}, or the errors the consumer reported."""
    c = consumer(ctx, **conf)
    try:
        c.assign([TopicPartition(topic, partition, offset)])
        return _poll_records(c, ctx.timeout_s, lambda records: len(records) >= expected)
    finally:
        c.close()


def read_to_end(ctx: Context, topic: str, partition: int = 0) -> list[dict]:
    """Every record of one partition from its log start to its high watermark (as
    ``consume_all`` reports them), without waiting for records that are not there."""
    low, high = watermarks(ctx, topic, partition)
    if high <= low:
        return []
    c = consumer(ctx)
    try:
        c.assign([TopicPartition(topic, partition, low)])
        return _poll_records(c, ctx.timeout_s,
                             lambda seen: bool(seen) and seen[-1].get("offset", -1) >= high - 1)
    finally:
        c.close()


def _poll_records(c, timeout_s: float, done) -> list[dict]:
    """Records polled from ``c`` as {offset, key, value} until ``done(records)`` or the
    deadline; a consumer error ends the list as {"error": ...} (end-of-partition events are
    not errors)."""
    records: list[dict] = []
    deadline = time.monotonic() + timeout_s
    while not done(records) and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                continue
            records.append({"error": error(msg.error())})
            break
        records.append({"offset": msg.offset(), "key": _text(msg.key()),
                        "value": _text(msg.value())})
    return records


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return f"<{len(data)} bytes>"


def watermarks(ctx: Context, topic: str, partition: int = 0) -> list[int]:
    c = consumer(ctx)
    try:
        return list(c.get_watermark_offsets(TopicPartition(topic, partition), ctx.timeout_s))
    finally:
        c.close()


def leader_address(ctx: Context, topic: str, partition: int = 0) -> str:
    """The address of ``topic``/``partition``'s leader, from Metadata."""
    md = admin(ctx).list_topics(topic, timeout=ctx.timeout_s)
    leader = md.topics[topic].partitions[partition].leader
    broker = md.brokers[leader]
    return f"{broker.host}:{broker.port}"


def controller_address(ctx: Context) -> str:
    """The controller's address (CreateTopics, DeleteTopics and CreatePartitions must go to it
    in Kafka 2.8: another broker answers NOT_CONTROLLER)."""
    answer = raw.call(ctx.addresses[0], 3, 9, {"topics": [], "allow_auto_topic_creation": False,
                                               "include_cluster_authorized_operations": False,
                                               "include_topic_authorized_operations": False})
    for broker in answer["brokers"]:
        if broker["node_id"] == answer["controller_id"]:
            return f"{broker['host']}:{broker['port']}"
    raise ScenarioError(f"no controller in the metadata: {answer}")


def other_address(ctx: Context, than: str) -> str:
    """A broker address other than ``than``."""
    return next(a for a in ctx.addresses if a != than)


def coordinator_address(ctx: Context, group: str) -> str:
    """The address of ``group``'s coordinator (FindCoordinator, retried while it loads)."""
    def find():
        answer = raw.call(ctx.addresses[0], 10, 3, {"key": group, "key_type": 0})
        return answer if answer["error_code"] == "NONE" else None

    found = wait_for(find, f"the coordinator of {group}", ctx.timeout_s)
    return f"{found['host']}:{found['port']}"
