"""The AdminClient's topics through the brokers: CreateTopics, DeleteTopics, CreatePartitions to
the controller (any broker when none is known), retried on NOT_CONTROLLER and lost connections
until the operation's timeout; Metadata and DescribeConfigs for describing them.

Functions of the AdminClient (``admin.py`` keeps the public methods and their documentation),
as ``admin_configs`` and ``admin_groups`` are.
"""

from __future__ import annotations

import time
from typing import Iterable

from kafkalite import errors
from kafkalite.client.structs import (
    NewPartitions,
    NewTopic,
    PartitionDescription,
    TopicDescription,
)
from kafkalite.errors import KafkaError
from kafkalite.protocol.messages import (
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)
from kafkalite.topics import validate_topic_name

__all__ = ["create_topics", "delete_topics", "create_partitions", "describe_topics",
           "describe_topic_configs"]


def create_topics(admin, new_topics: Iterable[NewTopic], timeout_ms: int | None = None,
                  validate_only: bool = False, raise_on_error: bool = True
                  ) -> dict[str, KafkaError | None]:
    """Create topics; waits (up to ``timeout_ms``) until their leaders are elected."""
    topics: dict[str, CreatableTopic] = {}
    for nt in new_topics:
        if isinstance(nt, str):
            nt = NewTopic(nt)
        elif not isinstance(nt, NewTopic):
            nt = NewTopic(*nt)
        validate_topic_name(nt.name)
        if nt.name in topics:
            raise errors.InvalidRequestError(f"topic '{nt.name}' is listed twice")
        topics[nt.name] = creatable(nt)
    if not topics:
        return {}
    timeout_ms = admin.request_timeout_ms if timeout_ms is None else int(timeout_ms)

    def build(names):
        return CreateTopicsRequest(topics=[topics[n] for n in names], timeout_ms=timeout_ms,
                                   validate_only=validate_only)

    results = controller_call(admin, list(topics), build, lambda r: r.topics, timeout_ms)
    if not validate_only:
        _wait_for_leaders(admin, [n for n, error in results.items() if error is None],
                          timeout_ms)
    return finish(results, raise_on_error)


def _wait_for_leaders(admin, names: list[str], timeout_ms: int) -> None:
    """Until the metadata the client is given shows a leader for every partition of ``names``,
    or the timeout passes. The controller answers CreateTopics once its own metadata has the
    leaders; the broker this client asks next may learn of them an UpdateMetadata later (as in
    Kafka), and this is the wait the docstring promises."""
    deadline = time.monotonic() + timeout_ms / 1000
    while names and time.monotonic() < deadline:
        snap = admin._cluster.refresh(topics=names)
        if all(snap.topics.get(name) and all(p.leader >= 0 for p in snap.topics[name].values())
               for name in names):
            break
        time.sleep(admin._retry_backoff)
    admin._cluster.request_update()     # the next call asks again: the cluster has changed


def creatable(nt: NewTopic) -> CreatableTopic:
    configs = {str(k): (None if v is None else str(v))
               for k, v in (nt.topic_configs or {}).items()}
    if nt.replica_assignments:
        assignments = {}
        for p, replicas in nt.replica_assignments.items():
            if type(p) is not int or p < 0:
                raise errors.InvalidReplicaAssignmentError(
                    f"topic '{nt.name}': partition {p!r} is not a non-negative int")
            replicas = [int(b) for b in replicas]
            if not replicas or len(set(replicas)) != len(replicas):
                raise errors.InvalidReplicaAssignmentError(
                    f"topic '{nt.name}': partition {p} has replicas {replicas}; they must "
                    f"be distinct and at least one")
            assignments[p] = replicas
        if sorted(assignments) != list(range(len(assignments))):
            raise errors.InvalidReplicaAssignmentError(
                f"topic '{nt.name}': partitions must be numbered 0..{len(assignments) - 1}")
        return CreatableTopic(nt.name, -1, -1, assignments, configs)
    if type(nt.num_partitions) is not int or nt.num_partitions == 0 \
            or nt.num_partitions < -1:
        raise errors.InvalidPartitionsError(
            f"topic '{nt.name}': num_partitions must be positive (or -1 for the broker's "
            f"default), got {nt.num_partitions!r}")
    if type(nt.replication_factor) is not int or nt.replication_factor == 0 \
            or nt.replication_factor < -1:
        raise errors.InvalidReplicationFactorError(
            f"topic '{nt.name}': replication_factor must be positive (or -1 for the "
            f"broker's default), got {nt.replication_factor!r}")
    return CreatableTopic(nt.name, nt.num_partitions, nt.replication_factor, {}, configs)


def delete_topics(admin, topics: Iterable[str], timeout_ms: int | None = None,
                  raise_on_error: bool = True) -> dict[str, KafkaError | None]:
    """Delete topics; waits (up to ``timeout_ms``) until the controller finished."""
    names = list(dict.fromkeys([topics] if isinstance(topics, str) else topics))
    for name in names:
        validate_topic_name(name)
    if not names:
        return {}
    timeout_ms = admin.request_timeout_ms if timeout_ms is None else int(timeout_ms)

    def build(pending):
        return DeleteTopicsRequest(topic_names=list(pending), timeout_ms=timeout_ms)

    results = controller_call(admin, names, build, lambda r: r.responses, timeout_ms)
    admin._cluster.request_update()
    return finish(results, raise_on_error)


def create_partitions(admin, topic_partitions: dict, timeout_ms: int | None = None,
                      validate_only: bool = False, raise_on_error: bool = True
                      ) -> dict[str, KafkaError | None]:
    """AdminClient.create_partitions (its docstring says what it does and raises)."""
    topics: dict[str, CreatePartitionsTopic] = {}
    for name, new in topic_partitions.items():
        validate_topic_name(name)
        if type(new) is int:
            new = NewPartitions(new)
        elif not isinstance(new, NewPartitions):
            new = NewPartitions(*new)
        if type(new.total_count) is not int or new.total_count < 1:
            raise errors.InvalidPartitionsError(
                f"topic '{name}': total_count must be a positive int, got "
                f"{new.total_count!r}")
        assignments = None
        if new.new_assignments is not None:
            assignments = []
            for replicas in new.new_assignments:
                try:
                    assignments.append([int(b) for b in replicas])
                except (TypeError, ValueError):
                    raise errors.InvalidReplicaAssignmentError(
                        f"topic '{name}': new_assignments must be lists of broker ids, got "
                        f"{new.new_assignments!r}") from None
        topics[name] = CreatePartitionsTopic(name, new.total_count, assignments)
    if not topics:
        return {}
    timeout_ms = admin.request_timeout_ms if timeout_ms is None else int(timeout_ms)

    def build(names):
        return CreatePartitionsRequest(topics=[topics[n] for n in names],
                                       timeout_ms=timeout_ms, validate_only=validate_only)

    results = controller_call(admin, list(topics), build, lambda r: r.results, timeout_ms)
    if not validate_only:
        admin._cluster.request_update()
    return finish(results, raise_on_error)


def controller_call(admin, names: list[str], build, entries, timeout_ms: int) -> dict:
    admin._check_open()
    deadline = time.monotonic() + (timeout_ms + admin.request_timeout_ms) / 1000
    results: dict[str, KafkaError | None] = {}
    pending = list(names)
    last: KafkaError | None = None
    while pending:
        node = None
        try:
            node = controller_or_any(admin)
            conn = admin._pool.get(node)
            conn.request_timeout_ms = admin.request_timeout_ms + max(timeout_ms, 0)
            response = conn.request(build(pending))
        except KafkaError as exc:
            if not exc.retriable:
                raise
            last = exc
            if node is not None:
                admin._pool.drop(node)
            admin._cluster.request_update()
        else:
            retry = []
            for entry in entries(response):
                if entry.name not in pending:
                    continue
                if entry.error_code == 0:
                    results[entry.name] = None
                elif entry.error_code == errors.NotControllerError.code:
                    retry.append(entry.name)
                    last = errors.for_code(entry.error_code, entry.error_message)
                else:
                    results[entry.name] = errors.for_code(entry.error_code,
                                                          entry.error_message)
            for name in pending:
                if name not in results and name not in retry:
                    retry.append(name)
                    last = errors.UnknownServerError(f"no answer for topic '{name}'")
            pending = retry
            if pending:
                admin._cluster.request_update()
        if not pending:
            break
        if time.monotonic() >= deadline:
            for name in pending:
                results[name] = errors.KafkaTimeoutError(
                    f"topic '{name}': no answer from the controller in time"
                    + (f" (last error: {last})" if last else ""))
            break
        time.sleep(admin._retry_backoff)
    return {name: results.get(name) for name in names}


def controller_or_any(admin) -> int:
    snap = admin._cluster.maybe_refresh()
    if snap.controller_id in snap.brokers:
        return snap.controller_id
    if not snap.brokers:
        snap = admin._cluster.refresh()
        if not snap.brokers:
            raise errors.NoBrokersAvailableError("the cluster reports no live brokers")
    return sorted(snap.brokers)[0]


def finish(results: dict, raise_on_error: bool) -> dict:
    if raise_on_error:
        for name, error in results.items():
            if error is not None:
                error.results = results  # type: ignore[attr-defined]
                raise error
    return results


def describe_topics(admin, topics: Iterable[str] | None = None) -> list[TopicDescription]:
    """Partitions, leaders, replicas and ISR of ``topics`` (every topic when None).

    UnknownTopicOrPartitionError if a named topic does not exist.
    """
    admin._check_open()
    names = None if topics is None else list(
        dict.fromkeys([topics] if isinstance(topics, str) else topics))
    for name in names or ():
        validate_topic_name(name)
    snap = admin._cluster.refresh(topics=names)
    out = []
    for name in (sorted(snap.topics) if names is None else names):
        code = snap.topic_errors.get(name, 0)
        parts = snap.topics.get(name)
        if parts is None:
            if code in (0, errors.UnknownTopicOrPartitionError.code):
                raise errors.UnknownTopicOrPartitionError(f"topic '{name}' does not exist")
            raise errors.for_code(code, f"describing topic '{name}'")
        out.append(TopicDescription(name, [
            PartitionDescription(p.partition, p.leader, list(p.replicas), list(p.isr),
                                 list(p.offline_replicas), p.leader_epoch, p.error_code)
            for p in sorted(parts.values(), key=lambda m: m.partition)], code,
            snap.topic_ids.get(name)))
    return out


def describe_topic_configs(admin, topics: Iterable[str]) -> dict[str, dict[str, str]]:
    """``{topic: {name: value}}``: each topic's config overrides, asked of a broker
    (DescribeConfigs; brokers read ``/config/topics/<t>``), so no ZooKeeper access is needed.
    UnknownTopicOrPartitionError for a topic that does not exist."""
    from kafkalite.protocol.messages import (
        CONFIG_RESOURCE_TOPIC,
        DescribeConfigsRequest,
        DescribeConfigsResource,
    )

    names = list(dict.fromkeys([topics] if isinstance(topics, str) else topics))
    for name in names:
        validate_topic_name(name)
    if not names:
        return {}
    request = DescribeConfigsRequest(resources=[
        DescribeConfigsResource(CONFIG_RESOURCE_TOPIC, n) for n in names])
    response = admin._any_broker_request(request)
    out: dict[str, dict[str, str]] = {}
    for result in response.results:
        if result.resource_name not in names:
            continue
        if result.error_code:
            raise errors.for_code(result.error_code, result.error_message
                                  or f"describing the config of topic "
                                     f"'{result.resource_name}'")
        # the overrides: entries whose source is the topic's own config (not the brokers')
        out[result.resource_name] = {e.name: e.value for e in result.configs
                                     if e.config_source == 1 and e.value is not None}
    missing = [n for n in names if n not in out]
    if missing:
        raise errors.UnknownServerError(f"no config returned for topic(s) {missing}")
    return {n: dict(sorted(out[n].items())) for n in names}
