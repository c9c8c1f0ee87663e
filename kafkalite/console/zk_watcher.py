"""Follow the cluster's znodes with watches and feed :class:`~kafkalite.console.model.ClusterModel`.

Nothing is polled: each znode the picture needs has one standing watch (``ZkClient.watch_data`` /
``watch_children``, re-armed by the client after every event and reconnection), and watches are
added as children appear (a new broker, topic, partition, group, owner) and cancelled when their
parent goes away (a deleted topic or group). Watches are armed on the TwistedZk thread pool (arming
reads the znode), and their callbacks arrive on the reactor thread, where the model lives.

``synced`` turns true once every watch armed so far has delivered its first value: until then the
updates describe the cluster as it already was, not changes, and the console does not announce
them.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import zk_schema
from zk_schema import brokers as s_brokers
from zk_schema import consumers as s_consumers
from zk_schema import topics as s_topics

from kafkalite.console.model import Change, ClusterModel
from kafkalite.zk import ZkClient
from kafkalite.zk.twisted_bridge import TwistedZk

log = logging.getLogger(__name__)

CHILDREN, DATA = "children", "data"


def _decode(cls: Any, data: bytes | None, version: int | None, **kwargs: Any) -> Any:
    if data is None:
        return None
    try:
        return cls.decode(data, version, **kwargs)
    except zk_schema.SchemaError as exc:
        log.warning("ignoring a znode the console cannot read: %s", exc)
        return None


class ZkWatcher:
    def __init__(self, zk: ZkClient, deferred_zk: TwistedZk, model: ClusterModel,
                 on_changes: Callable[[list[Change]], Any],
                 on_owners_changed: Callable[[str], Any],
                 on_synced: Callable[[], Any] = lambda: None):
        self._zk = zk
        self._tzk = deferred_zk
        self.model = model
        self._on_changes = on_changes
        self._on_owners_changed = on_owners_changed
        self._on_synced = on_synced
        self._watches: dict[tuple[str, str], Any] = {}     # (kind, path) -> ZkWatch (None: arming)
        self._arming = 0
        self.synced = False
        self._stopped = False

    # --- bookkeeping -----------------------------------------------------------------------------
    def start(self) -> None:
        self._watch(DATA, zk_schema.CLUSTER_ID_PATH, self._on_cluster_id)
        self._watch(CHILDREN, zk_schema.BROKER_IDS_PATH, self._on_broker_ids)
        self._watch(DATA, zk_schema.CONTROLLER_PATH, self._on_controller)
        self._watch(DATA, zk_schema.CONTROLLER_EPOCH_PATH, self._on_controller_epoch)
        self._watch(CHILDREN, zk_schema.TOPICS_PATH, self._on_topics)
        self._watch(CHILDREN, zk_schema.CONSUMERS_PATH, self._on_groups)

    def stop(self) -> None:
        self._stopped = True
        for watch in self._watches.values():
            if watch is not None:
                watch.cancel()
        self._watches.clear()

    @property
    def watch_count(self) -> int:
        return len(self._watches)

    def _watch(self, kind: str, path: str, callback: Callable[..., Any]) -> None:
        key = (kind, path)
        if key in self._watches or self._stopped:
            return
        self._watches[key] = None
        self._arming += 1

        def deliver(*args: Any) -> None:
            if key in self._watches:          # a callback queued before a cancel is dropped
                callback(*args)

        arm = self._zk.watch_children if kind == CHILDREN else self._zk.watch_data
        d = self._tzk.run(arm, path, deliver)

        def armed(watch: Any) -> None:
            if key in self._watches:
                self._watches[key] = watch
            else:
                watch.cancel()

        def failed(failure: Any) -> None:
            log.warning("cannot watch %s: %s", path, failure.getErrorMessage())
            self._watches.pop(key, None)

        d.addCallbacks(armed, failed)
        d.addBoth(self._armed_one)

    def _armed_one(self, _ignored: Any) -> None:
        self._arming -= 1
        if self._arming == 0 and not self.synced and not self._stopped:
            self.synced = True
            self._on_synced()

    def _cancel_under(self, path: str) -> None:
        for key in [k for k in self._watches if k[1] == path or k[1].startswith(path + "/")]:
            watch = self._watches.pop(key)
            if watch is not None:
                watch.cancel()

    def _emit(self, changes: list[Change]) -> None:
        if changes:
            self._on_changes(changes)

    # --- cluster, brokers, controller ---------------------------------------------------------------
    def _on_cluster_id(self, data: bytes | None, version: int | None) -> None:
        got = _decode(zk_schema.ClusterId, data, version)
        self.model.cluster_id = got.id if got is not None else None

    def _on_broker_ids(self, children: list[str] | None) -> None:
        ids = []
        for child in children or ():
            try:
                ids.append(s_brokers.parse_broker_id(child))
            except zk_schema.SchemaError:
                continue
        self._emit(self.model.set_broker_ids(ids))
        for broker_id in ids:
            self._watch(DATA, s_brokers.broker_path(broker_id),
                        lambda data, version, b=broker_id: self._emit(self.model.set_broker(
                            b, _decode(zk_schema.BrokerRegistration, data, version,
                                       broker_id=b))))

    def _on_controller(self, data: bytes | None, version: int | None) -> None:
        got = _decode(zk_schema.ControllerRegistration, data, version)
        self._emit(self.model.set_controller(got.broker_id if got else None,
                                             got.timestamp_ms if got else None))

    def _on_controller_epoch(self, data: bytes | None, version: int | None) -> None:
        got = _decode(zk_schema.ControllerEpoch, data, version)
        self._emit(self.model.set_controller_epoch(got.epoch if got else None))

    # --- topics and partitions ----------------------------------------------------------------------
    def _on_topics(self, children: list[str] | None) -> None:
        topics = list(children or ())
        for gone in set(self.model.topics) - set(topics):
            self._cancel_under(s_topics.topic_path(gone))
        self._emit(self.model.set_topics(topics))
        for topic in topics:
            self._watch(DATA, s_topics.topic_path(topic),
                        lambda data, version, t=topic: self._on_assignment(t, data, version))

    def _on_assignment(self, topic: str, data: bytes | None, version: int | None) -> None:
        assignment = _decode(zk_schema.TopicAssignment, data, version, topic=topic)
        self._emit(self.model.set_assignment(topic, assignment))
        for partition in (assignment.partitions if assignment else ()):
            self._watch(DATA, s_topics.partition_state_path(topic, partition),
                        lambda d, v, t=topic, p=partition: self._emit(
                            self.model.set_partition_state(t, p, _decode(
                                zk_schema.PartitionState, d, v,
                                path=s_topics.partition_state_path(t, p)))))

    # --- ZooKeeper consumer groups ------------------------------------------------------------------
    def _on_groups(self, children: list[str] | None) -> None:
        groups = list(children or ())
        for gone in set(self.model.zk_groups) - set(groups):
            self._cancel_under(s_consumers.group_path(gone))
        self._emit(self.model.set_zk_groups(groups))
        for group in groups:
            self._watch(CHILDREN, s_consumers.group_ids_path(group),
                        lambda members, g=group: self._on_members(g, members))
            self._watch(CHILDREN, s_consumers.group_owners_path(group),
                        lambda topics, g=group: self._on_group_topics(g, topics, owners=True))
            self._watch(CHILDREN, s_consumers.group_offsets_path(group),
                        lambda topics, g=group: self._on_group_topics(g, topics, owners=False))

    def _on_members(self, group: str, members: list[str] | None) -> None:
        changes = self.model.set_zk_members(group, members)
        self._emit(changes)
        if changes:
            self._on_owners_changed(group)     # idle members show in the assignment too

    def _on_group_topics(self, group: str, topics: list[str] | None, owners: bool) -> None:
        for topic in topics or ():
            if owners:
                path = s_consumers.topic_owners_path(group, topic)
                self._watch(CHILDREN, path, lambda parts, g=group, t=topic:
                            self._on_owned_partitions(g, t, parts))
            else:
                path = s_consumers.topic_offsets_path(group, topic)
                self._watch(CHILDREN, path, lambda parts, g=group, t=topic:
                            self._on_offset_partitions(g, t, parts))

    def _on_owned_partitions(self, group: str, topic: str, parts: list[str] | None) -> None:
        for partition in sorted(int(p) for p in parts or () if p.isdigit()):
            self._watch(DATA, s_consumers.owner_path(group, topic, partition),
                        lambda d, v, g=group, t=topic, p=partition: self._on_owner(g, t, p, d, v))

    def _on_owner(self, group: str, topic: str, partition: int, data: bytes | None,
                  version: int | None) -> None:
        got = _decode(zk_schema.PartitionOwner, data, version)
        if self.model.set_zk_owner(group, topic, partition, got.owner if got else None):
            self._on_owners_changed(group)

    def _on_offset_partitions(self, group: str, topic: str, parts: list[str] | None) -> None:
        for partition in sorted(int(p) for p in parts or () if p.isdigit()):
            self._watch(DATA, s_consumers.offset_path(group, topic, partition),
                        lambda d, v, g=group, t=topic, p=partition: self.model.set_zk_offset(
                            g, t, p, getattr(_decode(zk_schema.ConsumerOffset, d, v),
                                             "offset", None)))
