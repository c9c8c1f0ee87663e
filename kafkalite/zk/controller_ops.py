"""Typed ZooKeeper operations of the controller and of the requests made to it: controller election
and resignation, partition states, topic deletion, ISR change notifications, and the
``/admin`` requests (partition reassignment, preferred replica election).

Every write a controller makes takes ``controller_epoch_zk_version`` and goes through
:meth:`~kafkalite.zk.ops.ZnodeOps.fenced_multi` (a check of ``/controller_epoch`` first, as Kafka's
KafkaZkClient with its expected controller epoch zkVersion), so a deposed controller changes
nothing: its write fails with ControllerMovedError. Writes an admin makes (requests to the
controller) are not fenced. A mixin over :class:`~kafkalite.zk.ops.ZnodeOps`; no kazoo here.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Iterable, Mapping, Sequence

import zk_schema
from zk_schema import admin as s_admin
from zk_schema import config as s_config
from zk_schema import controller as s_controller
from zk_schema import isr as s_isr
from zk_schema import topics as s_topics
from zk_schema.controller import ControllerEpoch, ControllerRegistration
from zk_schema.features import ENABLED, FEATURE_PATH, FeatureZNode
from zk_schema.topics import PartitionState

from kafkalite.errors import KafkaError, UnknownTopicOrPartitionError, ZooKeeperError
from kafkalite.zk.errors import (
    ControllerMovedError, ZkBadVersionError, ZkConnectionLossError, ZkNodeExistsError,
    ZkNoNodeError,
)
from kafkalite.zk.ops import TopicPartition, ZkCreate, ZkDelete, ZkOp, ZkSetData, ZnodeOps

log = logging.getLogger(__name__)


class ControllerZkOps(ZnodeOps):
    """The controller's znodes and the admin requests to it."""

    # ------------------------------------------------------------------------ partition states

    def get_partition_state(self, topic: str, partition: int) -> PartitionState | None:
        path = s_topics.partition_state_path(topic, partition)
        got = self.get_data(path)
        return PartitionState.decode(got[0], got[1], path=path) if got else None

    def get_partition_states(self, partitions: Iterable[TopicPartition]
                             ) -> dict[TopicPartition, PartitionState]:
        """States of many partitions at once (pipelined); missing ones are left out."""
        tps = list(partitions)
        paths = [s_topics.partition_state_path(t, p) for t, p in tps]
        out = {}
        for tp, path, got in zip(tps, paths, self._get_many(paths)):
            if got is not None:
                out[tp] = PartitionState.decode(got[0], got[1].version, path=path)
        return out

    def create_partition_state(self, topic: str, partition: int, state: PartitionState,
                               controller_epoch_zk_version: int | None = None) -> int:
        """Create ``.../partitions/<p>/state`` and its missing parents in one transaction (fenced by
        the controller epoch when ``controller_epoch_zk_version`` is given, parents included, as
        Kafka's createTopicPartitionStatesRaw); returns its zk_version (0). ZkNodeExistsError when
        the state exists already."""
        path = s_topics.partition_state_path(topic, partition)
        for _ in range(5):
            parents = [p for p in (s_topics.partitions_path(topic),
                                   s_topics.partition_path(topic, partition))
                       if not self.exists(p)]
            ops: list[ZkOp] = [ZkCreate(p) for p in parents] + [ZkCreate(path, state.encode())]
            try:
                if controller_epoch_zk_version is not None:
                    self.fenced_multi(controller_epoch_zk_version, ops)
                else:
                    self.multi(ops)
                return 0
            except ZkNodeExistsError as exc:
                if getattr(exc, "failed_op", None) is ops[-1]:
                    raise
                # a parent appeared in between: look again
        raise ZooKeeperError(f"could not create the state of {topic}-{partition}: its parent "
                             "znodes kept changing")

    def create_partition_states(self, states: Mapping[TopicPartition, PartitionState],
                                controller_epoch_zk_version: int | None = None
                                ) -> dict[TopicPartition, int | KafkaError]:
        """Many new partitions' states at once: {tp: 0, or the error :meth:`create_partition_state`
        would raise for it}. One pipelined read of the parents, then one transaction per
        partition (its missing parents and its state, fenced as one), all pipelined: a round
        trip or two for a whole topic creation instead of three per partition (Kafka's
        createTopicPartitionStatesRaw batches the same way). ZooKeeper applies one session's
        requests in order, so a topic's shared ``partitions`` znode goes in its first
        partition's transaction and the later ones find it. A partition whose transaction fails
        for any reason but fencing is created again alone (:meth:`create_partition_state`,
        which re-reads the parents), so its outcome is what that call gives."""
        tps = list(states)
        topics = list(dict.fromkeys(t for t, _ in tps))
        parents = ([s_topics.partitions_path(t) for t in topics]
                   + [s_topics.partition_path(t, p) for t, p in tps])
        present = {path for path, got in zip(parents, self._get_many(parents)) if got is not None}
        batches = []
        for t, p in tps:
            ops: list[ZkOp] = [ZkCreate(path) for path in (s_topics.partitions_path(t),
                                                           s_topics.partition_path(t, p))
                               if path not in present]
            present.add(s_topics.partitions_path(t))   # created by this transaction
            ops.append(ZkCreate(s_topics.partition_state_path(t, p), states[(t, p)].encode()))
            batches.append(ops)
        if controller_epoch_zk_version is None:
            outcomes = self.multi_many(batches)
        else:
            outcomes = self.fenced_multi_many(controller_epoch_zk_version, batches)
        out: dict[TopicPartition, int | KafkaError] = {}
        for (t, p), ops, outcome in zip(tps, batches, outcomes):
            if not isinstance(outcome, Exception):
                out[(t, p)] = 0
            elif isinstance(outcome, ControllerMovedError) or (
                    isinstance(outcome, ZkNodeExistsError)
                    and getattr(outcome, "failed_op", None) is ops[-1]):
                out[(t, p)] = outcome
            else:      # e.g. a parent created or removed in between: the careful way
                try:
                    out[(t, p)] = self.create_partition_state(t, p, states[(t, p)],
                                                              controller_epoch_zk_version)
                except KafkaError as exc:
                    out[(t, p)] = exc
        return out

    def set_partition_state(self, topic: str, partition: int, state: PartitionState,
                            expected_zk_version: int,
                            controller_epoch_zk_version: int | None = None) -> int:
        """Conditional write of a partition's leader/ISR at ``expected_zk_version``; returns the new
        zk_version. ZkBadVersionError when someone wrote first (re-read and retry);
        ControllerMovedError when fenced."""
        path = s_topics.partition_state_path(topic, partition)
        try:
            if controller_epoch_zk_version is not None:
                return self.fenced_multi(controller_epoch_zk_version,
                                         [ZkSetData(path, state.encode(), expected_zk_version)])[0]
            return self.set_data(path, state.encode(), expected_zk_version)
        except ZkBadVersionError:
            raise ZkBadVersionError(
                f"partition state of {topic}-{partition} is no longer at zkVersion "
                f"{expected_zk_version}: re-read it and retry") from None

    def set_partition_states(self, updates: Mapping[TopicPartition, tuple[PartitionState, int]],
                             controller_epoch_zk_version: int | None = None
                             ) -> dict[TopicPartition, int | KafkaError]:
        """Many conditional writes, pipelined (one fenced transaction each when
        ``controller_epoch_zk_version`` is given): {tp: (state, expected_zk_version)} ->
        {tp: new zk_version, or the error for that partition}."""
        tps = list(updates)
        batches = [[ZkSetData(s_topics.partition_state_path(t, p), updates[(t, p)][0].encode(),
                              updates[(t, p)][1])] for t, p in tps]
        if controller_epoch_zk_version is None:
            outcomes = self.multi_many(batches)
        else:
            outcomes = self.fenced_multi_many(controller_epoch_zk_version, batches)
        return {tp: outcome if isinstance(outcome, Exception) else outcome[0]
                for tp, outcome in zip(tps, outcomes)}

    # ------------------------------------------------------------------------------ controller

    def get_controller(self) -> ControllerRegistration | None:
        got = self.get_data(s_controller.CONTROLLER_PATH)
        return ControllerRegistration.decode(got[0], got[1]) if got else None

    def get_controller_id(self) -> int | None:
        reg = self.get_controller()
        return reg.broker_id if reg else None

    def get_controller_epoch(self) -> ControllerEpoch | None:
        got = self.get_data(s_controller.CONTROLLER_EPOCH_PATH)
        return ControllerEpoch.decode(got[0], got[1]) if got else None

    def _get_or_create_controller_epoch(self) -> ControllerEpoch:
        while True:
            current = self.get_controller_epoch()
            if current is not None:
                return current
            initial = ControllerEpoch(s_controller.INITIAL_CONTROLLER_EPOCH)
            try:
                self.create(s_controller.CONTROLLER_EPOCH_PATH, initial.encode())
                return ControllerEpoch(initial.epoch, 0)
            except ZkNodeExistsError:
                continue

    def try_elect_controller(self, broker_id: int, timestamp_ms: int | None = None,
                             attempts: int = 5) -> ControllerEpoch | None:
        """Try to become controller: ONE transaction creates the ephemeral ``/controller`` and sets
        ``/controller_epoch`` to epoch+1 at its expected zkVersion.

        Returns the new :class:`ControllerEpoch` (``.epoch``, and ``.zk_version`` for fenced writes),
        or None when another broker is controller.
        """
        ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        reg = ControllerRegistration(broker_id, ts).encode()
        for _ in range(max(1, attempts)):
            current = self._get_or_create_controller_epoch()
            new_epoch = ControllerEpoch(current.epoch + 1)
            try:
                results = self.multi([
                    ZkCreate(s_controller.CONTROLLER_PATH, reg, ephemeral=True),
                    ZkSetData(s_controller.CONTROLLER_EPOCH_PATH, new_epoch.encode(),
                              current.zk_version if current.zk_version is not None else -1),
                ])
                return ControllerEpoch(new_epoch.epoch, results[1])
            except (ZkNodeExistsError, ZkBadVersionError):
                mine = self._my_controllership(broker_id)
                if mine is not None:
                    return mine  # an earlier attempt of ours won but its answer was lost
                if self.exists(s_controller.CONTROLLER_PATH):
                    return None  # someone else is controller
                # the epoch moved but nobody holds /controller (a controller came and went): retry
            except ZkConnectionLossError:
                mine = self._my_controllership(broker_id)
                if mine is not None:
                    return mine
                raise
        return None

    def _my_controllership(self, broker_id: int) -> ControllerEpoch | None:
        got = self._get_with_stat(s_controller.CONTROLLER_PATH)
        if got is None:
            return None
        data, stat = got
        if stat.ephemeralOwner != self.session_id:
            return None
        if ControllerRegistration.decode(data).broker_id != broker_id:
            return None
        return self.get_controller_epoch()

    def enable_feature_versioning(self) -> FeatureZNode:
        """Make ``/feature`` exist and say Enabled, keeping any finalized features (Kafka 2.8's
        controller does this on election: KafkaController.enableFeatureVersioning)."""
        while True:
            got = self.get_data(FEATURE_PATH)
            if got is None:
                node = FeatureZNode()
                try:
                    self.create(FEATURE_PATH, node.encode())
                    return node
                except ZkNodeExistsError:
                    continue
            current = FeatureZNode.decode(got[0], got[1])
            if current.status == ENABLED:
                return current
            enabled = FeatureZNode(ENABLED, dict(current.features))
            try:
                self.set_data(FEATURE_PATH, enabled.encode(), got[1])
                return enabled
            except ZkBadVersionError:
                continue

    def resign_controller(self, controller_epoch_zk_version: int) -> bool:
        """Delete ``/controller`` if we still are the controller (fenced); False when fenced out."""
        try:
            self.fenced_multi(controller_epoch_zk_version, [ZkDelete(s_controller.CONTROLLER_PATH)])
            return True
        except (ControllerMovedError, ZkNoNodeError):
            return False

    # ------------------------------------------------------- admin requests to the controller

    def create_partition_reassignment(self, partitions: Mapping[TopicPartition, Sequence[int]]
                                      ) -> None:
        """Ask the controller to move replicas: create ``/admin/reassign_partitions`` with the
        target replica lists. ZkNodeExistsError while an earlier reassignment still runs."""
        request = s_admin.PartitionReassignment(
            {(t, int(p)): tuple(int(b) for b in replicas)
             for (t, p), replicas in partitions.items()})
        self._create_admin_request(s_admin.REASSIGN_PARTITIONS_PATH, request.encode())

    def get_partition_reassignment(self) -> s_admin.PartitionReassignment | None:
        """The pending ``/admin/reassign_partitions`` request (None when there is none, no
        partitions when it is empty); SchemaError when it is malformed."""
        got = self.get_data(s_admin.REASSIGN_PARTITIONS_PATH)
        if got is None:
            return None
        if not got[0]:
            return s_admin.PartitionReassignment({}, got[1])
        return s_admin.PartitionReassignment.decode(got[0], got[1])

    def get_partition_reassignments(self) -> dict[TopicPartition, tuple[int, ...]]:
        """Reassignments requested in ``/admin/reassign_partitions`` and not finished yet:
        ``{(topic, partition): target replicas}`` ({} when none, or when it is malformed)."""
        try:
            pending = self.get_partition_reassignment()
        except zk_schema.SchemaError:
            return {}
        return dict(pending.partitions) if pending is not None else {}

    def update_partition_reassignment(self, remaining: Mapping[TopicPartition, Sequence[int]],
                                      controller_epoch_zk_version: int) -> bool:
        """The controller's rewrite of ``/admin/reassign_partitions`` to the reassignments still
        running, or its deletion when none remain (fenced). False when it was gone already."""
        if not remaining:
            return self.delete_partition_reassignment(controller_epoch_zk_version)
        data = s_admin.PartitionReassignment(
            {tp: tuple(replicas) for tp, replicas in remaining.items()}).encode()
        try:
            self.fenced_multi(controller_epoch_zk_version,
                              [ZkSetData(s_admin.REASSIGN_PARTITIONS_PATH, data)])
            return True
        except ZkNoNodeError:
            return False

    def delete_partition_reassignment(self, controller_epoch_zk_version: int) -> bool:
        """The controller's deletion of ``/admin/reassign_partitions`` (fenced)."""
        return self._fenced_delete(s_admin.REASSIGN_PARTITIONS_PATH, controller_epoch_zk_version)

    def create_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        """Ask the controller for a preferred replica election of ``partitions``: create
        ``/admin/preferred_replica_election``. ZkNodeExistsError while an earlier one is pending."""
        request = s_admin.PreferredReplicaElection(tuple((t, int(p)) for t, p in partitions))
        self._create_admin_request(s_admin.PREFERRED_REPLICA_ELECTION_PATH, request.encode())

    def preferred_replica_election_pending(self) -> bool:
        """True while ``/admin/preferred_replica_election`` exists (the controller has not acted)."""
        return self.exists(s_admin.PREFERRED_REPLICA_ELECTION_PATH)

    def delete_preferred_replica_election(self, controller_epoch_zk_version: int) -> bool:
        """The controller's deletion of ``/admin/preferred_replica_election`` once it acted
        (fenced). False when it was gone already."""
        return self._fenced_delete(s_admin.PREFERRED_REPLICA_ELECTION_PATH,
                                   controller_epoch_zk_version)

    def _create_admin_request(self, path: str, data: bytes) -> None:
        try:
            self.create(path, data)
        except ZkNoNodeError:
            self.ensure_path(s_admin.ADMIN_PATH)
            self.create(path, data)

    def _fenced_delete(self, path: str, controller_epoch_zk_version: int) -> bool:
        try:
            self.fenced_multi(controller_epoch_zk_version, [ZkDelete(path)])
            return True
        except ZkNoNodeError:
            return False

    # ------------------------------------------------------------------------- topic deletion

    def mark_topic_for_deletion(self, topic: str) -> None:
        """Create ``/admin/delete_topics/<t>`` (idempotent). UnknownTopicOrPartitionError when
        the topic does not exist."""
        if not self.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"Topic '{topic}' does not exist.")
        with contextlib.suppress(ZkNodeExistsError):
            self.create(s_admin.delete_topic_path(topic), s_admin.DELETE_TOPIC_MARKER,
                        makepath=True)

    def topics_marked_for_deletion(self) -> list[str]:
        return self.get_children(s_admin.DELETE_TOPICS_PATH)

    def remove_topic_deletion_marker(self, topic: str,
                                     controller_epoch_zk_version: int | None = None) -> bool:
        path = s_admin.delete_topic_path(topic)
        if controller_epoch_zk_version is None:
            return self.delete(path)
        return self._fenced_delete(path, controller_epoch_zk_version)

    def delete_topic_znodes(self, topic: str,
                            controller_epoch_zk_version: int | None = None) -> None:
        """Remove the topic's assignment and partition states, its config and its deletion marker
        (the end of a topic deletion). Atomic; fenced when an epoch zkVersion is given."""
        paths = self._subtree(s_topics.topic_path(topic))
        paths += [p for p in (s_config.topic_config_path(topic), s_admin.delete_topic_path(topic))
                  if self.exists(p)]
        ops = [ZkDelete(p) for p in paths]
        if not ops:
            return
        if controller_epoch_zk_version is not None:
            self.fenced_multi(controller_epoch_zk_version, ops)
        else:
            self.multi(ops)

    def _subtree(self, path: str) -> list[str]:
        """``path`` and its descendants, deepest first (empty when it does not exist)."""
        if not self.exists(path):
            return []
        out: list[str] = []
        for child in self.get_children(path):
            out.extend(self._subtree(f"{path}/{child}"))
        out.append(path)
        return out

    # --------------------------------------------------------------------- ISR notifications

    def create_isr_change_notification(self, partitions: Iterable[TopicPartition]) -> str:
        """Announce ISR changes to the controller; returns the sequential znode's name."""
        data = s_isr.IsrChangeNotification(tuple((t, int(p)) for t, p in partitions)).encode()
        try:
            path = self.create(s_isr.isr_change_prefix_path(), data, sequence=True)
        except ZkNoNodeError:
            self.ensure_path(s_isr.ISR_CHANGE_NOTIFICATION_PATH)
            path = self.create(s_isr.isr_change_prefix_path(), data, sequence=True)
        return path.rsplit("/", 1)[-1]

    def get_isr_change_notifications(self) -> dict[str, s_isr.IsrChangeNotification]:
        """{child name: notification}, in sequence order (vanished ones left out)."""
        names = self.get_children(s_isr.ISR_CHANGE_NOTIFICATION_PATH)
        out = {}
        for name, got in zip(names, self._get_many([s_isr.isr_change_path(n) for n in names])):
            if got is not None:
                try:
                    out[name] = s_isr.IsrChangeNotification.decode(got[0], got[1].version)
                except zk_schema.SchemaError:
                    log.warning("ignoring malformed ISR change notification %s", name)
        return out

    def delete_isr_change_notifications(self, names: Iterable[str],
                                        controller_epoch_zk_version: int | None = None) -> None:
        for name in names:
            path = s_isr.isr_change_path(name)
            if controller_epoch_zk_version is None:
                self.delete(path)
            else:
                with contextlib.suppress(ZkNoNodeError):
                    self.fenced_multi(controller_epoch_zk_version, [ZkDelete(path)])
