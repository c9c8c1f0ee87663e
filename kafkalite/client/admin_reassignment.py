"""Reassignments and leader elections through the brokers (KIP-455, KIP-460): the admin
client's AlterPartitionReassignments, ListPartitionReassignments and ElectLeaders, each sent to
the controller and sent again, after a metadata refresh, while the answer says NOT_CONTROLLER
(the controller moved) or the connection fails, until the request timeout.

Results as the rest of the admin client gives them: ``{TopicPartition: None | KafkaError}`` per
partition; a listing is ``{TopicPartition: OngoingReassignment}``.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from kafkalite import errors
from kafkalite.client.admin_topics import controller_or_any
from kafkalite.client.structs import TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.protocol import messages as m

__all__ = ["OngoingReassignment", "alter_partition_reassignments", "current_replicas",
           "list_partition_reassignments", "elect_leaders", "PREFERRED", "UNCLEAN"]

PREFERRED, UNCLEAN = m.ELECTION_PREFERRED, m.ELECTION_UNCLEAN
_NOT_CONTROLLER = errors.NotControllerError.code


class OngoingReassignment(NamedTuple):
    replicas: list[int]          # the target first, then the replicas leaving
    adding: list[int]
    removing: list[int]

    @property
    def target(self) -> list[int]:
        return [b for b in self.replicas if b not in self.removing]


def _at_controller(admin, request, not_controller, timeout_ms: int = 0):
    """``request``'s answer from the controller; asked again while ``not_controller(answer)``."""
    admin._check_open()
    deadline = time.monotonic() + (admin.request_timeout_ms + max(timeout_ms, 0)) / 1000
    last: KafkaError | None = None
    while True:
        node = None
        try:
            node = controller_or_any(admin)
            conn = admin._pool.get(node)
            conn.request_timeout_ms = admin.request_timeout_ms + max(timeout_ms, 0)
            answer = conn.request(request)
        except KafkaError as exc:
            if not exc.retriable:
                raise
            last = exc
            if node is not None:
                admin._pool.drop(node)
        else:
            if not not_controller(answer):
                return answer
            last = errors.NotControllerError(f"broker {node} is not the controller")
        admin._cluster.request_update()
        if time.monotonic() >= deadline:
            raise errors.KafkaTimeoutError(
                "no answer from the controller in time" + (f" (last error: {last})" if last
                                                           else ""))
        time.sleep(admin._retry_backoff)


def _error(code: int, message: str | None) -> KafkaError | None:
    return None if code == errors.NONE else errors.for_code(code, message)


def _top_level(answer) -> None:
    if answer.error_code != errors.NONE:
        raise errors.for_code(answer.error_code, answer.error_message)


def current_replicas(admin, partitions) -> dict[TopicPartition, list[int]]:
    """Each partition's replicas now (Metadata); UnknownTopicOrPartitionError for one that
    does not exist."""
    topics = sorted({TopicPartition(*tp).topic for tp in partitions})
    replicas = {TopicPartition(d.name, p.partition): list(p.replicas)
                for d in admin.describe_topics(topics) for p in d.partitions}
    for tp in partitions:
        if TopicPartition(*tp) not in replicas:
            raise errors.UnknownTopicOrPartitionError(f"partition {TopicPartition(*tp)} does "
                                                      f"not exist")
    return {TopicPartition(*tp): replicas[TopicPartition(*tp)] for tp in partitions}


def alter_partition_reassignments(admin, reassignments: dict
                                  ) -> dict[TopicPartition, KafkaError | None]:
    """``{(topic, partition): target replicas, or None to cancel}`` -> per partition None
    (accepted) or the controller's error (InvalidReplicaAssignmentError,
    NoReassignmentInProgressError, UnknownTopicOrPartitionError, ...)."""
    targets = {TopicPartition(*tp): (None if r is None else [int(b) for b in r])
               for tp, r in reassignments.items()}
    topics: dict[str, list] = {}
    for tp, replicas in targets.items():
        topics.setdefault(tp.topic, []).append(m.ReassignablePartition(tp.partition, replicas))
    request = m.AlterPartitionReassignmentsRequest(
        topics=[m.ReassignableTopic(t, ps) for t, ps in topics.items()],
        timeout_ms=admin.request_timeout_ms)
    answer = _at_controller(admin, request, lambda a: a.error_code == _NOT_CONTROLLER)
    _top_level(answer)
    got = {TopicPartition(t.topic, p.partition): _error(p.error_code, p.error_message)
           for t in answer.results for p in t.partitions}
    return {tp: got.get(tp, errors.UnknownServerError(f"{tp}: no answer"))
            for tp in targets}


def list_partition_reassignments(admin, partitions=None
                                 ) -> dict[TopicPartition, OngoingReassignment]:
    """The reassignments in progress (of ``partitions``, or all), sorted by partition."""
    topics = None
    if partitions is not None:
        grouped: dict[str, list[int]] = {}
        for tp in partitions:
            tp = TopicPartition(*tp)
            grouped.setdefault(tp.topic, []).append(tp.partition)
        topics = [m.ListReassignmentsTopic(t, ps) for t, ps in grouped.items()]
    request = m.ListPartitionReassignmentsRequest(topics=topics,
                                                  timeout_ms=admin.request_timeout_ms)
    answer = _at_controller(admin, request, lambda a: a.error_code == _NOT_CONTROLLER)
    _top_level(answer)
    found = {TopicPartition(t.topic, p.partition): OngoingReassignment(
        list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
        for t in answer.topics for p in t.partitions}
    return dict(sorted(found.items()))


def elect_leaders(admin, election_type: int, partitions=None, timeout_ms: int | None = None
                  ) -> dict[TopicPartition, KafkaError | None]:
    """Per partition None (elected) or the error: ElectionNotNeededError,
    PreferredLeaderNotAvailableError, EligibleLeadersNotAvailableError,
    UnknownTopicOrPartitionError, RequestTimedOutError (elected, not yet seen by the broker).
    ``partitions`` None: every partition, and the answer leaves out those that needed no
    election (Kafka's rule)."""
    timeout_ms = admin.request_timeout_ms if timeout_ms is None else timeout_ms
    topics = None
    if partitions is not None:
        grouped: dict[str, list[int]] = {}
        for tp in dict.fromkeys(TopicPartition(*tp) for tp in partitions):
            grouped.setdefault(tp.topic, []).append(tp.partition)
        topics = [m.ElectLeadersTopic(t, ps) for t, ps in grouped.items()]
    request = m.ElectLeadersRequest(election_type=election_type, topic_partitions=topics,
                                    timeout_ms=timeout_ms)

    def not_controller(answer):
        codes = {p.error_code for t in answer.results for p in t.partitions}
        return _NOT_CONTROLLER in codes
    answer = _at_controller(admin, request, not_controller, timeout_ms)
    if answer.error_code != errors.NONE:
        raise errors.for_code(answer.error_code, None)
    return {TopicPartition(t.topic, p.partition): _error(p.error_code, p.error_message)
            for t in answer.results for p in t.partitions}
