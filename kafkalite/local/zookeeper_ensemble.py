"""A ZooKeeper ensemble (quorum) of N ``QuorumPeerMain`` JVMs, for fault tests.

Each node gets a work directory with ``data/myid`` and a ``zoo.cfg`` that lists every member as
``server.<myid>=host:peerPort:electionPort``. By default all nodes share the loopback address on
free ports; with ``placements`` (one :class:`~kafkalite.local.procs.Placement` per node) each
node binds an address of its own and runs behind a command prefix, e.g. in a network namespace of
``kafkalite.testing.faults`` where links to it can be cut; the nodes then use ZooKeeper's usual
ports 2181/2888/3888, each on its own address.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Sequence

from kafkalite.local.ports import LOCALHOST, free_ports
from kafkalite.local.procs import Placement
from kafkalite.local.zookeeper_install import QUORUM_MAIN, ZooKeeperInstall, \
    find_zookeeper_install
from kafkalite.local.zookeeper_process import ZooKeeperProcess, four_letter_word, server_config

log = logging.getLogger(__name__)

STANDARD_PORTS = (2181, 2888, 3888)     # client, quorum (peer), leader election


@dataclass(frozen=True)
class EnsembleMember:
    """One node's identity in the quorum: myid and the addresses the others reach it at."""

    myid: int
    host: str
    client_port: int
    peer_port: int
    election_port: int

    @property
    def server_line(self) -> tuple[str, str]:
        return f"server.{self.myid}", f"{self.host}:{self.peer_port}:{self.election_port}"


def plan_members(hosts: Sequence[str]) -> list[EnsembleMember]:
    """Members for nodes on ``hosts`` (one per node): ZooKeeper's standard ports when every node
    has an address of its own, distinct free ports when addresses repeat (all on loopback)."""
    if len(set(hosts)) == len(hosts):
        return [EnsembleMember(i + 1, host, *STANDARD_PORTS) for i, host in enumerate(hosts)]
    ports = free_ports(3 * len(hosts), hosts[0])
    return [EnsembleMember(i + 1, host, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2])
            for i, host in enumerate(hosts)]


def ensemble_configs(members: Sequence[EnsembleMember], *, extra: dict[str, Any] | None = None,
                     **overrides: Any) -> list[dict[str, Any]]:
    """zoo.cfg settings (without dataDir) of every member, in the order of ``members``.

    Every node lists every member (``server.N`` lines) and takes part in the quorum only
    (``standaloneEnabled=false``); limits are short so a test sees elections within seconds.
    ``overrides`` use ZooKeeper's names; ``extra`` is merged last.
    """
    servers = dict(member.server_line for member in members)
    configs = []
    for member in members:
        cfg = server_config(member.client_port, member.host, **overrides)
        cfg.update({"initLimit": 20, "syncLimit": 10, "standaloneEnabled": "false",
                    "reconfigEnabled": "false", "cnxTimeout": 1000, **servers})
        cfg.update(extra or {})
        configs.append(cfg)
    return configs


class ZooKeeperEnsemble:
    """``size`` ZooKeeper nodes forming one quorum.

    Nodes are indexed 0..size-1 (their myid is index+1). ``kill(i)`` / ``start(i)`` / ``stop(i)`` /
    ``pause(i)`` / ``resume(i)`` act on one node; without an index, ``start()`` and ``stop()`` act
    on all. ``placements``: where each node runs (see the module docstring).
    """

    def __init__(self, size: int = 3, workdir: str | os.PathLike[str] | None = None, *,
                 host: str = LOCALHOST, install: ZooKeeperInstall | None = None,
                 tick_time_ms: int = 500, min_session_timeout_ms: int = 1000,
                 max_session_timeout_ms: int = 60_000, startup_timeout_s: float = 90.0,
                 extra_config: dict[str, Any] | None = None,
                 placements: Sequence[Placement] | None = None,
                 die_with_parent: int | None = None):
        if size < 1:
            raise ValueError("an ensemble needs at least one node")
        if placements is not None and len(placements) != size:
            raise ValueError(f"{len(placements)} placements for {size} nodes")
        self.size = size
        self.install = install or find_zookeeper_install()
        self._own_workdir = workdir is None
        self.workdir = (tempfile.mkdtemp(prefix="kafkalite-zk-ensemble-") if workdir is None
                        else os.path.abspath(os.fspath(workdir)))
        self.startup_timeout_s = startup_timeout_s
        self.placements = list(placements or [Placement(host)] * size)
        self.members = plan_members([p.host for p in self.placements])
        configs = ensemble_configs(self.members, extra=extra_config, tickTime=tick_time_ms,
                                   minSessionTimeout=min_session_timeout_ms,
                                   maxSessionTimeout=max_session_timeout_ms)
        self.nodes: list[ZooKeeperProcess] = []
        for i, (member, placement, cfg) in enumerate(zip(self.members, self.placements,
                                                         configs)):
            self.nodes.append(ZooKeeperProcess(
                workdir=os.path.join(self.workdir, f"node{member.myid}"), host=member.host,
                port=member.client_port, install=self.install, main_class=QUORUM_MAIN,
                config=cfg, myid=member.myid,
                name=f"ZooKeeper node {i} (myid {member.myid}) "
                     f"{member.host}:{member.client_port}",
                startup_timeout_s=startup_timeout_s, die_with_parent=die_with_parent,
                command_prefix=placement.command_prefix))

    # ------------------------------------------------------------------------ what tests read

    @property
    def connect_string(self) -> str:
        return ",".join(n.connect_string for n in self.nodes)

    @property
    def client_ports(self) -> list[int]:
        return [m.client_port for m in self.members]

    def node_connect_string(self, i: int) -> str:
        return self.nodes[i].connect_string

    @property
    def log_paths(self) -> list[str]:
        return [n.log_path for n in self.nodes]

    def running(self, i: int) -> bool:
        return self.nodes[i].running

    def pid(self, i: int) -> int | None:
        return self.nodes[i].pid

    def log_tail(self, n: int = 50) -> str:
        return "\n".join(f"--- node {i} ({node.log_path}) ---\n{node.log_tail(n)}"
                         for i, node in enumerate(self.nodes))

    def describe(self) -> str:
        return f"local ZooKeeper ensemble {self.connect_string} ({self.install.location})"

    def mode(self, i: int) -> str | None:
        """"leader", "follower", "standalone", or None when the node does not answer (a node
        without a quorum answers srvr with an error, hence None too)."""
        node = self.nodes[i]
        try:
            answer = four_letter_word(node.host, node.port, "srvr", timeout=1.0)
        except OSError:
            return None
        match = re.search(r"^Mode:\s*(\S+)", answer, re.MULTILINE)
        return match.group(1) if match else None

    def leader(self) -> int | None:
        """Index of the current leader, or None."""
        for i in range(self.size):
            if self.running(i) and self.mode(i) == "leader":
                return i
        return None

    def serving(self) -> list[int]:
        """Indexes of the nodes that serve clients now (a leader or a follower of one)."""
        return [i for i in range(self.size)
                if self.running(i) and not self.nodes[i].paused
                and self.mode(i) in ("leader", "follower")]

    # ------------------------------------------------------------------------------ lifecycle

    def start(self, i: int | None = None, timeout_s: float | None = None) -> "ZooKeeperEnsemble":
        """Start every node (i None) or node ``i``, and wait until it serves clients (which a
        quorum member only does once it has a quorum)."""
        timeout_s = self.startup_timeout_s if timeout_s is None else timeout_s
        targets = range(self.size) if i is None else [i]
        for idx in targets:
            self.nodes[idx].spawn()
        for idx in targets:
            self.nodes[idx].wait_serving(timeout_s)
        return self

    def spawn(self, i: int) -> None:
        """Start node ``i`` without waiting (alone it cannot serve until a quorum forms)."""
        self.nodes[i].spawn()

    def wait_for_quorum(self, timeout_s: float | None = None) -> None:
        """Wait until every running node serves clients."""
        for node in self.nodes:
            if node.running:
                node.wait_serving(timeout_s)

    def kill(self, i: int) -> None:
        self.nodes[i].kill()

    def pause(self, i: int) -> None:
        self.nodes[i].pause()

    def resume(self, i: int) -> None:
        self.nodes[i].resume()

    def stop(self, i: int | None = None, grace_s: float = 10.0) -> None:
        targets = range(self.size) if i is None else [i]
        for idx in targets:
            self.nodes[idx].stop(grace_s)

    def restart(self, i: int, timeout_s: float | None = None) -> None:
        self.nodes[i].stop()
        self.start(i, timeout_s)

    def cleanup(self) -> None:
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "ZooKeeperEnsemble":
        return self.start()

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.cleanup()
        else:
            self.stop()
            log.warning("ZooKeeper ensemble work directory kept for inspection: %s", self.workdir)
