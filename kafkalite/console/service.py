"""The console put together: ZooKeeper watches -> model -> events and JSON views -> the web site.

    service = ConsoleService("127.0.0.1:2181/kafkalite", reactor)
    service.start()           # connects to ZooKeeper (blocking: call it before reactor.run())
    service.listen(8080, "127.0.0.1")

Changes seen before the first complete read of the tree are the cluster as it already was: they
are summed up in one "console connected" event instead of a sentence each. A ZooKeeper group's
owners change one znode at a time during a rebalance, so its new assignment is announced once no
owner has changed for ``settle_s``.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import threads
from twisted.python.threadpool import ThreadPool

from kafkalite.console import sentences as say
from kafkalite.console import views
from kafkalite.console.broker_reader import BrokerReader
from kafkalite.console.hub import EventHub
from kafkalite.console.model import ZOOKEEPER_KIND, Change, ClusterModel
from kafkalite.console.sampler import BrokerSampler
from kafkalite.console.sse import EventStreamResource
from kafkalite.console.web import HttpError, JsonResource, build_site
from kafkalite.console.zk_watcher import ZkWatcher
from kafkalite.zk import ZkClient
from kafkalite.zk.twisted_bridge import TwistedZk
from kafkalite.zk.znode_info import read_znode

log = logging.getLogger(__name__)


class ConsoleService:
    MAX_SETTLE_ROUNDS = 10      # announce an incomplete assignment after this many settle_s
    def __init__(self, zookeeper: str, reactor: Any, bootstrap_servers: str | None = None,
                 sample_interval_s: float = 2.0, settle_s: float = 0.5,
                 session_timeout_ms: int = 10000):
        self.zookeeper = zookeeper
        self._reactor = reactor
        self.settle_s = settle_s
        self.zk = ZkClient(zookeeper, session_timeout_ms=session_timeout_ms, reactor=reactor,
                           connection_timeout_s=10)
        self.model = ClusterModel()
        self.hub = EventHub(reactor)
        self._tzk: TwistedZk | None = None
        self._pool = ThreadPool(minthreads=0, maxthreads=1, name="kafkalite-console-brokers")
        self._reader = BrokerReader()
        self.sampler = BrokerSampler(self.model, self._reader, reactor, self._in_pool,
                                     self._publish_all, bootstrap_servers, sample_interval_s)
        self.watcher: ZkWatcher | None = None
        self._announced: dict[str, dict] = {}     # ZooKeeper group -> last announced assignment
        self._settling: dict[str, Any] = {}       # ZooKeeper group -> pending announcement
        self.port: Any = None

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.zk.start()
        self._tzk = TwistedZk(self.zk, self._reactor, max_threads=4,
                              name="kafkalite-console-zk")
        self._pool.start()
        self._reactor.addSystemEventTrigger("during", "shutdown", self.stop)
        self.watcher = ZkWatcher(self.zk, self._tzk, self.model, self._on_zk_changes,
                                 self._owners_changed, self._on_synced)
        self.watcher.start()
        self.sampler.start()

    def listen(self, port: int, host: str = "127.0.0.1") -> Any:
        self.port = self._reactor.listenTCP(port, self.site(), interface=host)
        return self.port

    def stop(self) -> None:
        self.sampler.stop()
        if self.watcher is not None:
            self.watcher.stop()
        for call in self._settling.values():
            if call.active():
                call.cancel()
        self._settling.clear()
        if self._pool.started:
            self._pool.stop()
        self._reader.close()
        if self._tzk is not None:
            self._tzk.stop()
        self.zk.stop()

    def _in_pool(self, fn, *args):
        return threads.deferToThreadPool(self._reactor, self._pool, fn, *args)

    # --- events ------------------------------------------------------------------------------------
    def _publish_all(self, changes: list[Change]) -> None:
        for change in changes:
            self.hub.publish(change.kind, change.sentence, **change.data)

    def _on_zk_changes(self, changes: list[Change]) -> None:
        if self.watcher is not None and self.watcher.synced:
            self._publish_all(changes)

    def _on_synced(self) -> None:
        model = self.model
        for group in model.zk_groups:
            self._announced[group] = model.zk_assignment(group)
        live = model.live_brokers()
        controller = (f"controller broker {model.controller_id} (epoch {model.controller_epoch})"
                      if model.controller_id is not None else "no controller")
        self.hub.publish(
            "console_synced",
            f"console watching ZooKeeper {self.zookeeper}: {len(live)} live broker"
            f"{'s' if len(live) != 1 else ''} {say.ids(live)}, {controller}, "
            f"{len(model.topics)} topic{'s' if len(model.topics) != 1 else ''}, "
            f"{len(model.zk_groups)} ZooKeeper group{'s' if len(model.zk_groups) != 1 else ''}",
            brokers=live, controller=model.controller_id, epoch=model.controller_epoch,
            watches=self.watcher.watch_count if self.watcher else 0)

    def _owners_changed(self, group: str) -> None:
        pending = self._settling.get(group)
        if pending is not None and pending.active():
            pending.reset(self.settle_s)
            return
        self._settling[group] = self._reactor.callLater(self.settle_s, self._announce, group)

    def _announce(self, group: str, attempt: int = 1) -> None:
        self._settling.pop(group, None)
        if group not in self.model.zk_groups:
            self._announced.pop(group, None)
            return
        assignment = self.model.zk_assignment(group)
        if assignment == self._announced.get(group) or not (self.watcher and self.watcher.synced):
            return
        if not self.model.zk_assignment_complete(group) and attempt < self.MAX_SETTLE_ROUNDS:
            # mid-rebalance: old owners released, new ones not all claimed yet
            self._settling[group] = self._reactor.callLater(self.settle_s, self._announce, group,
                                                            attempt + 1)
            return
        self._announced[group] = assignment
        self.hub.publish("group_rebalanced",
                         say.group_assignment(group, ZOOKEEPER_KIND, assignment),
                         group=group, group_kind=ZOOKEEPER_KIND)

    # --- the site ----------------------------------------------------------------------------------
    def cluster_json(self, _request: Any = None) -> dict:
        return views.cluster_view(
            self.model, self.sampler.offsets, self.sampler.rates,
            self.sampler.transactions.view(self.sampler.transaction_coordinators()))

    def groups_json(self, _request: Any = None) -> dict:
        return views.groups_view(self.model, self.sampler.offsets,
                                 self.sampler.coordinator_groups)

    def zk_json(self, request: Any) -> Any:
        raw = (request.args.get(b"path") or [b"/"])[0].decode("utf-8", "replace")
        path = "/" + raw.strip("/") if raw.strip("/") else "/"
        if "//" in path or any(part in (".", "..") for part in path.split("/")):
            raise HttpError(400, f"bad znode path {raw!r}: use an absolute path like /brokers")
        if self._tzk is None:
            raise HttpError(503, "the console is not connected to ZooKeeper yet")
        d = self._tzk.run(read_znode, self.zk, path)

        def shown(info):
            if info is None:
                raise HttpError(404, f"no znode at {path} (under {self.zookeeper})")
            return views.zk_view(info)
        return d.addCallback(shown)

    def site(self):
        return build_site({
            "cluster": JsonResource(self.cluster_json),
            "groups": JsonResource(self.groups_json),
            "zk": JsonResource(self.zk_json),
            "events": EventStreamResource(self.hub, self._reactor),
        })
