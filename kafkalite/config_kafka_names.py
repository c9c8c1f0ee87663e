"""Kafka 2.8's config names that kafkalite accepts but does not apply, each with the reason.

Apache Kafka 2.8.2 defines 233 broker configs (``kafka.server.KafkaConfig.configNames``, the
KRaft early-access ones included) and 26 topic configs (``kafka.log.LogConfig.configNames``).
kafkalite applies the ones in its table (``kafkalite.config``: ``BROKER_CONFIGS``,
``TOPIC_CONFIGS``); every other Kafka name is listed here, so a Kafka ``server.properties`` or a
client setting a Kafka topic config is accepted as Kafka accepts it. A broker logs the no-effect
names it was given once, at start-up; their values are not checked.

``tests/oracle/test_kafka_config_names.py`` asks Kafka's own jars for the names and fails when one
is neither applied nor listed here; ``docs/kafka-configs.md`` is generated from these tables
(``python -m kafkalite.config_docs``).
"""

from __future__ import annotations

import difflib
from typing import Iterable

# (reason, names): one reason for each group of Kafka broker configs kafkalite does not apply
_BROKER_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("threads: kafkalite is one Twisted reactor", (
        "background.threads", "num.io.threads", "num.network.threads",
        "num.recovery.threads.per.data.dir", "num.replica.alter.log.dirs.threads",
        "log.cleaner.threads")),
    ("fetcher threads: kafkalite runs one replica fetcher per leader broker, on the reactor", (
        "num.replica.fetchers",)),
    ("request queue: the reactor handles each request as it arrives, with no queue between "
     "network and I/O threads", ("queued.max.requests", "queued.max.request.bytes")),
    ("socket buffers stay at the operating system's defaults", (
        "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
        "replica.socket.receive.buffer.bytes")),
    ("connection limits: kafkalite does not limit, rate-limit or close idle connections", (
        "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
        "max.connection.creation.rate", "connections.max.idle.ms")),
    ("connection set-up timeouts of Kafka's Java NetworkClient; kafkalite's broker-to-broker "
     "connections retry on their own timing", (
        "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms")),
    ("purgatory purges: kafkalite's purgatory drops an operation from its watch lists as it "
     "completes or expires, not every N requests", (
        "fetch.purgatory.purge.interval.requests", "producer.purgatory.purge.interval.requests",
        "delete.records.purgatory.purge.interval.requests")),
    ("fetch size: a fetch response is bounded by the client's own fetch.max.bytes only", (
        "fetch.max.bytes",)),
    ("incremental fetch sessions (KIP-227): kafkalite answers every fetch in full", (
        "max.incremental.fetch.session.cache.slots",)),
    ("quotas: kafkalite enforces client quotas but has no replication or controller quotas", (
        "replication.quota.window.num",
        "replication.quota.window.size.seconds", "alter.log.dirs.replication.quota.window.num",
        "alter.log.dirs.replication.quota.window.size.seconds", "controller.quota.window.num",
        "controller.quota.window.size.seconds", "client.quota.callback.class")),
    ("metrics: kafkalite has no JMX or metrics reporters", (
        "kafka.metrics.polling.interval.secs", "kafka.metrics.reporters", "metric.reporters",
        "metrics.num.samples", "metrics.recording.level", "metrics.sample.window.ms")),
    ("password encoder of dynamic broker configs: kafkalite has no dynamic password configs", (
        "password.encoder.cipher.algorithm", "password.encoder.iterations",
        "password.encoder.key.length", "password.encoder.keyfactory.algorithm",
        "password.encoder.old.secret", "password.encoder.secret")),
    ("KRaft mode (KIP-500, early access in Kafka 2.8): kafkalite is ZooKeeper mode only", (
        "process.roles", "node.id", "controller.listener.names", "controller.quorum.voters",
        "controller.quorum.append.linger.ms", "controller.quorum.election.backoff.max.ms",
        "controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms",
        "controller.quorum.request.timeout.ms", "controller.quorum.retry.backoff.ms",
        "broker.heartbeat.interval.ms", "broker.session.timeout.ms",
        "initial.broker.registration.timeout.ms", "metadata.log.dir",
        "sasl.mechanism.controller.protocol")),
    ("Kerberos, OAUTHBEARER and SASL plug-in classes: kafkalite offers PLAIN and SCRAM only", (
        "sasl.kerberos.kinit.cmd", "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal.to.local.rules", "sasl.kerberos.service.name",
        "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.ticket.renew.window.factor",
        "sasl.login.callback.handler.class", "sasl.login.class",
        "sasl.login.refresh.buffer.seconds", "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
        "sasl.client.callback.handler.class", "sasl.server.callback.handler.class")),
    ("SASL limits: frames before authentication are capped at 512 KiB (Kafka's default, not "
     "settable); failed authentications are not delayed; no re-authentication (KIP-368)", (
        "sasl.server.max.receive.size", "connection.failed.authentication.delay.ms",
        "connections.max.reauth.ms")),
    ("Java TLS (JSSE) settings: kafkalite's TLS is Python's ssl module (OpenSSL) with its "
     "default ciphers; PEM trust stores have no password", (
        "ssl.cipher.suites", "ssl.engine.factory.class", "ssl.keymanager.algorithm",
        "ssl.protocol", "ssl.provider", "ssl.secure.random.implementation",
        "ssl.trustmanager.algorithm", "ssl.truststore.password", "security.providers")),
    ("Java plug-in classes: kafkalite loads no Java classes (principals are built as Kafka's "
     "default builder does)", (
        "alter.config.policy.class.name", "create.topic.policy.class.name",
        "principal.builder.class")),
    ("ZooKeeper client: kafkalite talks to ZooKeeper with kazoo over plain TCP (no ZooKeeper "
     "TLS; kazoo pipelines requests itself)", (
        "zookeeper.clientCnxnSocket", "zookeeper.max.in.flight.requests",
        "zookeeper.ssl.cipher.suites", "zookeeper.ssl.client.enable",
        "zookeeper.ssl.crl.enable", "zookeeper.ssl.enabled.protocols",
        "zookeeper.ssl.endpoint.identification.algorithm", "zookeeper.ssl.keystore.location",
        "zookeeper.ssl.keystore.password", "zookeeper.ssl.keystore.type",
        "zookeeper.ssl.ocsp.enable", "zookeeper.ssl.protocol",
        "zookeeper.ssl.truststore.location", "zookeeper.ssl.truststore.password",
        "zookeeper.ssl.truststore.type")),
    ("unused by Kafka 2.8's broker itself", ("zookeeper.sync.time.ms",)),
    ("versions: kafkalite's brokers speak one protocol version to each other",
     ("inter.broker.protocol.version",)),
    ("broker id generation: kafkalite needs broker.id set", (
        "broker.id.generation.enable", "reserved.broker.max.id")),
    ("segment files are appended, not preallocated", ("log.preallocate",)),
    ("segments roll at exactly segment.ms, with no jitter", (
        "log.roll.jitter.ms", "log.roll.jitter.hours")),
    ("the log cleaner always runs: compacted topics are compacted once dirty enough "
     "(log.cleaner.min.cleanable.ratio), with no lag bounds and no memory or I/O limits", (
        "log.cleaner.enable", "log.cleaner.min.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms", "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.max.bytes.per.second")),
    ("kafkalite writes the log-start-offset checkpoint with the recovery points "
     "(log.flush.offset.checkpoint.interval.ms)", (
        "log.flush.start.offset.checkpoint.interval.ms",)),
    ("the group coordinator writes __consumer_offsets uncompressed", (
        "offsets.topic.compression.codec",)),
)

# (reason, names) for Kafka's topic configs kafkalite does not apply
_TOPIC_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("replication throttles: kafkalite has no replication quotas", (
        "leader.replication.throttled.replicas", "follower.replication.throttled.replicas")),
    ("compaction lag bounds: kafkalite compacts once the log is dirty enough "
     "(min.cleanable.dirty.ratio)", ("min.compaction.lag.ms", "max.compaction.lag.ms")),
    ("segment files are appended, not preallocated", ("preallocate",)),
    ("segments roll at exactly segment.ms, with no jitter", ("segment.jitter.ms",)),
)

#: Kafka 2.8 broker config name -> why kafkalite accepts it without effect
BROKER_NO_EFFECT: dict[str, str] = {name: reason for reason, names in _BROKER_GROUPS
                                    for name in names}
#: Kafka 2.8 topic config name -> why kafkalite accepts it without effect
TOPIC_NO_EFFECT: dict[str, str] = {name: reason for reason, names in _TOPIC_GROUPS
                                   for name in names}

#: broker keys kafkalite applies that are not in Kafka 2.8's KafkaConfig, and why they exist
NOT_KAFKA_BROKER_CONFIGS: dict[str, str] = {
    "super.users": "Kafka's AclAuthorizer reads it from the broker's properties",
    "allow.everyone.if.no.acl.found": "Kafka's AclAuthorizer reads it from the broker's "
                                      "properties",
    "zookeeper.auth.digest": "kafkalite's own: Kafka authenticates to ZooKeeper with SASL "
                             "through JAAS, which a stock ZooKeeper lacks",
}


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """The known config name closest to ``name`` (a typo's likely meaning), or None."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return close[0] if close else None


def _hint(name: str, known: Iterable[str]) -> str:
    close = closest_name(name, known)
    return f"; did you mean {close}?" if close else ""


def unknown_topic_config_message(name: str, known: Iterable[str]) -> str:
    """Kafka 2.8's answer to an unknown topic config (CreateTopics, AlterConfigs: it refuses
    with INVALID_CONFIG), with the closest known name added."""
    return f"Unknown topic config name: {name}{_hint(name, known)}"


def unknown_broker_config_note(name: str, known: Iterable[str]) -> str:
    """Kafka 2.8's warning for an unknown broker config (it starts anyway), with the closest
    known name added."""
    close = closest_name(name, known)
    hint = f" Did you mean {close}?" if close else ""
    return f"The configuration '{name}' was supplied but isn't a known config.{hint}"


def no_effect_note(names: Iterable[str]) -> str:
    """The one start-up line naming the given Kafka configs kafkalite does not apply."""
    names = list(dict.fromkeys(names))
    return (f"{len(names)} Kafka config(s) accepted without effect in kafkalite (see "
            f"docs/kafka-configs.md for why): {', '.join(names)}")


def _check_no_duplicates() -> None:
    for groups in (_BROKER_GROUPS, _TOPIC_GROUPS):
        names = [name for _reason, group in groups for name in group]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise AssertionError(f"listed twice: {twice}")


_check_no_duplicates()
