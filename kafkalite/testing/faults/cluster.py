"""A ZooKeeper ensemble and kafkalite brokers on a FaultNetwork, with faults by node name.

Node names: ``zk1`` .. ``zkN`` for ZooKeeper nodes (myid N), ``b<id>`` for broker ``<id>``, ``host``
for the test process. Wherever a node is named, a broker id (int) works too, and two group names:
``"zookeeper"`` (every ZooKeeper node) and ``"brokers"`` (every broker).

- partitions: ``cut(a, b, both=True)``, ``isolate(node)``, ``heal()`` (``FaultNetwork``'s);
- process faults: ``kill``, ``pause``, ``resume``, ``restart`` (a broker through ``LocalCluster``,
  a ZooKeeper node through ``ZooKeeperEnsemble``: one implementation of each);
- what ZooKeeper says: ``registered_brokers()``, ``controller_id()``, ``controller_epoch()``,
  ``partition_state(topic, p)`` (read by a client on the host); ``broker_metadata(id)``: what a
  broker itself says.

``start_ensemble(network, workdir)`` starts the ZooKeeper nodes, ``FaultCluster(...).start()``
the brokers on a chroot of it. ``restore()`` undoes every fault (links, paused and killed
processes) and waits until the ensemble serves again: fixtures call it after each test.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from typing import Any, Iterable

from kafkalite.local.cluster import LocalCluster, wait_until
from kafkalite.testing.faults.network import FaultNetwork
from kafkalite.testing.faults.topology import HOST
from kafkalite.local.zookeeper import unique_chroot
from kafkalite.local.zookeeper_ensemble import ZooKeeperEnsemble

log = logging.getLogger(__name__)

ZOOKEEPER = "zookeeper"
BROKERS = "brokers"

# short enough that a test sees sessions expire and leaders move within seconds, long enough
# that a loaded 2-core machine does not expire sessions by itself
DEFAULT_BROKER_SETTINGS = {
    "zookeeper.session.timeout.ms": 5000,
    "replica.lag.time.max.ms": 4000,
    "controlled.shutdown.retry.backoff.ms": 500,
    "replica.fetch.backoff.ms": 200,
    "auto.leader.rebalance.enable": "false",
}


def zookeeper_node(index: int) -> str:
    return f"zk{index + 1}"


def broker_node(broker_id: int) -> str:
    return f"b{broker_id}"


def start_ensemble(network: FaultNetwork, workdir: str, size: int = 3,
                   **ensemble_options: Any) -> ZooKeeperEnsemble:
    """``size`` ZooKeeper nodes, ``zk1`` .. ``zk<size>``, each in its own namespace, started."""
    placements = [network.placement(zookeeper_node(i)) for i in range(size)]
    ensemble = ZooKeeperEnsemble(size, workdir, placements=placements,
                                 die_with_parent=signal.SIGTERM, **ensemble_options)
    try:
        ensemble.start()
    except BaseException:
        ensemble.stop()
        raise
    return ensemble


class FaultCluster:
    """Brokers (a ``LocalCluster``, ``.kafka``) on a chroot of ``ensemble``, every process on
    ``network``. ``overrides`` are broker settings with Kafka's names."""

    def __init__(self, network: FaultNetwork, ensemble: ZooKeeperEnsemble, workdir: str,
                 num_brokers: int = 3, overrides: dict[str, Any] | None = None,
                 chroot: str | None = None):
        self.network = network
        self.zookeeper = ensemble
        self.chroot = chroot or unique_chroot("kl-faults")
        settings = {**DEFAULT_BROKER_SETTINGS, **(overrides or {})}
        self.kafka = LocalCluster(
            f"{ensemble.connect_string}{self.chroot}", num_brokers, workdir=workdir,
            overrides=settings, placement=lambda broker_id: network.placement(
                broker_node(broker_id)),
            die_with_parent=signal.SIGKILL)
        self._admin: Any = None

    @property
    def zk_connect(self) -> str:
        return self.kafka.zk_connect

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.bootstrap_servers

    def start(self) -> "FaultCluster":
        from kafkalite.zk import ZkClient

        admin = ZkClient(self.zookeeper.connect_string, session_timeout_ms=30_000).start()
        try:
            admin.ensure_path(self.chroot)
        finally:
            admin.stop()
        self.kafka.start()
        return self

    # --------------------------------------------------------------------------------- names

    def nodes(self, what: str | int | Iterable[str | int]) -> list[str]:
        """Node names for a name, a broker id, a group name, or several of those."""
        if isinstance(what, int):
            return [broker_node(what)]
        if isinstance(what, str):
            if what == ZOOKEEPER:
                return [zookeeper_node(i) for i in range(self.zookeeper.size)]
            if what == BROKERS:
                return [broker_node(b) for b in self.kafka.brokers]
            return [what]
        return [name for item in what for name in self.nodes(item)]

    def _target(self, node: str | int) -> tuple[str, int]:
        (name,) = self.nodes(node)
        if name.startswith("zk"):
            return ZOOKEEPER, int(name[2:]) - 1
        if name.startswith("b"):
            return BROKERS, int(name[1:])
        raise ValueError(f"{node!r} names no process (zk<N> or b<id>)")

    # ---------------------------------------------------------------------------- partitions

    def cut(self, a: Any, b: Any, *, both: bool = True) -> None:
        self.network.cut(self.nodes(a), self.nodes(b), both=both)

    def isolate(self, node: str | int, *, from_host: bool = False) -> None:
        for name in self.nodes(node):
            self.network.isolate(name, from_host=from_host)

    def heal(self) -> None:
        self.network.heal()

    # ------------------------------------------------------------------------ process faults

    def kill(self, node: str | int) -> None:
        """kill -9."""
        kind, index = self._target(node)
        self.zookeeper.kill(index) if kind == ZOOKEEPER else self.kafka.kill(index)

    def pause(self, node: str | int) -> None:
        """SIGSTOP."""
        kind, index = self._target(node)
        self.zookeeper.pause(index) if kind == ZOOKEEPER else self.kafka.pause(index)

    def resume(self, node: str | int) -> None:
        """SIGCONT."""
        kind, index = self._target(node)
        self.zookeeper.resume(index) if kind == ZOOKEEPER else self.kafka.resume(index)

    def restart(self, node: str | int, wait: bool = True) -> None:
        """Start a killed (or running: stopped first) process again; ``wait``: until it serves
        (a ZooKeeper node serves only with a quorum)."""
        kind, index = self._target(node)
        if kind == BROKERS:
            self.kafka.restart(index, wait=wait)
        elif wait:
            self.zookeeper.restart(index)
        else:
            self.zookeeper.stop(index)
            self.zookeeper.spawn(index)

    # ---------------------------------------------------------------------- what ZooKeeper says

    def _zk(self) -> Any:
        from kafkalite.zk import ZkClient

        if self._admin is None:
            self._admin = ZkClient(self.zk_connect, session_timeout_ms=30_000,
                                   connection_timeout_s=30).start()
        return self._admin

    def registered_brokers(self) -> list[int]:
        """The broker ids registered in ZooKeeper now (their sessions are alive)."""
        return self._zk().get_broker_ids()

    def controller_id(self) -> int | None:
        """The controller according to ZooKeeper's /controller (None: no controller)."""
        return self._zk().get_controller_id()

    def controller_epoch(self) -> int | None:
        """/controller_epoch: bumped by every controller election."""
        epoch = self._zk().get_controller_epoch()
        return None if epoch is None else epoch.epoch

    def partition_state(self, topic: str, partition: int) -> Any:
        """The partition's leader/ISR znode (leader, leader_epoch, isr, ...)."""
        return self._zk().get_partition_state(topic, partition)

    def broker_metadata(self, broker_id: int, topics: list[str] | None = None,
                        timeout_s: float = 3.0) -> Any:
        """A Metadata answer from broker ``broker_id`` itself (its own view)."""
        return self.kafka.metadata(topics, brokers=[broker_id], timeout_s=timeout_s)

    # ------------------------------------------------------------------------------ afterwards

    def restore(self, timeout_s: float = 90.0) -> None:
        """Undo every fault: heal all links, resume paused processes, start killed ZooKeeper
        nodes, and wait until every node serves again."""
        self.network.heal()
        for broker in self.kafka.brokers.values():
            if broker.paused and broker.running:
                self.kafka.resume(broker.broker_id)
        for index, node in enumerate(self.zookeeper.nodes):
            if node.paused:
                self.zookeeper.resume(index)
            if not node.running:
                self.zookeeper.spawn(index)
        wait_until(lambda: len(self.zookeeper.serving()) == self.zookeeper.size, timeout_s,
                   "every ZooKeeper node serving again", interval_s=0.2,
                   on_timeout=lambda: self.zookeeper.log_tail(20))

    def describe(self) -> str:
        """Logs and rules, for a failed test's report."""
        parts = [self.network.describe(), self.network.rules_text(), self.kafka.describe_logs(),
                 self.zookeeper.log_tail(30)]
        return "\n".join(p for p in parts if p)

    def stop(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.stop()
            self._admin = None
        self.kafka.stop()


__all__ = ["FaultCluster", "start_ensemble", "zookeeper_node", "broker_node", "ZOOKEEPER",
           "BROKERS", "HOST", "DEFAULT_BROKER_SETTINGS"]
