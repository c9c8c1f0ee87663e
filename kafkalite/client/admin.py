"""The admin client: create, delete, list and describe topics; describe the cluster.

Blocking and NOT thread-safe (one thread at a time). Topic names are checked client-side first
(InvalidTopicError naming the rule broken). CreateTopics and DeleteTopics go to the controller
(any broker when none is known), and are retried on NOT_CONTROLLER and lost connections until the
operation's timeout.

Results of ``create_topics`` / ``delete_topics``: a dict ``{topic: None | KafkaError}`` in the
order given. By default (``raise_on_error=True``) the first failed topic's error is raised
instead, with the whole dict attached as ``exc.results`` -- so ``create_topics([...])`` either
returns (everything succeeded) or raises, e.g. TopicAlreadyExistsError.

What needs ZooKeeper (``zookeeper=``): the brokers serve topics, partitions, leaders, ISR, topic
ids (Metadata), config overrides (DescribeConfigs), creation and deletion, and consumer groups
of their group coordinator (``admin_groups``), so those work with ``bootstrap_servers`` alone.
ZooKeeper-era (Kafka 0.8) consumer groups, changing config overrides, topics marked for
deletion, preferred elections and reassignments go through ZooKeeper, as in Kafka's
ZooKeeper-era tools; without ``zookeeper=`` they raise ConfigError.
"""

from __future__ import annotations

import time
from typing import Iterable, NamedTuple

from kafkalite import errors
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import DEFAULT_CLIENT_ID
from kafkalite.client.structs import (
    ClusterDescription,
    NewPartitions,
    NewTopic,
    PartitionDescription,
    TopicDescription,
    TopicPartition,
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
from kafkalite.security.settings import ClientSecurity

__all__ = ["AdminClient", "ConsumerGroupPartition"]


class AdminClient:
    """Topic and cluster administration over the Kafka protocol."""

    def __init__(self, bootstrap_servers=None, *, zookeeper=None,
                 client_id: str | None = None, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = 100, **security_options):
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
                                        allow_auto_topic_creation=False,
                                        security=ClientSecurity.from_kwargs(**security_options))
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

    def create_partitions(self, topic_partitions: dict, timeout_ms: int | None = None,
                          validate_only: bool = False, raise_on_error: bool = True
                          ) -> dict[str, KafkaError | None]:
        """Add partitions to existing topics: ``{topic: NewPartitions(total_count,
        new_assignments=None)}`` (a bare int is taken as the total count). Waits (up to
        ``timeout_ms``) until every partition of those topics has a leader.

        Per topic: InvalidPartitionsError when ``total_count`` is not more than the topic has,
        InvalidReplicaAssignmentError for assignments that name unknown brokers, are not one list
        per added partition, or differ from the topic's replication factor,
        UnknownTopicOrPartitionError for a missing topic, RequestTimedOutError when the
        partitions were added but their leaders were not elected in time.
        """
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
        timeout_ms = self.request_timeout_ms if timeout_ms is None else int(timeout_ms)

        def build(names):
            return CreatePartitionsRequest(topics=[topics[n] for n in names],
                                           timeout_ms=timeout_ms, validate_only=validate_only)

        results = self._controller_call(list(topics), build, lambda r: r.results, timeout_ms)
        if not validate_only:
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
                for p in sorted(parts.values(), key=lambda m: m.partition)], code,
                snap.topic_ids.get(name)))
        return out

    def topic_ids(self, topics: Iterable[str] | None = None) -> dict[str, str | None]:
        """``{topic: topic id}`` from the brokers' Metadata (every topic when None); topics
        that do not exist are left out, a topic without an id maps to None."""
        self._check_open()
        names = None if topics is None else list(
            dict.fromkeys([topics] if isinstance(topics, str) else topics))
        snap = self._cluster.refresh(topics=names)
        return {t: snap.topic_ids.get(t)
                for t in (sorted(snap.topics) if names is None else names) if t in snap.topics}

    def describe_topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
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
        response = self._any_broker_request(request)
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

    def _any_broker_request(self, request):
        """Send ``request`` to the controller or, failing that, to any live broker; retriable
        failures move on to the next broker until the request timeout."""
        self._check_open()
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        last: KafkaError | None = None
        while True:
            snap = self._cluster.maybe_refresh()
            if not snap.brokers:
                snap = self._cluster.refresh()
            order = sorted(snap.brokers, key=lambda b: (b != snap.controller_id, b))
            for node in order:
                try:
                    return self._pool.get(node).request(request)
                except KafkaError as exc:
                    if not exc.retriable:
                        raise
                    last = exc
                    self._pool.drop(node)
            self._cluster.request_update()
            if time.monotonic() >= deadline:
                raise last or errors.NoBrokersAvailableError("the cluster reports no live "
                                                             "brokers")
            time.sleep(self._retry_backoff)

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

    # --- ZooKeeper-backed administration: consumer groups, topic configs, admin paths --------
    # Kafka's ZooKeeper-era tools did these through ZooKeeper, and so does kafkalite: group
    # membership and offsets live in /consumers, topic overrides in /config/topics, and requests
    # to the controller in /admin/*. They need ``zookeeper=`` (the brokers' zookeeper.connect).

    def _zk(self):
        """This client's ZooKeeper session (opened on first use; see ``close_zookeeper``)."""
        zk = self.__dict__.get("_zk_session")
        if zk is not None:
            return zk
        self._check_open()
        if self.zookeeper is None:
            raise errors.ConfigError(
                "this operation goes through ZooKeeper: create the AdminClient with "
                "zookeeper='host:2181/chroot' (the brokers' zookeeper.connect)")
        import weakref

        import zk_schema
        from kafkalite.zk.znode_acls import secure_zk_client
        from kafkalite.zk.client import split_connect_string
        from kafkalite.zk.errors import ZkConnectionLossError

        hosts, chroot = split_connect_string(self.zookeeper)
        timeout_s = 10

        def call(fn, *args):
            try:
                return fn(*args)
            except ZkConnectionLossError:
                raise errors.ZooKeeperError(
                    f"cannot reach ZooKeeper at {hosts} within {timeout_s} s") from None
            except KafkaError as exc:
                raise errors.ZooKeeperError(f"ZooKeeper at {hosts}: {exc}") from None

        # look before connecting with the chroot: a mistyped chroot must not get created
        zk = secure_zk_client(hosts, session_timeout_ms=10000, connection_timeout_s=timeout_s)
        try:
            call(zk.start)
            has_cluster = call(zk.exists, chroot + zk_schema.BROKER_IDS_PATH)
        except BaseException:
            zk.stop()
            raise
        if chroot or not has_cluster:
            zk.stop()
        if not has_cluster:
            raise errors.ConfigError(
                f"no kafkalite cluster in ZooKeeper {self.zookeeper} (no "
                f"{zk_schema.BROKER_IDS_PATH}); is the chroot right?")
        if chroot:
            zk = secure_zk_client(self.zookeeper, session_timeout_ms=10000,
                                  connection_timeout_s=timeout_s)
            call(zk.start)
        self._zk_session = zk
        self._zk_finalizer = weakref.finalize(self, zk.stop)
        return zk

    def connect_zookeeper(self) -> None:
        """Open the ZooKeeper session now, so a wrong address or chroot fails here (ZooKeeperError,
        ConfigError) rather than at the first ZooKeeper-backed call."""
        self._zk()

    def close_zookeeper(self) -> None:
        """Close the ZooKeeper session of the ZooKeeper-backed methods (if one was opened)."""
        finalizer = self.__dict__.pop("_zk_finalizer", None)
        self.__dict__.pop("_zk_session", None)
        if finalizer is not None:
            finalizer()

    def _zk_assignments(self, topics: Iterable[str]) -> dict:
        """{topic: TopicAssignment} from ZooKeeper; UnknownTopicOrPartitionError for a missing
        one."""
        names = list(dict.fromkeys(topics))
        for name in names:
            validate_topic_name(name)
        found = self._zk().get_topic_assignments(names)
        for name in names:
            if name not in found:
                raise errors.UnknownTopicOrPartitionError(f"topic '{name}' does not exist")
        return found

    @staticmethod
    def _check_group_name(group) -> str:
        import zk_schema

        if not isinstance(group, str) or not group:
            raise errors.InvalidRequestError(f"group id must be a non-empty string, got "
                                             f"{group!r}")
        try:
            zk_schema.consumers.group_path(group)
        except zk_schema.SchemaError as exc:
            raise errors.InvalidRequestError(f"bad group id {group!r}: {exc}") from None
        return group

    def _require_group(self, group) -> None:
        self._check_group_name(group)
        if not self._zk().consumer_group_exists(group):
            raise errors.GroupIdNotFoundError(f"consumer group '{group}' does not exist")

    def _list_offsets(self, tps: Iterable, timestamp: int, timeout_s: float | None = None,
                      raise_missing: bool = False) -> dict[TopicPartition, int]:
        """``{tp: offset}`` by ListOffsets to the leaders (-1 latest = the high watermark, -2
        earliest). Partitions of unknown topics are left out at once; partitions without a
        leader are retried until the timeout, then left out (or raised with
        ``raise_missing``)."""
        from kafkalite.protocol.messages import (
            ListOffsetsPartition,
            ListOffsetsRequest,
            ListOffsetsTopic,
        )

        pending = list(dict.fromkeys(TopicPartition(*tp) for tp in tps))
        found: dict[TopicPartition, int] = {}
        if not pending:
            return found
        timeout_s = self.request_timeout_ms / 1000 if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        last: KafkaError | None = None
        unknown: list[TopicPartition] = []
        while True:
            snap = self._cluster.refresh(topics=sorted({tp.topic for tp in pending}))
            by_node: dict[int, dict[str, list]] = {}
            for tp in pending:
                parts = snap.topics.get(tp.topic)
                if parts is None or tp.partition not in parts:
                    unknown.append(tp)
                    continue
                node = snap.leader_for(tp.topic, tp.partition)
                if node is not None:
                    by_node.setdefault(node, {}).setdefault(tp.topic, []).append(
                        ListOffsetsPartition(tp.partition, timestamp))
            for node, topics in by_node.items():
                request = ListOffsetsRequest(topics=[ListOffsetsTopic(t, ps)
                                                     for t, ps in topics.items()])
                try:
                    response = self._pool.get(node).request(request)
                except KafkaError as exc:
                    if not exc.retriable:
                        raise
                    last = exc
                    self._pool.drop(node)
                    continue
                for t in response.topics:
                    for p in t.partitions:
                        if p.error_code == 0:
                            found[TopicPartition(t.topic, p.partition)] = p.offset
                            continue
                        exc = errors.for_code(p.error_code,
                                              f"listing offsets of {t.topic}-{p.partition}")
                        if not exc.retriable:
                            raise exc
                        last = exc
            pending = [tp for tp in pending if tp not in found and tp not in unknown]
            if not pending or time.monotonic() >= deadline:
                break
            time.sleep(self._retry_backoff)
        if raise_missing and (pending or unknown):
            missing = ", ".join(str(tp) for tp in pending + unknown)
            raise errors.KafkaTimeoutError(
                f"could not read the offsets of {missing}"
                + (f" (last error: {last})" if last else "")
                + "; do these partitions exist and have a live leader?")
        return found

    # consumer groups, both generations (admin_groups): the brokers' coordinator groups always,
    # ZooKeeper groups when this client has zookeeper=; ``kind`` ("coordinator" or "zookeeper")
    # chooses one, None means both for listings and, for one group, its ZooKeeper kind when it
    # exists there (this client having zookeeper=), else its coordinator kind.
    def list_consumer_groups(self, kind: str | None = None) -> list:
        """Every consumer group, sorted: ``ConsumerGroupListing`` values, which are the group
        names (``str``) carrying ``kind``, ``protocol_type`` and ``state``."""
        from kafkalite.client import admin_groups as ag

        kind = ag.check_kind(kind)
        found = []
        if kind in (None, ag.COORDINATOR):
            found += ag.list_coordinator_groups(self)
        if kind == ag.ZOOKEEPER or (kind is None and self.zookeeper is not None):
            found += [ag.ConsumerGroupListing(name, ag.ZOOKEEPER)
                      for name in self._zk().list_consumer_groups()]
        return sorted(found, key=lambda g: (str(g), g.kind))

    def _group_kind(self, group: str, kind: str | None) -> str:
        from kafkalite.client import admin_groups as ag

        if ag.check_kind(kind) is not None:
            return kind
        if self.zookeeper is not None:
            import zk_schema

            try:
                if self._zk().consumer_group_exists(group):
                    return ag.ZOOKEEPER
            except zk_schema.SchemaError:     # not a valid ZooKeeper group name
                return ag.COORDINATOR
        return ag.COORDINATOR

    def describe_consumer_group(self, group: str, kind: str | None = None
                                ) -> list[ConsumerGroupPartition]:
        """One row per partition: committed offset, log end offset (the high watermark, from
        the leaders), lag, and the owning member (with its host and client id where the kind
        knows them); then one row per live member that owns nothing (topic and partition
        None). Missing values are None; each row says its ``kind``.

        Coordinator groups: the members' assigned partitions and every committed partition.
        ZooKeeper groups: the partitions of the topics the group committed offsets for, owns,
        or subscribes to. GroupIdNotFoundError if the group does not exist.
        """
        from kafkalite.client import admin_groups as ag

        if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR:
            return ag.describe_coordinator_group_offsets(self, group, ConsumerGroupPartition)
        return self._describe_zookeeper_group(group)

    def describe_consumer_groups(self, groups: Iterable[str], kind: str | None = None) -> list:
        """``ConsumerGroupDescription`` of each group (Kafka's describeConsumerGroups): state,
        assignment strategy, coordinator, members with their client ids, hosts and partitions.
        A coordinator group that does not exist is described as Dead, as Kafka does."""
        from kafkalite.client import admin_groups as ag

        out = []
        for group in groups:
            if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR:
                out.append(ag.describe_coordinator_group(self, group))
                continue
            self._require_group(group)
            zk = self._zk()
            registrations = zk.get_consumer_registrations(group)
            owned: dict[str, list[TopicPartition]] = {member: [] for member in registrations}
            from zk_schema.consumers import PartitionOwner

            for (topic, partition), owner in sorted(zk.get_partition_owners(group).items()):
                member = PartitionOwner(owner).member_id
                owned.setdefault(member, []).append(TopicPartition(topic, partition))
            members = [ag.MemberDescription(member, None, None, _member_host(group, member),
                                            tps) for member, tps in sorted(owned.items())]
            out.append(ag.ConsumerGroupDescription(
                group, ag.ZOOKEEPER, "Stable" if registrations else "Empty", "consumer", "",
                None, members))
        return out

    def list_consumer_group_offsets(self, group: str, partitions=None,
                                    kind: str | None = None) -> dict:
        """``{TopicPartition: OffsetAndMetadata}`` the group committed (kafka-python's
        name)."""
        from kafkalite.client import admin_groups as ag
        from kafkalite.client.structs import OffsetAndMetadata

        if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR:
            return ag.fetch_committed(self, group, partitions)
        self._require_group(group)
        stored = self._zk().get_consumer_offsets(group)
        wanted = None if partitions is None else {(tp[0], tp[1]) for tp in partitions}
        return {TopicPartition(t, p): OffsetAndMetadata(off, "")
                for (t, p), off in sorted(stored.items()) if wanted is None or (t, p) in wanted}

    def consumer_group_members(self, group: str, kind: str | None = None) -> list[str]:
        """The live members of ``group``, sorted (ZooKeeper: its ``/consumers/<g>/ids``)."""
        from kafkalite.client import admin_groups as ag

        if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR:
            return sorted(x.member_id for x in ag.describe_coordinator_group(self, group).members)
        self._check_group_name(group)
        return sorted(self._zk().get_consumer_members(group))

    def delete_consumer_group(self, group: str, kind: str | None = None) -> None:
        """Remove a group and its committed offsets. NonEmptyGroupError while it has live
        members, GroupIdNotFoundError if it does not exist."""
        from kafkalite.client import admin_groups as ag

        if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR:
            error = ag.delete_coordinator_groups(self, [group])[group]
            if error is not None:
                raise error
            return
        self._require_group(group)
        try:
            self._zk().delete_consumer_group(group)
        except errors.NonEmptyGroupError:
            raise errors.NonEmptyGroupError(
                f"consumer group '{group}' has live members; stop its consumers before "
                f"deleting it") from None

    def delete_consumer_group_offsets(self, group: str, partitions) -> dict:
        """Delete a coordinator group's committed offsets of ``partitions`` (OffsetDelete;
        refused for topics the group still consumes): ``{tp: None | KafkaError}``."""
        from kafkalite.client import admin_groups as ag

        return ag.delete_coordinator_offsets(self, self._check_group_id(group), partitions)

    def reset_consumer_group_offsets(self, group: str, topic=None, *, partitions=None,
                                     to_earliest: bool = False, to_latest: bool = False,
                                     to_offset: int | None = None, shift_by: int | None = None,
                                     execute: bool = False,
                                     kind: str | None = None) -> dict[TopicPartition, int]:
        """Plan (and with ``execute=True`` write) new committed offsets for ``group``.

        ``topic``: a name, a list of names, or None for every topic the group committed offsets
        for; ``partitions`` (with one topic) restricts the partitions. Exactly one strategy:
        ``to_earliest``, ``to_latest``, ``to_offset`` (clamped into the log's range, as Kafka
        does) or ``shift_by`` (from the committed offset, clamped). Refused with
        NonEmptyGroupError while the group has live members (a coordinator group: unless it is
        Empty or Dead, with Kafka's message). Returns ``{tp: new offset}``.
        """
        from kafkalite.client import admin_groups as ag

        strategies = [to_earliest, to_latest, to_offset is not None, shift_by is not None]
        if sum(bool(s) for s in strategies) != 1:
            raise errors.InvalidRequestError(
                "give exactly one of to_earliest, to_latest, to_offset, shift_by")
        kind = self._group_kind(self._check_group_id(group), kind)
        if kind == ag.COORDINATOR:
            def refuse():
                ag.refuse_active_coordinator_group(self, group)
            refuse()
            committed = {(tp.topic, tp.partition): om.offset
                         for tp, om in ag.fetch_committed(self, group).items()}
            partitions_of = self._metadata_partitions

            def write(plan):
                ag.commit_coordinator_offsets(self, group, plan)
        else:
            self._check_group_name(group)
            zk = self._zk()

            def refuse():
                self._refuse_active_group(group)
            refuse()
            committed = zk.get_consumer_offsets(group)

            def partitions_of(names):
                return {t: sorted(a.partitions)
                        for t, a in self._zk_assignments(names).items()}

            def write(plan):
                zk.set_consumer_offsets(group, {(tp.topic, tp.partition): off
                                                for tp, off in plan.items()})
        if topic is None:
            topics = sorted({t for t, _ in committed})
            if not topics:
                raise errors.GroupIdNotFoundError(
                    f"consumer group '{group}' has no committed offsets; name the topic(s) to "
                    f"reset")
        else:
            topics = [topic] if isinstance(topic, str) else list(dict.fromkeys(topic))
        known = partitions_of(topics)
        tps: list[TopicPartition] = []
        if partitions is not None:
            if len(topics) != 1:
                raise errors.InvalidRequestError("partitions can only be given with one topic")
            have = known[topics[0]]
            for p in partitions:
                if p not in have:
                    raise errors.UnknownTopicOrPartitionError(
                        f"topic '{topics[0]}' has no partition {p} (it has 0..{len(have) - 1})")
                tps.append(TopicPartition(topics[0], int(p)))
        else:
            for t in topics:
                tps += [TopicPartition(t, p) for p in known[t]]
        earliest = self._list_offsets(tps, -2, raise_missing=True)
        latest = self._list_offsets(tps, -1, raise_missing=True)
        plan: dict[TopicPartition, int] = {}
        for tp in tps:
            low, high = earliest[tp], latest[tp]
            if to_earliest:
                target = low
            elif to_latest:
                target = high
            elif to_offset is not None:
                target = int(to_offset)
            else:
                current = committed.get((tp.topic, tp.partition))
                if current is None:
                    raise errors.InvalidRequestError(
                        f"cannot shift the offset of {tp}: the group has no committed offset "
                        f"there; use to_earliest, to_latest or to_offset for it")
                target = current + int(shift_by)
            plan[tp] = min(max(target, low), high)
        if execute:
            refuse()
            write(plan)
        return plan

    def _metadata_partitions(self, topics: list[str]) -> dict[str, list[int]]:
        """``{topic: sorted partition ids}`` from the brokers; UnknownTopicOrPartitionError
        naming a topic that does not exist."""
        for name in topics:
            validate_topic_name(name)
        snap = self._cluster.refresh(topics=list(topics))
        out = {}
        for name in topics:
            if name not in snap.topics:
                raise errors.UnknownTopicOrPartitionError(f"topic '{name}' does not exist")
            out[name] = sorted(snap.topics[name])
        return out

    @staticmethod
    def _check_group_id(group) -> str:
        if not isinstance(group, str) or not group:
            raise errors.InvalidRequestError(f"group id must be a non-empty string, got "
                                             f"{group!r}")
        return group

    def _describe_zookeeper_group(self, group: str) -> list[ConsumerGroupPartition]:
        import re

        from zk_schema.consumers import PartitionOwner

        self._require_group(group)
        zk = self._zk()
        registrations = zk.get_consumer_registrations(group)
        owners = zk.get_partition_owners(group)
        offsets = zk.get_consumer_offsets(group)
        topics = {t for t, _ in offsets} | {t for t, _ in owners}
        all_topics = None
        for registration in registrations.values():
            if registration.pattern == "static":
                topics |= set(registration.subscription)
            else:
                if all_topics is None:
                    all_topics = zk.list_topics()
                patterns = [re.compile(p) for p in registration.subscription]
                topics |= {t for t in all_topics if any(p.fullmatch(t) for p in patterns)}
        assignments = zk.get_topic_assignments(sorted(topics))
        tps = set(offsets) | set(owners)
        for topic, assignment in assignments.items():
            tps |= {(topic, p) for p in assignment.partitions}
        tps = sorted(tps)
        ends = self._list_offsets(tps, -1, timeout_s=min(5.0, self.request_timeout_ms / 1000))
        rows = []
        owning = set()
        for topic, partition in tps:
            current = offsets.get((topic, partition))
            end = ends.get(TopicPartition(topic, partition))
            lag = end - current if current is not None and end is not None else None
            owner = owners.get((topic, partition))
            member = PartitionOwner(owner).member_id if owner else None
            owning.add(member)
            rows.append(ConsumerGroupPartition(
                group, topic, partition, current, end, lag, member,
                _member_host(group, member) if member else None, None))
        for member in sorted(registrations):
            if member not in owning:
                rows.append(ConsumerGroupPartition(group, None, None, None, None, None, member,
                                                   _member_host(group, member), None))
        return rows

    def _refuse_active_group(self, group: str) -> None:
        members = self._zk().get_consumer_members(group)
        if members:
            shown = ", ".join(members[:3]) + (", ..." if len(members) > 3 else "")
            raise errors.NonEmptyGroupError(
                f"consumer group '{group}' has {len(members)} live member(s) ({shown}); "
                f"offsets can only be reset while the group is inactive: stop its consumers "
                f"first")

    # topic configs: read through a broker (DescribeConfigs), changed in ZooKeeper
    def describe_topic_config(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (``/config/topics/<t>``, read by a broker: see
        ``describe_topic_configs``); {} when it has none."""
        return self.describe_topic_configs([topic])[topic]

    def alter_topic_config(self, topic: str, configs: dict) -> dict[str, str]:
        """Set (value) or remove (None) topic config overrides, validated against the topic
        config table (ConfigError naming the key), then announce the change to the brokers.
        Returns the topic's overrides afterwards."""
        from kafkalite.config import TOPIC_BY_NAME, TopicConfig

        if self.zookeeper is None:
            return self._alter_topic_config_through_brokers(topic, configs)
        self._zk_assignments([topic])
        zk = self._zk()
        merged = dict(zk.get_topic_config(topic))
        for key, value in configs.items():
            key = str(key)
            if value is None:
                if key not in TOPIC_BY_NAME:
                    raise errors.ConfigError(f"unknown configuration {key!r}")
                merged.pop(key, None)
            else:
                merged[key] = str(value)
        TopicConfig.from_dict(merged)
        zk.set_topic_config(topic, merged)
        return dict(sorted(merged.items()))

    def _alter_topic_config_through_brokers(self, topic: str, configs: dict) -> dict[str, str]:
        """IncrementalAlterConfigs SET/DELETE on a broker, which writes /config/topics/<t>
        itself: the way Kafka's tools alter configs with only --bootstrap-server."""
        from kafkalite.client.admin_configs import AlterConfigOp, ConfigResource

        ops = [AlterConfigOp(str(k), "DELETE" if v is None else "SET",
                             None if v is None else str(v)) for k, v in configs.items()]
        self.incremental_alter_configs({ConfigResource("TOPIC", topic): ops})
        return self.describe_topic_config(topic)

    def list_topics_marked_for_deletion(self) -> list[str]:
        """Topics waiting for the controller to delete them (``/admin/delete_topics``)."""
        return sorted(self._zk().topics_marked_for_deletion())

    # controller requests through /admin
    def elect_preferred_leaders(self, partitions=None, timeout_ms: int | None = None
                                ) -> dict[TopicPartition, KafkaError | None]:
        """Ask the controller to move leadership to each partition's preferred (first) replica
        (``/admin/preferred_replica_election``) and wait up to ``timeout_ms`` for it.

        ``partitions``: ``(topic, partition)`` pairs, or None for every partition. Result per
        partition: None (elected), ElectionNotNeededError (the preferred replica already led;
        not sent), PreferredLeaderNotAvailableError (not live or not in the ISR), or
        KafkaTimeoutError (the controller did not finish in time; 0 = do not wait).
        """
        import zk_schema
        from kafkalite.zk.errors import ZkNodeExistsError

        zk = self._zk()
        if partitions is None:
            assignments = zk.get_topic_assignments()
            tps = [TopicPartition(t, p) for t, a in sorted(assignments.items())
                   for p in sorted(a.partitions)]
        else:
            tps = list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))
            assignments = self._zk_assignments([tp.topic for tp in tps])
            for tp in tps:
                if tp.partition not in assignments[tp.topic].partitions:
                    raise errors.UnknownTopicOrPartitionError(f"partition {tp} does not exist")
        preferred = {tp: assignments[tp.topic].partitions[tp.partition][0] for tp in tps}
        states = zk.get_partition_states(tps)
        results: dict[TopicPartition, KafkaError | None] = {}
        todo = []
        for tp in tps:
            state = states.get(tp)
            if state is not None and state.leader == preferred[tp]:
                results[tp] = errors.ElectionNotNeededError(
                    f"{tp}: its preferred replica {preferred[tp]} already leads")
            else:
                todo.append(tp)
        if todo:
            try:
                zk.create_preferred_replica_election((tp.topic, tp.partition) for tp in todo)
            except ZkNodeExistsError:
                raise errors.IllegalStateError(
                    f"a preferred replica election is already in progress "
                    f"({zk_schema.PREFERRED_REPLICA_ELECTION_PATH} exists); try again once the "
                    f"controller finished it") from None
            timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
            deadline = time.monotonic() + timeout_ms / 1000
            pending = timeout_ms > 0
            while pending and time.monotonic() < deadline:
                pending = zk.preferred_replica_election_pending()
                if pending:
                    time.sleep(0.05)
            states = zk.get_partition_states(todo)
            for tp in todo:
                state = states.get(tp)
                if state is not None and state.leader == preferred[tp]:
                    results[tp] = None
                elif pending or timeout_ms <= 0:
                    results[tp] = errors.KafkaTimeoutError(
                        f"{tp}: the controller has not acted on the election request yet "
                        f"(still queued in {zk_schema.PREFERRED_REPLICA_ELECTION_PATH})")
                else:
                    isr = list(state.isr) if state is not None else []
                    results[tp] = errors.PreferredLeaderNotAvailableError(
                        f"{tp}: preferred replica {preferred[tp]} is not live or not in the "
                        f"ISR {isr}")
        return {tp: results[tp] for tp in tps}

    def alter_partition_reassignments(self, reassignments: dict
                                      ) -> dict[TopicPartition, list[int]]:
        """Start moving partitions to new replica lists (``{(topic, partition): [broker
        ids]}``) through ``/admin/reassign_partitions``; the controller does the rest. Returns
        the current replica lists of those partitions (what a rollback would restore).

        InvalidReplicaAssignmentError for an empty or repeating list or an unknown broker,
        UnknownTopicOrPartitionError for a missing partition, IllegalStateError while another
        reassignment is still running.
        """
        import zk_schema
        from kafkalite.zk.errors import ZkNodeExistsError

        targets: dict[TopicPartition, list[int]] = {}
        for tp, replicas in reassignments.items():
            tp = TopicPartition(*tp)
            try:
                replicas = [int(b) for b in replicas]
            except (TypeError, ValueError):
                raise errors.InvalidReplicaAssignmentError(
                    f"{tp}: replicas must be broker ids, got {replicas!r}") from None
            if not replicas or len(set(replicas)) != len(replicas):
                raise errors.InvalidReplicaAssignmentError(
                    f"{tp}: the replica list {replicas} must be non-empty without repeats")
            targets[tp] = replicas
        if not targets:
            raise errors.InvalidReplicaAssignmentError("the reassignment lists no partitions")
        assignments = self._zk_assignments([tp.topic for tp in targets])
        current = {}
        for tp in targets:
            replicas = assignments[tp.topic].partitions.get(tp.partition)
            if replicas is None:
                raise errors.UnknownTopicOrPartitionError(f"partition {tp} does not exist")
            current[tp] = list(replicas)
        zk = self._zk()
        brokers = set(zk.get_broker_ids())
        unknown = sorted({b for r in targets.values() for b in r} - brokers)
        if unknown:
            raise errors.InvalidReplicaAssignmentError(
                f"the reassignment names broker(s) {unknown} that are not registered (live "
                f"brokers: {sorted(brokers)})")
        try:
            zk.create_partition_reassignment(
                {(tp.topic, tp.partition): r for tp, r in targets.items()})
        except ZkNodeExistsError:
            raise errors.IllegalStateError(
                f"a partition reassignment is still running "
                f"({zk_schema.REASSIGN_PARTITIONS_PATH} exists); wait for it to finish "
                f"before starting another") from None
        return current

    def list_partition_reassignments(self) -> dict[TopicPartition, list[int]]:
        """Reassignments still in progress: ``{tp: target replicas}`` ({} when none)."""
        import zk_schema

        try:
            pending = self._zk().get_partition_reassignment()
        except zk_schema.SchemaError as exc:
            raise errors.ZooKeeperError(
                f"{zk_schema.REASSIGN_PARTITIONS_PATH} holds a malformed request: {exc}"
            ) from None
        if pending is None:
            return {}
        return {TopicPartition(t, p): list(r)
                for (t, p), r in sorted(pending.partitions.items())}


    # --- configs and DeleteRecords (kafkalite.client.admin_configs) ---------------------------
    def describe_configs(self, config_resources, include_synonyms: bool = False,
                         include_documentation: bool = False, raise_on_error: bool = True
                         ) -> dict:
        """``{ConfigResource(type, name): {config name: ConfigEntry}}`` for each
        ``ConfigResource(type, name, configs=None | [names])`` (types TOPIC, BROKER,
        BROKER_LOGGER); a broker's resource is asked of that broker. Every config with its
        value and source (DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...);
        ``include_synonyms`` adds where the value comes from, most specific first."""
        from kafkalite.client import admin_configs

        return admin_configs.describe_configs(self, config_resources, include_synonyms,
                                              include_documentation, raise_on_error)

    def alter_configs(self, config_resources, validate_only: bool = False,
                      raise_on_error: bool = True) -> dict:
        """Kafka's (legacy) AlterConfigs: each ``ConfigResource(TOPIC, t, {name: value})``'s
        configs REPLACE the topic's overrides. ``{ConfigResource: None | KafkaError}``."""
        from kafkalite.client import admin_configs

        return admin_configs.alter_configs(self, config_resources, validate_only,
                                           raise_on_error)

    def incremental_alter_configs(self, configs: dict, validate_only: bool = False,
                                  raise_on_error: bool = True) -> dict:
        """``{ConfigResource: [AlterConfigOp(name, "SET"|"DELETE"|"APPEND"|"SUBTRACT",
        value)]}``: change single keys (APPEND/SUBTRACT for list configs such as
        cleanup.policy). ``{ConfigResource: None | KafkaError}``."""
        from kafkalite.client import admin_configs

        return admin_configs.incremental_alter_configs(self, configs, validate_only,
                                                       raise_on_error)

    def delete_records(self, records_to_delete: dict, timeout_ms: int | None = None,
                       raise_on_error: bool = True) -> dict:
        """Delete every record below ``{TopicPartition: offset}`` (-1: the high watermark),
        answered by the leaders once every live replica's log start offset moved (up to
        ``timeout_ms``). ``{TopicPartition: low watermark}`` (a KafkaError where one failed,
        raised by default: e.g. OffsetOutOfRangeError above the high watermark)."""
        from kafkalite.client import admin_configs

        return admin_configs.delete_records(self, records_to_delete, timeout_ms,
                                            raise_on_error)

    # --- ACLs (admin_acls; bindings and filters are kafkalite.security.acl's) ----------------
    def describe_acls(self, acl_filter):
        """The ACL bindings ``acl_filter`` (an AclBindingFilter) matches."""
        from kafkalite.client import admin_acls

        return admin_acls.describe_acls(self, acl_filter)

    def create_acls(self, acls) -> list:
        """Add AclBindings; one KafkaError (or None) per binding, in order."""
        from kafkalite.client import admin_acls

        return admin_acls.create_acls(self, list(acls))

    def delete_acls(self, acl_filters) -> list:
        """Remove what each AclBindingFilter matches: ``[(deleted bindings, error or None)]``."""
        from kafkalite.client import admin_acls

        return admin_acls.delete_acls(self, list(acl_filters))

class ConsumerGroupPartition(NamedTuple):
    """One row of ``AdminClient.describe_consumer_group`` (Kafka's describe columns); None
    where a value is missing (no committed offset, no owner, no leader...)."""

    group: str
    topic: str | None
    partition: int | None
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None
    kind: str = "zookeeper"          # "coordinator" (Kafka 0.9+) or "zookeeper" (Kafka 0.8)


def _member_host(group: str, member: str) -> str | None:
    """The host in a member id ``<g>_<host>-<ms>-<uuid8>``, as Kafka's tool shows it."""
    rest = member[len(group) + 1:] if member.startswith(group + "_") else member
    parts = rest.rsplit("-", 2)
    return "/" + parts[0] if len(parts) == 3 and parts[0] else None
