"""An in-memory ZooKeeper and a recording channel manager for the controller's unit tests.

``ZkTree`` is the znode tree of one fake ensemble: versioned znodes (data version, czxid,
ephemeral owner), atomic multi-operations with checks, sequential and ephemeral znodes, and
standing watches whose callbacks arrive through the injected clock (as ZkClient's arrive through
the reactor). ``InMemoryZk`` is one session on it: the raw operations of
:class:`kafkalite.zk.ops.ZnodeOps` in memory, under kafkalite's real typed operations (the same
``ClusterZkOps`` / ``ControllerZkOps`` code ZkClient runs, fencing included). ``DeferredZk`` is
the TwistedZk face of it. ``RecordingChannels`` stands in for ControllerChannelManager: it keeps
every request the controller asked it to send.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from types import SimpleNamespace

from twisted.internet import defer

import zk_schema
from kafkalite.config import BrokerConfig
from kafkalite.errors import NetworkError
from kafkalite.zk.cluster_ops import ClusterZkOps
from kafkalite.zk.consumer_ops import ConsumerZkOps
from kafkalite.zk.controller_ops import ControllerZkOps
from kafkalite.zk.errors import (
    ZkBadVersionError, ZkNodeExistsError, ZkNoNodeError, ZkNotEmptyError,
)
from kafkalite.zk.ops import ZkCheck, ZkCreate, ZkDelete, ZkSetData


@dataclass
class Znode:
    data: bytes
    version: int
    czxid: int
    ephemeral_owner: int = 0
    sequence: int = 0


class ZkTree:
    """The shared znode tree. ``writes`` lists every committed change as (kind, path)."""

    def __init__(self, clock):
        self.clock = clock
        self.nodes: dict[str, Znode] = {"/": Znode(b"", 0, 0)}
        self.writes: list[tuple[str, str]] = []
        self._zxid = itertools.count(100)
        self._watches: list[FakeWatch] = []

    # --- reading -------------------------------------------------------------------------------
    def children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted(p[len(prefix):] for p in self.nodes
                      if p.startswith(prefix) and "/" not in p[len(prefix):] and p != "/")

    # --- transactions --------------------------------------------------------------------------
    def apply(self, ops, session_id: int) -> list:
        """All ``ops`` or none; raises the first failing op's error (failed_op, failed_index)."""
        nodes = copy.deepcopy(self.nodes)
        results, writes = [], []
        for index, op in enumerate(ops):
            try:
                results.append(self._apply_one(nodes, op, session_id, writes))
            except (ZkNoNodeError, ZkNodeExistsError, ZkBadVersionError, ZkNotEmptyError) as exc:
                exc.failed_op, exc.failed_index = op, index
                raise
        self.nodes = nodes
        self.writes += writes
        self._notify()
        return results

    def _apply_one(self, nodes, op, session_id, writes):
        path = op.path
        if isinstance(op, ZkCheck):
            node = nodes.get(path)
            if node is None:
                raise ZkNoNodeError(f"znode does not exist ({path})")
            if op.version != -1 and node.version != op.version:
                raise ZkBadVersionError(f"zkVersion mismatch ({path})")
            return True
        if isinstance(op, ZkCreate):
            parent = path.rsplit("/", 1)[0] or "/"
            if parent not in nodes:
                raise ZkNoNodeError(f"znode does not exist ({parent})")
            if op.sequence:
                nodes[parent].sequence += 1
                path = f"{path}{nodes[parent].sequence - 1:010d}"
            if path in nodes:
                raise ZkNodeExistsError(f"znode already exists ({path})")
            nodes[path] = Znode(op.data, 0, next(self._zxid),
                                session_id if op.ephemeral else 0)
            writes.append(("create", path))
            return path
        node = nodes.get(path)
        if node is None:
            raise ZkNoNodeError(f"znode does not exist ({path})")
        if op.version != -1 and node.version != op.version:
            raise ZkBadVersionError(f"zkVersion mismatch ({path})")
        if isinstance(op, ZkSetData):
            node.data, node.version = op.data, node.version + 1
            writes.append(("set", path))
            return node.version
        if isinstance(op, ZkDelete):
            if self.children_of(nodes, path):
                raise ZkNotEmptyError(f"znode has children ({path})")
            del nodes[path]
            writes.append(("delete", path))
            return True
        raise TypeError(op)

    @staticmethod
    def children_of(nodes, path):
        prefix = path.rstrip("/") + "/"
        return [p for p in nodes if p.startswith(prefix)]

    def expire(self, session_id: int) -> None:
        """The session ends: its ephemeral znodes go."""
        for path in [p for p, n in self.nodes.items() if n.ephemeral_owner == session_id]:
            del self.nodes[path]
            self.writes.append(("delete", path))
        self._notify()

    # --- watches -------------------------------------------------------------------------------
    def watch(self, path, kind, callback) -> "FakeWatch":
        watch = FakeWatch(self, path, kind, callback)
        self._watches.append(watch)
        watch.check()
        return watch

    def value(self, path, kind):
        node = self.nodes.get(path)
        if kind == "children":
            return None if node is None else self.children(path)
        return (None, None) if node is None else (node.data, node.version)

    def _notify(self) -> None:
        for watch in list(self._watches):
            watch.check()


class FakeWatch:
    def __init__(self, tree, path, kind, callback):
        self.tree, self.path, self.kind, self.callback = tree, path, kind, callback
        self.active = True
        self._last = object()

    def check(self) -> None:
        value = self.tree.value(self.path, self.kind)
        if self.active and value != self._last:
            self._last = value
            args = (value,) if self.kind == "children" else value
            self.tree.clock.callLater(0, self._deliver, args)

    def _deliver(self, args) -> None:
        if self.active:
            self.callback(*args)

    def cancel(self) -> None:
        self.active = False


class InMemoryZk(ClusterZkOps, ControllerZkOps, ConsumerZkOps):
    """One ZooKeeper session on a ZkTree, with kafkalite's typed operations."""

    def __init__(self, tree: ZkTree, session_id: int = 1):
        self.tree = tree
        self._session_id = session_id

    @property
    def session_id(self):
        return self._session_id

    def exists(self, path):
        return path in self.tree.nodes

    def get_data(self, path):
        node = self.tree.nodes.get(path)
        return None if node is None else (node.data, node.version)

    def _get_with_stat(self, path):
        node = self.tree.nodes.get(path)
        if node is None:
            return None
        return node.data, SimpleNamespace(version=node.version, czxid=node.czxid,
                                          ephemeralOwner=node.ephemeral_owner)

    def _get_many(self, paths):
        return [self._get_with_stat(p) for p in paths]

    def get_children(self, path):
        return self.tree.children(path) if path in self.tree.nodes else []

    def create(self, path, data=b"", *, ephemeral=False, sequence=False, makepath=False):
        if makepath:
            self.ensure_path(path.rsplit("/", 1)[0] or "/")
        return self.tree.apply([ZkCreate(path, data, ephemeral, sequence)], self._session_id)[0]

    def set_data(self, path, data, version=-1):
        return self.tree.apply([ZkSetData(path, data, version)], self._session_id)[0]

    def delete(self, path, version=-1, *, recursive=False):
        if path not in self.tree.nodes:
            return False
        paths = sorted(ZkTree.children_of(self.tree.nodes, path), reverse=True) if recursive \
            else []
        self.tree.apply([ZkDelete(p) for p in paths] + [ZkDelete(path, version)],
                        self._session_id)
        return True

    def ensure_path(self, path):
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:i])
            if sub not in self.tree.nodes:
                self.tree.apply([ZkCreate(sub)], self._session_id)

    def _create_ephemeral_checked(self, path, data):
        self.ensure_path(path.rsplit("/", 1)[0])
        self.tree.apply([ZkCreate(path, data, ephemeral=True)], self._session_id)
        return self._get_with_stat(path)[1]

    def multi_many(self, batches):
        out = []
        for ops in batches:
            try:
                out.append(self.tree.apply(list(ops), self._session_id))
            except (ZkNoNodeError, ZkNodeExistsError, ZkBadVersionError,
                    ZkNotEmptyError) as exc:
                out.append(exc)
        return out

    def watch_children(self, path, callback):
        return self.tree.watch(path, "children", callback)

    def watch_data(self, path, callback):
        return self.tree.watch(path, "data", callback)


class DeferredZk:
    """TwistedZk's face of an InMemoryZk: every method returns a Deferred, fired at once unless
    a test holds that method (``hold("get_brokers")``): then the call waits in ``held`` until the
    test runs it with ``release()``."""

    def __init__(self, zk: InMemoryZk):
        self.zk = zk
        self._hold: set[str] = set()
        self.held: list = []

    def hold(self, name: str) -> None:
        self._hold.add(name)

    def release(self) -> None:
        """Run the held calls now and fire their Deferreds."""
        self._hold.clear()
        held, self.held = self.held, []
        for call, d in held:
            defer.maybeDeferred(call).chainDeferred(d)

    def run(self, fn, *args, **kwargs):
        return defer.maybeDeferred(fn, *args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        method = getattr(self.zk, name)

        def call(*args, **kwargs):
            if name in self._hold:
                d = defer.Deferred()
                self.held.append((lambda: method(*args, **kwargs), d))
                return d
            return defer.maybeDeferred(method, *args, **kwargs)
        return call


class RecordingChannels:
    """ControllerChannelManager's interface; ``sent`` holds (broker id, request) in order.
    Answers come at once unless ``hold`` is set: then ``pending`` keeps the Deferreds."""

    def __init__(self, reactor, controller_id, request_timeout_s=30.0):
        self.controller_id = controller_id
        self.brokers_added: dict[int, tuple[str, int]] = {}
        self.sent: list = []
        self.pending: list = []        # (broker id, request, Deferred) while ``hold``
        self.hold = False
        self.closed = False

    def add_broker(self, broker_id, host, port):
        if not self.closed:
            self.brokers_added[broker_id] = (host, port)

    def remove_broker(self, broker_id):
        self.brokers_added.pop(broker_id, None)
        for entry in [e for e in self.pending if e[0] == broker_id]:
            self.pending.remove(entry)
            if not entry[2].called:
                entry[2].errback(NetworkError(f"broker {broker_id} was removed"))

    def send(self, broker_id, request):
        if self.closed or broker_id not in self.brokers_added:
            return defer.fail(NetworkError(f"no channel to broker {broker_id}"))
        self.sent.append((broker_id, request))
        d = defer.Deferred()
        if self.hold:
            self.pending.append((broker_id, request, d))
        else:
            d.callback(SimpleNamespace(error_code=0, partition_errors=[]))
        return d

    def send_quietly(self, broker_id, request):
        self.send(broker_id, request).addErrback(lambda _failure: None)

    def brokers(self):
        return sorted(self.brokers_added)

    def close(self):
        self.closed = True
        for broker_id in list(self.brokers_added):
            self.remove_broker(broker_id)

    # --- what tests ask -----------------------------------------------------------------------
    def requests(self, kind, broker_id=None) -> list:
        return [r for b, r in self.sent
                if type(r).__name__ == kind and (broker_id is None or b == broker_id)]

    def clear(self) -> None:
        self.sent.clear()


class ControllerHarness:
    """A fake ensemble with brokers registered (each its own session), an admin session, and
    controllers made on it (real Controller objects on a task.Clock)."""

    def __init__(self, brokers=(1, 2, 3), **config):
        from twisted.internet import task

        self.clock = task.Clock()
        self.tree = ZkTree(self.clock)
        self.admin = InMemoryZk(self.tree, session_id=99)
        self.admin.ensure_persistent_paths()
        settings = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181",
                    "auto.leader.rebalance.enable": "false"}
        settings.update({k.replace("_", "."): str(v).lower() for k, v in config.items()})
        self.config = BrokerConfig.from_dict(settings)
        for broker_id in brokers:
            self.start_broker(broker_id)

    @staticmethod
    def broker_session(broker_id: int) -> int:
        return 1000 + broker_id

    def start_broker(self, broker_id: int) -> None:
        zk = InMemoryZk(self.tree, self.broker_session(broker_id))
        zk.register_broker(zk_schema.BrokerRegistration.plaintext(broker_id, "127.0.0.1",
                                                                   9000 + broker_id))

    def kill_broker(self, broker_id: int) -> None:
        self.tree.expire(self.broker_session(broker_id))

    def controller(self, broker_id: int = 1):
        """A started controller (elected if /controller is free), its fake ZooKeeper face."""
        from kafkalite.controller.controller import Controller

        zk = InMemoryZk(self.tree, session_id=broker_id)
        deferred_zk = DeferredZk(zk)
        controller = Controller(broker_id, zk, deferred_zk, self.clock, self.config,
                                channel_manager_factory=RecordingChannels)
        controller.start()
        self.settle()
        return controller, deferred_zk

    def settle(self, rounds: int = 100) -> None:
        """Deliver everything due now (watch callbacks), until nothing is left."""
        for _ in range(rounds):
            due = [c for c in self.clock.getDelayedCalls()
                   if c.getTime() <= self.clock.seconds()]
            if not due:
                return
            self.clock.advance(0)
        raise AssertionError("the fake ensemble did not settle")

    def state(self, topic: str, partition: int):
        return self.admin.get_partition_state(topic, partition)

    def set_state(self, topic, partition, leader, isr, leader_epoch=0, controller_epoch=1):
        """Write a partition state as a leader (or an earlier controller) would."""
        state = zk_schema.PartitionState(leader, leader_epoch, controller_epoch, tuple(isr))
        current = self.admin.get_partition_state(topic, partition)
        if current is None:
            self.admin.create_partition_state(topic, partition, state)
        else:
            self.admin.set_partition_state(topic, partition, state, current.zk_version)

    def bump_controller_epoch(self) -> None:
        """Another broker became controller (as far as /controller_epoch tells)."""
        epoch = self.admin.get_controller_epoch()
        self.admin.set_data(zk_schema.CONTROLLER_EPOCH_PATH, str(epoch.epoch + 1).encode())
