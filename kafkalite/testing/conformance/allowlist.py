"""Known differences between kafkalite and Apache Kafka 2.8.2: scenario name -> reason.

Every reason says what kafkalite lacks ("not served": a feature or protocol version left after
issue 23, Kafka 2.8's API set, with what it would take), or starts with "Kafka bug:" and shows
why Kafka's answer is the bug (kafkalite then keeps its own). An entry whose scenario answers the same on both systems fails the run as stale, so this
list only ever holds differences that still exist. The lead's known differences -- OffsetCommit
to an unknown topic (commit-unknown-topic), the KIP-74 fetch limit (fetch-limit-across-
partitions), recompression to a topic's compression.type (topic-compression-recompresses) and a
broker's dynamic log.retention.ms (broker-dynamic-log-retention) -- were fixed while the suite
was being built, so they have no entry; so were the Produce refusals, OffsetForLeaderEpoch above
the latest epoch, message.timestamp.difference.max.ms, the cleaner's timing, FindCoordinator's
key types and empty group, OffsetForLeaderEpoch's ACL rule, authorized operations (KIP-430), and
CreateTopics/CreatePartitions/DeleteTopics (Kafka's checks, wording, KIP-525 answers, NOT_CONTROLLER
away from the controller), and DescribeConfigs/AlterConfigs (Kafka's names, defaults, types,
sensitivity, synonyms, error codes and messages).

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
        "not served, left after issue 23: the versions below kio's minima (kio follows Kafka 4.0, "
        "which dropped the pre-0.11 versions, KIP-896: Produce 0-2, ListOffsets 0, OffsetCommit "
        "0-1, CreateTopics 0-1, v0 of the ACL, DescribeConfigs, log-dir and token APIs, ...) "
        "and the inter-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata, "
        "ControlledShutdown), which kafkalite's brokers speak natively"),
    # --- produce / fetch ---------------------------------------------------------------------
    # --- configs -----------------------------------------------------------------------------
    "broker-config-read-only": (
        "not served, left after issue 23: listeners, advertised.listeners, "
        "listener.security.protocol.map and sasl.enabled.mechanisms, which Kafka 2.8 changes at "
        "run time per broker (KIP-226's dynamic listeners), are read-only in kafkalite"),
    "incremental-alter-unknown-operation": (
        "Kafka bug: Kafka 2.8 maps an unknown IncrementalAlterConfigs operation id to null "
        "(OpType.forId) and fails on it with an unhandled exception, answered as "
        "UNKNOWN_SERVER_ERROR; kafkalite keeps INVALID_REQUEST, the error Kafka's protocol "
        "has for a malformed request"),
    # --- admin APIs kafkalite does not serve --------------------------------------------------
    # --- ACLs (the authorizer pair) ---------------------------------------------------------
    "acl-invalid-bindings": (
        "Kafka bug: Kafka 2.8 answers a CreateAcls binding it cannot build (resource type or "
        "operation ANY, pattern MATCH, a principal without a type) with UNKNOWN_SERVER_ERROR, "
        "from an unhandled exception; kafkalite keeps INVALID_REQUEST"),
}
