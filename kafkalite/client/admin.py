"""The admin client: create, delete, list and describe topics; describe the cluster.

Blocking and NOT thread-safe (one thread at a time). Topic names are checked client-side first
(InvalidTopicError naming the rule broken). CreateTopics and DeleteTopics go to the controller
(any broker when none is known), and are retried on NOT_CONTROLLER and lost connections until the
operation's timeout.

Results of ``create_topics`` / ``delete_topics``: a dict ``{topic: None | KafkaError}`` in the
order given. By default (``raise_on_error=True``) the first failed topic's error is raised
instead, with the whole dict attached as ``exc.results`` -- so ``create_topics([...])`` either
returns (everything succeeded) or raises, e.g. TopicAlreadyExistsError.
"""

from __future__ import annotations

import time
from typing import Iterable

from kafkalite import errors
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import DEFAULT_CLIENT_ID
from kafkalite.client.structs import (
    ClusterDescription,
    NewTopic,
    PartitionDescription,
    TopicDescription,
)
from kafkalite.errors import KafkaError
from kafkalite.protocol.messages import (
    CreatableTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)
from kafkalite.topics import validate_topic_name

__all__ = ["AdminClient"]


class AdminClient:
    """Topic and cluster administration over the Kafka protocol."""

    def __init__(self, bootstrap_servers=None, *, zookeeper=None,
                 client_id: str | None = None, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = 100):
        if bootstrap_servers is None:
            if zookeeper is not None:
                raise errors.ConfigError(
                    "AdminClient through ZooKeeper alone is not available in this version of "
                    "the client; pass bootstrap_servers")
            bootstrap_servers = "localhost:9092"
        self.zookeeper = zookeeper     # kept for ZooKeeper-backed operations (groups, configs)
        self.request_timeout_ms = request_timeout_ms
        self._retry_backoff = retry_backoff_ms / 1000
        self._cluster = ClusterMetadata(bootstrap_servers,
                                        client_id=client_id or DEFAULT_CLIENT_ID,
                                        request_timeout_ms=request_timeout_ms,
                                        retry_backoff_ms=retry_backoff_ms,
                                        allow_auto_topic_creation=False)
        self._pool = self._cluster.pool()
        self._closed = False

    # --- topics -----------------------------------------------------------------------------
    def create_topics(self, new_topics: Iterable[NewTopic], timeout_ms: int | None = None,
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
            topics[nt.name] = self._creatable(nt)
        if not topics:
            return {}
        timeout_ms = self.request_timeout_ms if timeout_ms is None else int(timeout_ms)

        def build(names):
            return CreateTopicsRequest(topics=[topics[n] for n in names], timeout_ms=timeout_ms,
                                       validate_only=validate_only)

        results = self._controller_call(list(topics), build, lambda r: r.topics, timeout_ms)
        if not validate_only:
            self._cluster.request_update()
        return self._finish(results, raise_on_error)

    @staticmethod
    def _creatable(nt: NewTopic) -> CreatableTopic:
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

    def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None,
                      raise_on_error: bool = True) -> dict[str, KafkaError | None]:
        """Delete topics; waits (up to ``timeout_ms``) until the controller finished."""
        names = list(dict.fromkeys([topics] if isinstance(topics, str) else topics))
        for name in names:
            validate_topic_name(name)
        if not names:
            return {}
        timeout_ms = self.request_timeout_ms if timeout_ms is None else int(timeout_ms)

        def build(pending):
            return DeleteTopicsRequest(topic_names=list(pending), timeout_ms=timeout_ms)

        results = self._controller_call(names, build, lambda r: r.responses, timeout_ms)
        self._cluster.request_update()
        return self._finish(results, raise_on_error)

    def _controller_call(self, names: list[str], build, entries, timeout_ms: int) -> dict:
        self._check_open()
        deadline = time.monotonic() + (timeout_ms + self.request_timeout_ms) / 1000
        results: dict[str, KafkaError | None] = {}
        pending = list(names)
        last: KafkaError | None = None
        while pending:
            node = None
            try:
                node = self._controller_or_any()
                conn = self._pool.get(node)
                conn.request_timeout_ms = self.request_timeout_ms + max(timeout_ms, 0)
                response = conn.request(build(pending))
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                last = exc
                if node is not None:
                    self._pool.drop(node)
                self._cluster.request_update()
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
                    self._cluster.request_update()
            if not pending:
                break
            if time.monotonic() >= deadline:
                for name in pending:
                    results[name] = errors.KafkaTimeoutError(
                        f"topic '{name}': no answer from the controller in time"
                        + (f" (last error: {last})" if last else ""))
                break
            time.sleep(self._retry_backoff)
        return {name: results.get(name) for name in names}

    def _controller_or_any(self) -> int:
        snap = self._cluster.maybe_refresh()
        if snap.controller_id in snap.brokers:
            return snap.controller_id
        if not snap.brokers:
            snap = self._cluster.refresh()
            if not snap.brokers:
                raise errors.NoBrokersAvailableError("the cluster reports no live brokers")
        return sorted(snap.brokers)[0]

    @staticmethod
    def _finish(results: dict, raise_on_error: bool) -> dict:
        if raise_on_error:
            for name, error in results.items():
                if error is not None:
                    error.results = results  # type: ignore[attr-defined]
                    raise error
        return results

    def list_topics(self) -> list[str]:
        """Every topic name, sorted."""
        self._check_open()
        return sorted(self._cluster.refresh(topics=None).topics)

    def describe_topics(self, topics: Iterable[str] | None = None) -> list[TopicDescription]:
        """Partitions, leaders, replicas and ISR of ``topics`` (every topic when None).

        UnknownTopicOrPartitionError if a named topic does not exist.
        """
        self._check_open()
        names = None if topics is None else list(
            dict.fromkeys([topics] if isinstance(topics, str) else topics))
        for name in names or ():
            validate_topic_name(name)
        snap = self._cluster.refresh(topics=names)
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
                for p in sorted(parts.values(), key=lambda m: m.partition)], code))
        return out

    def describe_cluster(self) -> ClusterDescription:
        self._check_open()
        snap = self._cluster.refresh(topics=[])
        return ClusterDescription(snap.cluster_id, snap.controller_id,
                                  sorted(snap.brokers.values()))

    # --- lifecycle --------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise errors.IllegalStateError("the admin client is closed")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.close()
            self._cluster.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
