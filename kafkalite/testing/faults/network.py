"""Network partitions between processes on one machine: network namespaces, a bridge, nftables.

``FaultNetwork().start()`` builds the layout described in ``topology.py``; ``add_node(name)``
gives a node its namespace and address; ``placement(name)`` is what ``LocalCluster`` and the
ZooKeeper launchers take to run a process there. ``cut(a, b)``, ``isolate(node)`` and ``heal()``
rewrite the nft table (``nft.py``) atomically. ``close()`` kills whatever still runs in the
namespaces and deletes them, the bridge and the rules with them.

A run records itself (owner pid and start time) in ``/run/kafkalite-faults/<run>.json`` before it
creates anything, under a lock; every ``start()`` first removes the namespaces of runs whose owner
is gone (a crashed or killed test session), so leftovers never pile up or block a subnet.

Needs Linux, root, ``ip`` (iproute2) and ``nft`` (nftables); ``unavailable_reason()`` says what is
missing, and ``start()`` raises ``FaultNetworkUnavailable`` with the reason when a command fails
(e.g. ``ip netns add`` in a container without CAP_SYS_ADMIN).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import ipaddress
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Iterable, Sequence

from kafkalite.testing.faults import nft, topology
from kafkalite.testing.faults.topology import HOST, RunNames
from kafkalite.local.procs import Placement, pid_alive, pid_start_time

log = logging.getLogger(__name__)

STATE_DIR = "/run/kafkalite-faults"
COMMAND_TIMEOUT_S = 30


class FaultNetworkUnavailable(RuntimeError):
    """Network namespaces or nftables cannot be used here (the message says why)."""


class FaultNetworkError(RuntimeError):
    """A command that changes the fault network failed (the message has its output)."""


def unavailable_reason() -> str | None:
    """Why fault networks cannot work here, or None (a cheap check: no namespace is made)."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux only (this is {sys.platform})"
    if os.geteuid() != 0:
        return "network namespaces and nftables need root (`ip netns add` as uid 0)"
    for tool, package in (("ip", "iproute2"), ("nft", "nftables")):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install {package})"
    return None


def _run(argv: Sequence[str], *, input_text: str | None = None, check: bool = True,
         timeout_s: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
    result = subprocess.run(list(argv), input=input_text, capture_output=True, text=True,
                            timeout=timeout_s)
    if check and result.returncode != 0:
        raise FaultNetworkError(f"`{' '.join(argv)}` failed ({result.returncode}): "
                                f"{(result.stderr or result.stdout).strip()}")
    return result


def _root_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network the root namespace routes or holds an address in."""
    networks = []
    routes = json.loads(_run(["ip", "-j", "-4", "route", "show", "table", "all"]).stdout or "[]")
    for route in routes:
        dst = route.get("dst", "default")
        if dst != "default" and route.get("type", "unicast") in ("unicast", "local"):
            with contextlib.suppress(ValueError):
                networks.append(ipaddress.IPv4Network(dst, strict=False))
    for link in json.loads(_run(["ip", "-j", "-4", "addr", "show"]).stdout or "[]"):
        for info in link.get("addr_info", []):
            with contextlib.suppress(ValueError, KeyError):
                networks.append(ipaddress.IPv4Network(
                    f"{info['local']}/{info['prefixlen']}", strict=False))
    return [n for n in networks if not n.is_loopback]


def _namespaces() -> list[str]:
    out = _run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _kill_namespace_processes(namespace: str) -> list[int]:
    """SIGKILL every process in ``namespace`` (our brokers and JVMs; nothing else lives there)."""
    pids = [int(p) for p in _run(["ip", "netns", "pids", namespace], check=False).stdout.split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def _teardown(names: RunNames, namespaces: Iterable[str]) -> None:
    for namespace in namespaces:
        _kill_namespace_processes(namespace)
    for command in topology.teardown_commands(names, namespaces):
        _run(command, check=False)


@contextlib.contextmanager
def _state_lock(state_dir: str):
    os.makedirs(state_dir, exist_ok=True)
    with open(os.path.join(state_dir, "lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def collect_leftovers(state_dir: str = STATE_DIR) -> list[str]:
    """Delete the namespaces of runs whose owner process is gone; the run ids removed.
    Call with the state lock held (``start`` does)."""
    removed = []
    for entry in sorted(os.listdir(state_dir)) if os.path.isdir(state_dir) else []:
        if not entry.endswith(".json"):
            continue
        path = os.path.join(state_dir, entry)
        try:
            with open(path) as fh:
                state = json.load(fh)
            run_id = state["run_id"]
            alive = pid_alive(state["pid"], state.get("start_time"))
        except (OSError, ValueError, KeyError):
            run_id, alive = entry[:-5], False
        if alive:
            continue
        with contextlib.suppress(topology.TopologyError):
            names = RunNames(run_id)
            _teardown(names, [ns for ns in _namespaces() if names.owns(ns)])
            removed.append(run_id)
        with contextlib.suppress(OSError):
            os.unlink(path)
    if removed:
        log.warning("removed the fault networks of finished runs: %s", ", ".join(removed))
    return removed


@dataclass(frozen=True)
class Node:
    name: str
    namespace: str | None      # None for the host (the root namespace)
    address: str


_OPEN: "weakref.WeakSet[FaultNetwork]" = weakref.WeakSet()


@atexit.register
def _close_open_networks() -> None:
    for network in list(_OPEN):
        with contextlib.suppress(Exception):
            network.close()


class FaultNetwork:
    """One run's namespaces, bridge and cut rules. See the module docstring."""

    def __init__(self, state_dir: str = STATE_DIR, run_id: str | None = None):
        self.state_dir = state_dir
        self.names = RunNames(run_id or secrets.token_hex(3))
        self.subnet: ipaddress.IPv4Network | None = None
        self.nodes: dict[str, Node] = {}
        self.links: frozenset[nft.Link] = frozenset()
        self._lock = threading.Lock()
        self._started = False

    @property
    def run_id(self) -> str:
        return self.names.run_id

    @property
    def _state_path(self) -> str:
        return os.path.join(self.state_dir, f"{self.run_id}.json")

    # ------------------------------------------------------------------------------ lifecycle

    def start(self) -> "FaultNetwork":
        reason = unavailable_reason()
        if reason is not None:
            raise FaultNetworkUnavailable(reason)
        with _state_lock(self.state_dir):
            collect_leftovers(self.state_dir)
            self.subnet = topology.pick_subnet(_root_networks())
            with open(self._state_path, "w") as fh:
                json.dump({"run_id": self.run_id, "pid": os.getpid(),
                           "start_time": pid_start_time(os.getpid()),
                           "subnet": str(self.subnet)}, fh)
            _OPEN.add(self)
            self._started = True
            try:
                for command in topology.hub_commands(self.names, self.subnet):
                    _run(command)
                self._apply_rules(frozenset())
            except (FaultNetworkError, OSError, subprocess.TimeoutExpired) as exc:
                self.close()
                raise FaultNetworkUnavailable(
                    f"could not build a network namespace with a bridge and nftables here: "
                    f"{exc}") from exc
        self.nodes[HOST] = Node(HOST, None, topology.host_address(self.subnet))
        log.info("fault network %s on %s (hub namespace %s)", self.run_id, self.subnet,
                 self.names.hub)
        return self

    def close(self) -> None:
        """Kill what still runs in the namespaces and delete them (the bridge, the veths and the
        rules go with them). Idempotent."""
        with self._lock:
            if not self._started:
                return
            self._started = False
            namespaces = {self.names.hub} | {ns for ns in _namespaces() if self.names.owns(ns)}
            _teardown(self.names, namespaces)
            with contextlib.suppress(OSError):
                os.unlink(self._state_path)
            _OPEN.discard(self)

    def __enter__(self) -> "FaultNetwork":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------------------------- nodes

    def add_node(self, name: str) -> Node:
        """The node called ``name``, created (namespace, veth, address) on first use."""
        with self._lock:
            if name in self.nodes:
                return self.nodes[name]
            if not self._started:
                raise FaultNetworkError("start() the network before adding nodes")
            address = topology.node_address(self.subnet, len(self.nodes) - 1)
            for command in topology.node_commands(self.names, name, address, self.subnet):
                _run(command)
            node = Node(name, self.names.namespace(name), address)
            self.nodes[name] = node
            return node

    def address(self, name: str) -> str:
        return self.nodes[name].address

    def placement(self, name: str) -> Placement:
        """Where a process of node ``name`` runs (the node is created if needed)."""
        node = self.add_node(name)
        return Placement(node.address, topology.exec_prefix(self.names, name))

    def run_in(self, name: str, argv: Sequence[str], timeout_s: float = COMMAND_TIMEOUT_S,
               ) -> subprocess.CompletedProcess:
        """Run ``argv`` inside node ``name``'s namespace (the host: here), wait, return it."""
        prefix = () if name == HOST else topology.exec_prefix(self.names, name)
        return subprocess.run([*prefix, *argv], capture_output=True, text=True,
                               timeout=timeout_s)

    def can_connect(self, source: str, target: str, port: int, timeout_s: float = 1.0) -> bool:
        """Whether a TCP connection from node ``source`` to node ``target``:``port`` completes
        within ``timeout_s`` (a refused connection counts as reachable: packets went both ways)."""
        address = self.address(target)
        if source == HOST:
            return _connects(address, port, timeout_s)
        code = ("import socket,sys\n"
                f"s=socket.socket(); s.settimeout({timeout_s})\n"
                f"try: s.connect(({address!r},{port})); sys.exit(0)\n"
                "except ConnectionRefusedError: sys.exit(0)\n"
                "except OSError: sys.exit(1)\n")
        return self.run_in(source, [sys.executable, "-c", code],
                           timeout_s=timeout_s + 10).returncode == 0

    # ---------------------------------------------------------------------------- partitions

    def cut(self, a: str | Iterable[str], b: str | Iterable[str], *, both: bool = True) -> None:
        """Drop packets from every node of ``a`` to every node of ``b`` (and back, if ``both``);
        cuts add up until ``heal``."""
        self._apply_rules(self.links | nft.directed(a, b, both))

    def isolate(self, name: str, *, from_host: bool = False) -> None:
        """Cut ``name`` from every other node, both ways. The host (the test process, the
        observer) keeps its link unless ``from_host``."""
        others = [n for n in self.nodes if n != name and (from_host or n != HOST)]
        self.cut(name, others)

    def heal(self, a: str | Iterable[str] | None = None,
             b: str | Iterable[str] | None = None) -> None:
        """Restore every link, or only those between ``a`` and ``b`` (both directions)."""
        if a is None:
            self._apply_rules(frozenset())
        else:
            self._apply_rules(self.links - nft.directed(a, b if b is not None else
                                                        list(self.nodes), True))

    def _apply_rules(self, links: Iterable[nft.Link]) -> None:
        links = frozenset(links)
        addresses = {name: node.address for name, node in self.nodes.items()}
        script = nft.ruleset(links, addresses)
        _run(["ip", "netns", "exec", self.names.hub, "nft", "-f", "-"], input_text=script)
        self.links = links
        if links:
            log.info("fault network %s: cut %s", self.run_id,
                     ", ".join(f"{s}->{t}" for s, t in sorted(links)))
        else:
            log.info("fault network %s: all links healed", self.run_id)

    def rules_text(self) -> str:
        """The table as nft lists it now (with packet counters), for failure reports."""
        return _run(["ip", "netns", "exec", self.names.hub, "nft", "list", "table", nft.FAMILY,
                     nft.TABLE], check=False).stdout

    def describe(self) -> str:
        nodes = ", ".join(f"{n.name}={n.address}" for n in self.nodes.values())
        return f"fault network {self.run_id} {self.subnet}: {nodes}"


def _connects(address: str, port: int, timeout_s: float) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout_s):
            return True
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
