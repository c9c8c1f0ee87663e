"""Four independent Kafka clients -- confluent-kafka, kafka-python, aiokafka and kcat -- logging in
over SASL_SSL and reporting what each one surfaces when a broker refuses it, for
test_security_refusals_clients.py.

Each client gives the same three probes, answered in its own terms:

- ``describe(topic)``: the topic's error name as the client reports it from Metadata /
  DescribeTopics (``"TOPIC_AUTHORIZATION_FAILED"``), or None and its partition count;
- ``read(topic, group, count, stop_on)``: the values it consumed (partition 0 assigned when
  ``group`` is None, else the topic subscribed in ``group``) and the error names it surfaced,
  until ``count`` values or an error named ``stop_on``, within ``READ_TIMEOUT_S``.

kcat's errors are librdkafka's sentences on stderr; they are mapped back to Kafka's names by
their text, so a wrong message is a wrong answer.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from dataclasses import dataclass, field

READ_TIMEOUT_S = 20.0
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "kcat")
# librdkafka's texts for the errors (rd_kafka_err2str), as kcat prints them
KCAT_TEXTS = {"Topic authorization failed": "TOPIC_AUTHORIZATION_FAILED",
              "Group authorization failed": "GROUP_AUTHORIZATION_FAILED"}


@dataclass
class Read:
    values: list[bytes] = field(default_factory=list)
    errors: set[str] = field(default_factory=set)


@dataclass
class Login:
    """Who logs in where: SASL_SSL on ``bootstrap`` with ``mechanism``."""
    bootstrap: str
    ca_path: str
    user: str
    password: str
    mechanism: str = "SCRAM-SHA-512"

    def librdkafka(self, **more) -> dict:
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanisms": self.mechanism, "sasl.username": self.user,
                "sasl.password": self.password, "ssl.ca.location": self.ca_path, **more}

    def python_kwargs(self) -> dict:
        """kafka-python's names (aiokafka shares them, with an ssl_context instead of a file)."""
        return dict(bootstrap_servers=self.bootstrap, security_protocol="SASL_SSL",
                    sasl_mechanism=self.mechanism, sasl_plain_username=self.user,
                    sasl_plain_password=self.password)

    def aiokafka_kwargs(self) -> dict:
        from aiokafka.helpers import create_ssl_context

        return {**self.python_kwargs(), "ssl_context": create_ssl_context(cafile=self.ca_path)}


def _done(read: Read, count: int, stop_on: str | None) -> bool:
    return len(read.values) >= count or (stop_on is not None and stop_on in read.errors)


# --- confluent-kafka ------------------------------------------------------------------------

def confluent_describe(login: Login, topic: str):
    from confluent_kafka.admin import AdminClient

    found = AdminClient(login.librdkafka()).list_topics(topic, timeout=30).topics[topic]
    return (found.error.name(), 0) if found.error else (None, len(found.partitions))


def confluent_read(login: Login, topic: str, group: str | None, count: int,
                   stop_on: str | None = None, partition: int = 0) -> Read:
    from confluent_kafka import Consumer, TopicPartition

    # confluent-kafka wants a group.id even to assign: a group nobody has an ACL on
    consumer = Consumer(login.librdkafka(**{
        "group.id": group or f"assign-only-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False}))
    read = Read()
    try:
        if group is None:
            consumer.assign([TopicPartition(topic, partition, 0)])
        else:
            consumer.subscribe([topic])
        deadline = time.monotonic() + READ_TIMEOUT_S
        while not _done(read, count, stop_on) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                read.errors.add(msg.error().name())
            else:
                read.values.append(msg.value())
    finally:
        consumer.close()
    return read


# --- kafka-python ---------------------------------------------------------------------------

def kafka_python_describe(login: Login, topic: str):
    import kafka.errors
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(**login.python_kwargs(), ssl_cafile=login.ca_path)
    try:
        (found,) = admin.describe_topics([topic])
    finally:
        admin.close()
    if found["error_code"]:
        return kafka.errors.for_code(found["error_code"]).message, 0
    return None, len(found["partitions"])


def kafka_python_read(login: Login, topic: str, group: str | None, count: int,
                      stop_on: str | None = None) -> Read:
    import kafka
    import kafka.errors

    consumer = kafka.KafkaConsumer(**login.python_kwargs(), ssl_cafile=login.ca_path,
                                   group_id=group, auto_offset_reset="earliest",
                                   enable_auto_commit=False)
    read = Read()
    try:
        if group is None:
            consumer.assign([kafka.TopicPartition(topic, 0)])
        else:
            consumer.subscribe([topic])
        deadline = time.monotonic() + READ_TIMEOUT_S
        while not _done(read, count, stop_on) and time.monotonic() < deadline:
            try:
                for records in consumer.poll(timeout_ms=500).values():
                    read.values.extend(r.value for r in records)
            except kafka.errors.KafkaError as exc:    # what poll() raises: the broker's error
                read.errors.add(exc.message)
                time.sleep(0.2)     # kafka-python raises at once again; not a wait for a state
    finally:
        consumer.close()
    return read


# --- aiokafka -------------------------------------------------------------------------------

def aiokafka_describe(login: Login, topic: str):
    import aiokafka.errors
    from aiokafka.admin import AIOKafkaAdminClient

    async def describe():
        admin = AIOKafkaAdminClient(**login.aiokafka_kwargs())
        await admin.start()
        try:
            return await admin.describe_topics([topic])
        finally:
            await admin.close()
    (found,) = asyncio.run(describe())
    if found["error_code"]:
        return aiokafka.errors.for_code(found["error_code"]).message, 0
    return None, len(found["partitions"])


def aiokafka_read(login: Login, topic: str, group: str | None, count: int,
                  stop_on: str | None = None) -> Read:
    import aiokafka
    import aiokafka.errors

    async def consume() -> Read:
        consumer = aiokafka.AIOKafkaConsumer(**login.aiokafka_kwargs(), group_id=group,
                                             auto_offset_reset="earliest",
                                             enable_auto_commit=False)
        await consumer.start()
        read = Read()
        try:
            if group is None:
                consumer.assign([aiokafka.TopicPartition(topic, 0)])
            else:
                consumer.subscribe([topic])
            deadline = time.monotonic() + READ_TIMEOUT_S
            while not _done(read, count, stop_on) and time.monotonic() < deadline:
                try:
                    for records in (await consumer.getmany(timeout_ms=500)).values():
                        read.values.extend(r.value for r in records)
                except aiokafka.errors.KafkaError as exc:
                    read.errors.add(exc.message)
                    await asyncio.sleep(0.2)
        finally:
            await consumer.stop()
        return read
    return asyncio.run(consume())


# --- kcat -----------------------------------------------------------------------------------

def kcat(login: Login, *args: str, timeout_s: float = 60) -> subprocess.CompletedProcess:
    settings = login.librdkafka()
    command = ["kcat", "-b", login.bootstrap]
    for key in ("security.protocol", "sasl.mechanisms", "sasl.username", "sasl.password",
                "ssl.ca.location"):
        command += ["-X", f"{key}={settings[key]}"]
    return subprocess.run(command + list(args), capture_output=True, timeout=timeout_s)


def _kcat_errors(stderr: bytes) -> set[str]:
    text = stderr.decode(errors="replace")
    return {name for words, name in KCAT_TEXTS.items() if words in text}


def kcat_describe(login: Login, topic: str):
    listing = kcat(login, "-L", "-t", topic)
    out = listing.stdout.decode()
    for words, name in KCAT_TEXTS.items():
        if f'topic "{topic}" with 0 partitions: Broker: {words}' in out:
            return name, 0
    marker = f'topic "{topic}" with '
    assert listing.returncode == 0 and marker in out, (listing, out)
    return None, int(out.split(marker, 1)[1].split(" ", 1)[0])


def kcat_read(login: Login, topic: str, group: str | None, count: int,
              stop_on: str | None = None) -> Read:
    # kcat stops at an error (exit 1) or after -c records
    if group is None:
        args = ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", str(count)]
    else:
        args = ["-G", group, topic, "-o", "beginning", "-c", str(count)]
    try:
        done = kcat(login, *args, "-q", timeout_s=READ_TIMEOUT_S + 10)
    except subprocess.TimeoutExpired as exc:
        return Read([], _kcat_errors(exc.stderr or b""))
    values = [v.encode() for v in done.stdout.decode().split("\n") if v]
    return Read(values, _kcat_errors(done.stderr))


DESCRIBE = {"confluent-kafka": confluent_describe, "kafka-python": kafka_python_describe,
            "aiokafka": aiokafka_describe, "kcat": kcat_describe}
READ = {"confluent-kafka": confluent_read, "kafka-python": kafka_python_read,
        "aiokafka": aiokafka_read, "kcat": kcat_read}
