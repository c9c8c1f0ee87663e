"""The controller's ZooKeeper: what it reads, and every write it makes, each one fenced.

All calls go through the Deferred bridge (:class:`~kafkalite.zk.twisted_bridge.TwistedZk`). Each
write carries the zkVersion of ``/controller_epoch`` that this controller set when it was elected;
ZooKeeper checks it in the same transaction (``ZkClient.fenced_multi``, as Kafka's KafkaZkClient
with its expected controller epoch zkVersion), so a deposed controller's write fails with
ControllerMovedError and changes nothing; the controller then resigns. A controller that already
stepped down (resigned, or stopped while an event was under way) does not even try: ``fence()``
raises ControllerMovedError before anything is sent.

The writes, all here: partition states (creation and conditional updates), topic assignments
(reassignment phases, a restored assignment), the deletion of a deleted topic's znodes and of its
``/admin/delete_topics`` marker, handled ``/isr_change_notification`` children, and the
``/admin/reassign_partitions`` and ``/admin/preferred_replica_election`` requests once handled.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable

from twisted.internet import defer

from kafkalite.zk.errors import ControllerMovedError, ZkBadVersionError

log = logging.getLogger(__name__)

STATE_WRITE_ATTEMPTS = 3


class ControllerZk:
    """``fence()`` returns the controller epoch's zkVersion, or raises ControllerMovedError when
    this broker is no longer the controller; ``term()`` says which term of controllership this
    is. An answer that arrives after the term ended fails with ControllerMovedError, so an event
    that was under way when the controller resigned or stopped goes no further."""

    def __init__(self, deferred_zk, fence: Callable[[], int], term: Callable[[], int]):
        self._tzk = deferred_zk
        self.fence = fence
        self._term = term

    # --- election ---------------------------------------------------------------------------------
    def try_elect_controller(self, broker_id: int) -> defer.Deferred:
        return self._tzk.try_elect_controller(broker_id)

    def get_controller_id(self) -> defer.Deferred:
        return self._tzk.get_controller_id()

    def enable_feature_versioning(self) -> defer.Deferred:
        """``/feature`` Enabled (KIP-584), as Kafka 2.8's controller leaves it on election."""
        return self._call("enable_feature_versioning")

    def resign_controller(self, controller_epoch_zk_version: int) -> defer.Deferred:
        """Delete ``/controller`` if it is still ours (fenced)."""
        return self._tzk.resign_controller(controller_epoch_zk_version)

    # --- watches (callbacks arrive on the reactor) ---------------------------------------------
    def watch_children(self, path: str, callback) -> defer.Deferred:
        return self._call("watch_children", path, callback)

    def watch_data(self, path: str, callback) -> defer.Deferred:
        return self._call("watch_data", path, callback)

    # --- reads ------------------------------------------------------------------------------------
    def get_brokers(self) -> defer.Deferred:
        return self._call("get_brokers")

    def get_topic_assignments(self, topics=None) -> defer.Deferred:
        if topics is None:
            return self._call("get_topic_assignments")
        return self._call("get_topic_assignments", topics)

    def get_topic_config(self, topic: str) -> defer.Deferred:
        return self._call("get_topic_config", topic)

    def get_config_change_notifications(self) -> defer.Deferred:
        return self._call("get_config_change_notifications")

    def get_partition_states(self, tps) -> defer.Deferred:
        return self._call("get_partition_states", list(tps))

    def get_partition_state(self, topic: str, partition: int) -> defer.Deferred:
        return self._call("get_partition_state", topic, partition)

    def topics_marked_for_deletion(self) -> defer.Deferred:
        return self._call("topics_marked_for_deletion")

    def get_isr_change_notifications(self) -> defer.Deferred:
        return self._call("get_isr_change_notifications")

    def get_partition_reassignment(self) -> defer.Deferred:
        return self._call("get_partition_reassignment")

    # --- fenced writes ----------------------------------------------------------------------------
    def create_partition_states(self, states: dict) -> defer.Deferred:
        """New partitions' first leaders and ISRs, pipelined: ``{tp: state}`` -> ``{tp: 0, or its
        error}`` (ZkNodeExistsError when it has a state; each partition fenced on its own)."""
        return self._call("create_partition_states", dict(states),
                          controller_epoch_zk_version=self.fence())

    @defer.inlineCallbacks
    def update_leader_and_isr(self, updates: dict):
        """Conditional writes of partition states at the zkVersion each was read with: ``{tp:
        state}`` -> ``{tp: the state written, with its new zkVersion}``. A partition whose
        leader changed its ISR meanwhile (BADVERSION) is re-read and written again, keeping the
        controller's leader choice and taking the fresh ISR when it contains that leader;
        other failures leave the partition out (logged). ControllerMovedError when fenced."""
        pending = {tp: (state, state.zk_version if state.zk_version is not None else -1)
                   for tp, state in updates.items()}
        written = {}
        for attempt in range(STATE_WRITE_ATTEMPTS):
            if not pending:
                break
            results = yield self._call("set_partition_states", pending,
                                       controller_epoch_zk_version=self.fence())
            retry = {}
            for tp, outcome in results.items():
                state = pending[tp][0]
                if isinstance(outcome, ControllerMovedError):
                    raise outcome
                if isinstance(outcome, ZkBadVersionError) and attempt < STATE_WRITE_ATTEMPTS - 1:
                    fresh = yield self.get_partition_state(*tp)
                    if fresh is None:
                        continue
                    retry[tp] = (replace(state, isr=tuple(fresh.isr)
                                         if state.leader in fresh.isr else state.isr,
                                         leader_epoch=max(state.leader_epoch,
                                                          fresh.leader_epoch + 1)),
                                 fresh.zk_version)
                    continue
                if isinstance(outcome, Exception):
                    log.warning("controller: writing state of %s-%d failed: %s", tp[0], tp[1],
                                outcome)
                    continue
                written[tp] = replace(state, zk_version=outcome)
            pending = retry
        return written

    def set_topic_assignment(self, topic: str, assignment) -> defer.Deferred:
        """Rewrite ``/brokers/topics/<t>`` (reassignment phases, a restored assignment)."""
        return self._call("set_topic_assignment", topic, assignment, -1, self.fence())

    def remove_topic_deletion_marker(self, topic: str) -> defer.Deferred:
        return self._call("remove_topic_deletion_marker", topic, self.fence())

    def delete_topic_znodes(self, topic: str) -> defer.Deferred:
        """The end of a topic deletion: assignment, partition states, config and marker."""
        return self._call("delete_topic_znodes", topic, self.fence())

    def delete_isr_change_notifications(self, names) -> defer.Deferred:
        return self._call("delete_isr_change_notifications", list(names), self.fence())

    def delete_preferred_replica_election(self) -> defer.Deferred:
        return self._call("delete_preferred_replica_election", self.fence())

    def update_partition_reassignment(self, remaining: dict) -> defer.Deferred:
        """The reassignments still running, or the znode's deletion when none remain."""
        return self._call("update_partition_reassignment", remaining, self.fence())

    def delete_partition_reassignment(self) -> defer.Deferred:
        return self._call("delete_partition_reassignment", self.fence())

    def _call(self, name: str, *args, **kwargs) -> defer.Deferred:
        term = self._term()

        def still_in_term(result):
            if self._term() != term:
                if hasattr(result, "cancel") and name.startswith("watch_"):
                    result.cancel()     # a watch nobody will cancel otherwise
                raise ControllerMovedError(
                    f"the controller's term ended while waiting for {name}")
            return result
        return getattr(self._tzk, name)(*args, **kwargs).addCallback(still_in_term)

