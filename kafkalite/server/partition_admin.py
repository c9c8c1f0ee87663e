"""CreatePartitions on the broker: add partitions to an existing topic (Kafka 2.8's
ZkAdminManager.createPartitions), for both protocols' request handlers.

The decision is made on ZooKeeper alone, as Kafka's: the topic's assignment (the topic exists, is
not being moved, the count grows) and the registered brokers (explicit replicas must name them)
are read from there, never from this broker's metadata cache, which may not know a topic created
a moment ago yet. The new partitions' replicas
(:func:`kafkalite.controller.assignment.assign_new_partitions`) are written with one conditional
write of ``/brokers/topics/<t>``. The controller watches that znode, elects the new partitions'
leaders and sends LeaderAndIsr and UpdateMetadata; the request is answered once this broker's
metadata shows a leader for every partition of the topic, or at its timeout (REQUEST_TIMED_OUT
without a message, as Kafka: the partitions were added, only their leaders were late); a timeout
of 0 answers REQUEST_TIMED_OUT at once.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.controller.assignment import assign_new_partitions
from kafkalite.errors import KafkaError, code_of
from kafkalite.topics import topic_name_problem
from kafkalite.zk.errors import ZkBadVersionError

log = logging.getLogger(__name__)

WRITE_ATTEMPTS = 3     # a concurrent change of the assignment: re-read and decide again
NO_LEADER = -1         # Kafka's LeaderAndIsr.NoLeader


def create_partitions(broker, topic: str, count: int, assignments: list[list[int]] | None,
                      validate_only: bool, timeout_ms: int) -> defer.Deferred:
    """Grow ``topic`` to ``count`` partitions. ``assignments``: one broker-id list per added
    partition (None: spread them like Kafka). With ``validate_only`` nothing is written.
    Fires with ``(error_code, error_message)``: ``(0, None)`` on success; never fails."""
    d = defer.ensureDeferred(_create_partitions(broker, topic, count, assignments,
                                                validate_only, timeout_ms))

    def unexpected(failure):
        log.error("CreatePartitions of topic %r failed unexpectedly", topic,
                  exc_info=(failure.type, failure.value, failure.getTracebackObject()))
        return (errors.UnknownServerError.code,
                f"adding partitions to topic '{topic}' failed: {failure.getErrorMessage()}")

    d.addErrback(unexpected)
    return d


async def _create_partitions(broker, topic, count, assignments, validate_only, timeout_ms):
    metadata = broker.metadata_cache
    try:
        if assignments is not None:
            try:
                assignments = [[int(b) for b in replicas] for replicas in assignments]
            except (TypeError, ValueError):
                raise errors.InvalidRequestError(
                    f"the new partitions' assignments must be lists of broker ids, got "
                    f"{assignments!r}") from None
        if topic_name_problem(topic):
            # Kafka looks the name up in ZooKeeper and finds no such topic
            raise errors.UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        marked = await broker.deferred_zk.topics_marked_for_deletion()
        if topic in marked:
            raise errors.InvalidTopicError("The topic is queued for deletion.")    # Kafka's words
        # the registered brokers, as Kafka's adminZkClient.getBrokerMetadatas: a broker this
        # broker's cache has not heard of yet counts, as it does for Kafka
        registered = await broker.deferred_zk.get_broker_ids()
        reassigning = await broker.deferred_zk.get_partition_reassignments()
        moving = sorted(p for t, p in reassigning if t == topic)
        if moving:
            raise errors.ReassignmentInProgressError(
                f"A partition reassignment is in progress for topic '{topic}' (partitions "
                f"{', '.join(map(str, moving))}); add partitions once it has finished.")
        for attempt in range(WRITE_ATTEMPTS):
            current = await broker.deferred_zk.get_topic_assignment(topic)
            if current is None:
                raise errors.UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
            if current.adding_replicas or current.removing_replicas:
                # a move through AlterPartitionReassignments (KIP-455), kept in the topic znode
                raise errors.ReassignmentInProgressError(
                    f"A partition reassignment is in progress for the topic '{topic}'.")
            added = assign_new_partitions(topic, current.partitions, count, registered,
                                          assignments)
            if validate_only:
                return (errors.NONE, None)
            try:
                await broker.deferred_zk.add_partitions(topic, added, current.zk_version)
            except ZkBadVersionError:
                if attempt + 1 == WRITE_ATTEMPTS:
                    raise errors.UnknownServerError(
                        f"the assignment of topic '{topic}' kept changing while partitions "
                        f"were added; try again") from None
                continue
            log.info("topic %s: added partitions %s", topic,
                     ", ".join(f"{p} -> {r}" for p, r in sorted(added.items())))
            break
    except KafkaError as exc:
        return (code_of(exc), exc.message)
    # Kafka: written, but not waited for -- REQUEST_TIMED_OUT, no message
    late = (errors.RequestTimedOutError.code, None)
    if timeout_ms <= 0:
        return late
    result = [(errors.NONE, None)]

    def ready():
        return _leaders_known(metadata, topic, range(count))

    def done(timed_out):
        if not ready():
            result[0] = late

    await broker.metadata_waits.wait(timeout_ms, ready, done)
    return result[0]


def _leaders_known(metadata, topic: str, partitions) -> bool:
    """Whether the cache shows a leader for each of ``partitions`` (all of the topic's, old and
    new: Kafka's DelayedCreatePartitions waits for every partition of the written assignment,
    a partition of leader -1 or not yet in the cache is missing its leader)."""
    parts = metadata.partitions.get(topic, {})
    return all(p in parts and parts[p].leader != NO_LEADER for p in partitions)
