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
ZooKeeper-era (Kafka 0.8) consumer groups, changing config overrides and topics marked for
deletion go through ZooKeeper, as in Kafka's ZooKeeper-era tools; without ``zookeeper=`` they
raise ConfigError. Preferred elections and reassignments go through the brokers (ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments) or, with ``zookeeper=``, through
``/admin``.
"""

from __future__ import annotations

import time
from typing import Iterable

from kafkalite import errors
from kafkalite.client import admin_groups as ag
from kafkalite.client import admin_reassignment, admin_topics
from kafkalite.client.admin_groups import ConsumerGroupPartition
from kafkalite.client.admin_zookeeper import ZooKeeperAdmin
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import DEFAULT_CLIENT_ID
from kafkalite.client.offsets_lookup import OffsetsLookup
from kafkalite.client.structs import (
    ClusterDescription,
    NewTopic,
    TopicDescription,
    TopicPartition,
)
from kafkalite.errors import KafkaError
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
        self._offsets = OffsetsLookup(self._cluster, self._pool, self._retry_backoff)
        self._zookeeper = ZooKeeperAdmin(zookeeper, request_timeout_ms, self._check_open)
        self._closed = False

    # --- topics -----------------------------------------------------------------------------
    def create_topics(self, new_topics: Iterable[NewTopic], timeout_ms: int | None = None,
                      validate_only: bool = False, raise_on_error: bool = True
                      ) -> dict[str, KafkaError | None]:
        """Create topics; waits (up to ``timeout_ms``) until their leaders are elected."""
        return admin_topics.create_topics(self, new_topics, timeout_ms, validate_only,
                                          raise_on_error)

    def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None,
                      raise_on_error: bool = True) -> dict[str, KafkaError | None]:
        """Delete topics; waits (up to ``timeout_ms``) until the controller finished."""
        return admin_topics.delete_topics(self, topics, timeout_ms, raise_on_error)

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
        return admin_topics.create_partitions(self, topic_partitions, timeout_ms, validate_only,
                                              raise_on_error)

    def list_topics(self) -> list[str]:
        """Every topic name, sorted."""
        self._check_open()
        return sorted(self._cluster.refresh(topics=None).topics)

    def describe_topics(self, topics: Iterable[str] | None = None) -> list[TopicDescription]:
        """Partitions, leaders, replicas and ISR of ``topics`` (every topic when None).

        UnknownTopicOrPartitionError if a named topic does not exist.
        """
        return admin_topics.describe_topics(self, topics)

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
        return admin_topics.describe_topic_configs(self, topics)

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

    # --- ListOffsets (offsets_lookup, the Consumer's implementation) -------------------------
    def _list_offsets(self, tps: Iterable, timestamp: int, timeout_s: float | None = None,
                      raise_missing: bool = False, isolation_level: int = 0
                      ) -> dict[TopicPartition, int]:
        """``{tp: offset}`` by ListOffsets to the leaders (-1 latest = the high watermark, -2
        earliest; with ``isolation_level`` 1, read_committed, latest is the last stable
        offset). Partitions of unknown topics are left out at once; partitions without a
        leader are retried until the timeout, then left out (or raised with
        ``raise_missing``)."""
        self._check_open()
        timeout_s = self.request_timeout_ms / 1000 if timeout_s is None else timeout_s
        lookup = self._offsets
        if isolation_level != lookup.isolation_level:
            lookup = OffsetsLookup(self._cluster, self._pool, self._retry_backoff,
                                   isolation_level=isolation_level)
        result = lookup.list_offsets({tp: timestamp for tp in tps}, timeout_s,
                                     fresh=True, drop_unknown=True)
        if raise_missing and (result.missing or result.unknown):
            missing = ", ".join(str(TopicPartition(*tp))
                                for tp in result.missing + result.unknown)
            last = result.last_error
            raise errors.KafkaTimeoutError(
                f"could not read the offsets of {missing}"
                + (f" (last error: {last})" if last else "")
                + "; do these partitions exist and have a live leader?")
        return {tp: offset for tp, (offset, _ts) in result.found.items()}

    # --- ZooKeeper-backed administration (admin_zookeeper) -----------------------------------
    # Kafka's ZooKeeper-era tools did these through ZooKeeper, and so does kafkalite: group
    # membership and offsets live in /consumers, topic overrides in /config/topics, and requests
    # to the controller in /admin/*. They need ``zookeeper=`` (the brokers' zookeeper.connect).

    def connect_zookeeper(self) -> None:
        """Open the ZooKeeper session now, so a wrong address or chroot fails here (ZooKeeperError,
        ConfigError) rather than at the first ZooKeeper-backed call."""
        self._zookeeper.zk()

    def close_zookeeper(self) -> None:
        """Close the ZooKeeper session of the ZooKeeper-backed methods (if one was opened)."""
        self._zookeeper.close()

    # consumer groups, both generations (admin_groups, admin_zookeeper): the brokers'
    # coordinator groups always, ZooKeeper groups when this client has zookeeper=; ``kind``
    # ("coordinator" or "zookeeper") chooses one, None means both for listings and, for one
    # group, its ZooKeeper kind when it exists there (this client having zookeeper=), else its
    # coordinator kind.
    def list_consumer_groups(self, kind: str | None = None) -> list:
        """Every consumer group, sorted: ``ConsumerGroupListing`` values, which are the group
        names (``str``) carrying ``kind``, ``protocol_type`` and ``state``."""
        kind = ag.check_kind(kind)
        found = []
        if kind in (None, ag.COORDINATOR):
            found += ag.list_coordinator_groups(self)
        if kind == ag.ZOOKEEPER or (kind is None and self.zookeeper is not None):
            found += self._zookeeper.list_groups()
        return sorted(found, key=lambda g: (str(g), g.kind))

    def _group_kind(self, group: str, kind: str | None) -> str:
        if ag.check_kind(kind) is not None:
            return kind
        if self.zookeeper is not None and self._zookeeper.has_group(group):
            return ag.ZOOKEEPER
        return ag.COORDINATOR

    @staticmethod
    def _check_group_id(group) -> str:
        if not isinstance(group, str) or not group:
            raise errors.InvalidRequestError(f"group id must be a non-empty string, got "
                                             f"{group!r}")
        return group

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
        if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR:
            return ag.describe_coordinator_group_offsets(self, group, ConsumerGroupPartition)
        timeout_s = min(5.0, self.request_timeout_ms / 1000)
        return self._zookeeper.describe_offsets(
            group, lambda tps: self._list_offsets(tps, -1, timeout_s=timeout_s))

    def describe_consumer_groups(self, groups: Iterable[str], kind: str | None = None) -> list:
        """``ConsumerGroupDescription`` of each group (Kafka's describeConsumerGroups): state,
        assignment strategy, coordinator, members with their client ids, hosts and partitions.
        A coordinator group that does not exist is described as Dead, as Kafka does."""
        return [ag.describe_coordinator_group(self, group)
                if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR
                else self._zookeeper.describe_group(group) for group in groups]

    def list_consumer_group_offsets(self, group: str, partitions=None,
                                    kind: str | None = None) -> dict:
        """``{TopicPartition: OffsetAndMetadata}`` the group committed (kafka-python's
        name)."""
        if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR:
            return ag.fetch_committed(self, group, partitions)
        return self._zookeeper.committed(group, partitions)

    def consumer_group_members(self, group: str, kind: str | None = None) -> list[str]:
        """The live members of ``group``, sorted (ZooKeeper: its ``/consumers/<g>/ids``)."""
        if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR:
            return sorted(x.member_id for x in ag.describe_coordinator_group(self, group).members)
        return self._zookeeper.members(group)

    def delete_consumer_group(self, group: str, kind: str | None = None) -> None:
        """Remove a group and its committed offsets. NonEmptyGroupError while it has live
        members, GroupIdNotFoundError if it does not exist."""
        if self._group_kind(self._check_group_id(group), kind) == ag.COORDINATOR:
            error = ag.delete_coordinator_groups(self, [group])[group]
            if error is not None:
                raise error
            return
        self._zookeeper.delete_group(group)

    def delete_consumer_group_offsets(self, group: str, partitions) -> dict:
        """Delete a coordinator group's committed offsets of ``partitions`` (OffsetDelete;
        refused for topics the group still consumes): ``{tp: None | KafkaError}``."""
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
            zka = self._zookeeper
            zka.check_group_name(group)

            def refuse():
                zka.refuse_active_group(group)
            refuse()
            committed = zka.stored_offsets(group)
            partitions_of = zka.partitions_of

            def write(plan):
                zka.write_offsets(group, plan)
        tps = ag.reset_targets(group, topic, partitions, committed, partitions_of)
        plan = ag.plan_offsets_reset(
            tps, self._list_offsets(tps, -2, raise_missing=True),
            self._list_offsets(tps, -1, raise_missing=True), committed,
            to_earliest=to_earliest, to_latest=to_latest, to_offset=to_offset,
            shift_by=shift_by)
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

    # topic configs: read through a broker (DescribeConfigs), changed in ZooKeeper
    def describe_topic_config(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (``/config/topics/<t>``, read by a broker: see
        ``describe_topic_configs``); {} when it has none."""
        return self.describe_topic_configs([topic])[topic]

    def alter_topic_config(self, topic: str, configs: dict) -> dict[str, str]:
        """Set (value) or remove (None) topic config overrides, validated against the topic
        config table (ConfigError naming the key), then announce the change to the brokers.
        Returns the topic's overrides afterwards. Without ``zookeeper=``, through a broker
        (IncrementalAlterConfigs), as Kafka's tools do with only --bootstrap-server."""
        if self.zookeeper is not None:
            return self._zookeeper.alter_topic_config(topic, configs)
        from kafkalite.client.admin_configs import AlterConfigOp, ConfigResource

        ops = [AlterConfigOp(str(k), "DELETE" if v is None else "SET",
                             None if v is None else str(v)) for k, v in configs.items()]
        self.incremental_alter_configs({ConfigResource("TOPIC", topic): ops})
        return self.describe_topic_config(topic)

    def list_topics_marked_for_deletion(self) -> list[str]:
        """Topics waiting for the controller to delete them (``/admin/delete_topics``)."""
        return self._zookeeper.topics_marked_for_deletion()

    # reassignments and elections: through the brokers (KIP-455, KIP-460), or, when this client
    # has ``zookeeper=``, through /admin as Kafka's ZooKeeper-era tools
    def elect_preferred_leaders(self, partitions=None, timeout_ms: int | None = None
                                ) -> dict[TopicPartition, KafkaError | None]:
        """Move leadership to each partition's preferred (first) replica and wait up to
        ``timeout_ms`` for it: ElectLeaders at the controller, or with ``zookeeper=``
        ``/admin/preferred_replica_election``.

        ``partitions``: ``(topic, partition)`` pairs, or None for every partition (through the
        brokers, those whose preferred replica leads already are left out). Result per
        partition: None (elected), ElectionNotNeededError (the preferred replica already led),
        PreferredLeaderNotAvailableError (not live or not in the ISR), UnknownTopicOrPartition-
        Error, or a timeout (KafkaTimeoutError through ZooKeeper, RequestTimedOutError through
        the brokers).
        """
        if self.zookeeper is None:
            return self.elect_leaders(admin_reassignment.PREFERRED, partitions, timeout_ms)
        return self._zookeeper.elect_preferred_leaders(partitions, timeout_ms)

    def elect_leaders(self, election_type: int, partitions=None, timeout_ms: int | None = None
                      ) -> dict[TopicPartition, KafkaError | None]:
        """ElectLeaders (KIP-460) at the controller: ``election_type`` 0 preferred, 1 unclean
        (a live replica out of the ISR may lead when no in-sync one is live, losing records);
        see ``admin_reassignment.elect_leaders``."""
        return admin_reassignment.elect_leaders(self, election_type, partitions, timeout_ms)

    def alter_partition_reassignments(self, reassignments: dict
                                      ) -> dict[TopicPartition, list[int]]:
        """Start moving partitions to new replica lists (``{(topic, partition): [broker
        ids]}``): AlterPartitionReassignments at the controller, or with ``zookeeper=``
        ``/admin/reassign_partitions``. Returns the current replica lists of those partitions
        (what a rollback would restore).

        InvalidReplicaAssignmentError for an empty or repeating list or an unknown broker,
        UnknownTopicOrPartitionError for a missing partition; through ZooKeeper,
        IllegalStateError while another reassignment is still running.
        """
        if self.zookeeper is not None:
            return self._zookeeper.alter_partition_reassignments(reassignments)
        targets = {TopicPartition(*tp): r for tp, r in reassignments.items()}
        if not targets:
            raise errors.InvalidReplicaAssignmentError("the reassignment lists no partitions")
        current = admin_reassignment.current_replicas(self, targets)
        results = admin_reassignment.alter_partition_reassignments(self, targets)
        failed = [(tp, err) for tp, err in results.items() if err is not None]
        if failed:
            tp, first = failed[0]
            exc = errors.for_code(first.code, f"{tp}: {first.message}")
            exc.results = results
            raise exc
        return current

    def cancel_partition_reassignments(self, partitions
                                       ) -> dict[TopicPartition, KafkaError | None]:
        """Cancel the reassignments of ``partitions`` (AlterPartitionReassignments with no
        target): per partition None, or NoReassignmentInProgressError when none was running."""
        return admin_reassignment.alter_partition_reassignments(
            self, {TopicPartition(*tp): None for tp in partitions})

    def list_partition_reassignments(self) -> dict[TopicPartition, list[int]]:
        """Reassignments still in progress: ``{tp: target replicas}`` ({} when none)."""
        if self.zookeeper is not None:
            return self._zookeeper.list_partition_reassignments()
        return {tp: o.target for tp, o in self.describe_partition_reassignments().items()}

    def describe_partition_reassignments(self, partitions=None):
        """``{tp: OngoingReassignment(replicas, adding, removing)}`` of the reassignments in
        progress (ListPartitionReassignments at the controller; of ``partitions``, or all)."""
        return admin_reassignment.list_partition_reassignments(self, partitions)

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

    # --- log dirs (admin_log_dirs) ------------------------------------------------------------
    def describe_log_dirs(self, broker_ids=None) -> dict:
        """``{broker id: {log dir: LogDirDescription}}`` of the given (default: all) brokers."""
        from kafkalite.client import admin_log_dirs

        return admin_log_dirs.describe_log_dirs(self, broker_ids)
