"""Known differences between kafkalite and Apache Kafka 2.8.2: scenario name -> reason.

Every reason names the issue whose fix removes the difference (issue 23: an API or feature
kafkalite lacks; issue 24: a kafkalite bug, or a place where kafkalite answers otherwise than
Kafka). An entry whose scenario answers the same on both systems fails the run as stale, so this
list only ever holds differences that still exist. The lead's known differences -- OffsetCommit
to an unknown topic (commit-unknown-topic), the KIP-74 fetch limit (fetch-limit-across-
partitions), recompression to a topic's compression.type (topic-compression-recompresses) and a
broker's dynamic log.retention.ms (broker-dynamic-log-retention) -- were fixed while the suite
was being built, so they have no entry; so were the Produce refusals, OffsetForLeaderEpoch above
the latest epoch, message.timestamp.difference.max.ms, the cleaner's timing, FindCoordinator's
key types and empty group, OffsetForLeaderEpoch's ACL rule, authorized operations (KIP-430), and
CreateTopics/CreatePartitions/DeleteTopics (Kafka's checks, wording, KIP-525 answers, NOT_CONTROLLER
away from the controller).

INTERMITTENT names the entries whose difference is one of timing that a run may miss: there a
"same" answer is reported as allowlisted (saying so), not as stale.
"""

from __future__ import annotations

#: differences of timing a run may miss (none now: the cleaner runs every log.cleaner.backoff.ms,
#: as Kafka's does, so the compaction scenarios answer the same every run)
INTERMITTENT: frozenset[str] = frozenset()

ALLOWLIST: dict[str, str] = {
    # --- topics / metadata -----------------------------------------------------------------
    "api-versions-full-table": (
        "issue 23: kafkalite does not advertise Kafka 2.8's transaction, reassignment, quota, "
        "delegation-token, log-dir, SCRAM-admin, ElectLeaders, DescribeProducers, "
        "UpdateFeatures and broker-only APIs, nor versions below kio's minima"),
    # --- produce / fetch ---------------------------------------------------------------------
    "fetch-from-follower": (
        "issue 23: Fetch v11+ from a consumer may read from a follower in Kafka 2.8 "
        "(KIP-392); kafkalite answers NOT_LEADER_OR_FOLLOWER"),
    "transactional-coordinator": (
        "issue 23: no transaction coordinator: FindCoordinator for a transactional id answers "
        "COORDINATOR_NOT_AVAILABLE"),
    # --- groups ------------------------------------------------------------------------------
    # --- configs -----------------------------------------------------------------------------
    "topic-config-names": (
        "issue 23: topic configs Kafka 2.8 lists that kafkalite does not: the replication "
        "throttles, min/max.compaction.lag.ms, message.format.version, "
        "message.downconversion.enable, message.timestamp.difference.max.ms (accepted at "
        "creation, not listed), preallocate, segment.jitter.ms"),
    "topic-config-default-synonyms": (
        "issue 24: kafkalite lists log.retention.hours and log.roll.hours (their defaults) as "
        "synonyms of retention.ms and segment.ms; Kafka's only broker synonyms there are "
        "log.retention.ms and log.roll.ms, unset by default, so it lists none (the topic "
        "configs kafkalite lacks, issue 23, show here too)"),
    "topic-config-overrides": (
        "issue 24: an overridden retention.ms's synonym chain ends with log.retention.hours "
        "(default) in kafkalite; Kafka's broker synonym is log.retention.ms, unset, so its "
        "chain is the topic's override alone"),
    "describe-configs-errors": (
        "issue 24: DescribeConfigs of an unknown topic carries an error message in kafkalite; "
        "Kafka's is empty"),
    "broker-config-names": (
        "issue 23: broker configs Kafka 2.8 lists that kafkalite does not (quotas, "
        "delegation tokens, threads, metrics, Kerberos...), and kafkalite lists the "
        "authorizer's settings beside the broker's"),
    "broker-config-defaults": (
        "issue 24: default values and types that differ from Kafka 2.8's "
        "(log.flush.scheduler.interval.ms, sasl.enabled.mechanisms, "
        "sasl.mechanism.inter.broker.protocol, ssl.*.type, security.inter.broker.protocol, "
        "config types of listener maps and offsets.commit.required.acks)"),
    "broker-config-read-only": (
        "issue 23: the listener, SSL and SASL broker configs Kafka 2.8 changes at run time "
        "(dynamic listeners, keystore and JAAS reloads) are read-only in kafkalite"),
    "broker-config-sensitive": (
        "issue 23: sensitive broker configs Kafka lists that kafkalite does not "
        "(delegation-token keys, password encoder secrets, ssl.truststore.password, ZooKeeper "
        "TLS passwords; none leaks a value), and kafkalite's own zookeeper.auth.digest"),
    "alter-configs-bad-values": (
        "issue 24: a value a config cannot take is INVALID_REQUEST in Kafka's AlterConfigs "
        "and IncrementalAlterConfigs; kafkalite answers INVALID_CONFIG"),
    "incremental-alter-unknown-operation": (
        "issue 24: Kafka 2.8 answers an unknown IncrementalAlterConfigs operation with "
        "UNKNOWN_SERVER_ERROR (its own unhandled exception); kafkalite answers "
        "INVALID_REQUEST -- decide there whether to copy Kafka"),
    "alter-configs-error-messages": (
        "issue 24: config error codes (INVALID_CONFIG for INVALID_REQUEST) and kafkalite's "
        "own wording of the messages"),
    # --- admin APIs kafkalite does not serve --------------------------------------------------
    "elect-leaders": "issue 23: ElectLeaders (KIP-460) is not served",
    "describe-log-dirs": "issue 23: DescribeLogDirs is not served (the connection is closed)",
    "list-partition-reassignments": (
        "issue 23: ListPartitionReassignments (KIP-455) is not served (the connection is "
        "closed)"),
    "describe-scram-credentials": (
        "issue 23: DescribeUserScramCredentials (KIP-554) is not served"),
    # --- ACLs (the authorizer pair) ---------------------------------------------------------
    "acl-invalid-bindings": (
        "issue 24: Kafka 2.8 answers a CreateAcls binding it cannot build (resource type or "
        "operation ANY, pattern MATCH, a principal without a type) with UNKNOWN_SERVER_ERROR "
        "(its own unhandled exception); kafkalite answers INVALID_REQUEST -- decide there "
        "whether to copy Kafka"),
    # --- retention / compaction ------------------------------------------------------------------
}
