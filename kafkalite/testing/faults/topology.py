"""The fault network's layout, as data: names, addresses, and the ``ip`` commands that build it.

Pure: nothing here runs a command (``network.py`` does), so unit tests check the exact commands.

Layout of one run (``run`` is a short random id, so a run that crashed cannot collide with the
next one; leftovers are removed by the next run, see ``network.py``)::

    root namespace (the test process)          hub namespace  klf-<run>-hub
      klf<run>  10.77.N.1/24  ── veth ── uplink ┐
                                              ├─ bridge br0 ── nft table bridge kafkalite_faults
    klf-<run>-b1   eth0 10.77.N.10 ── veth ── b1 ┤
    klf-<run>-zk1  eth0 10.77.N.11 ── veth ── zk1┘

The bridge lives in a namespace of its own rather than in the root namespace: with
``br_netfilter`` loaded (Docker loads it), bridged frames pass the root namespace's iptables
FORWARD chain, whose policy Docker sets to DROP -- nodes could not reach each other. A fresh
namespace has no such rules, and deleting it removes the bridge, every veth and the nft table at
once. The root namespace keeps one veth end with the subnet's first address: the test process
reaches every node through the bridge without routing (nothing is forwarded in the root
namespace).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Iterable

HOST = "host"                 # the node name of the root namespace's end (the test process)
SUPERNET = ipaddress.IPv4Network("10.77.0.0/16")
FIRST_NODE_HOST_NUMBER = 10   # nodes get .10, .11, ... (.1 is the host)
NAMESPACE_PREFIX = "klf-"
BRIDGE = "br0"
UPLINK = "uplink"             # the hub's end of the host's veth
NODE_DEVICE = "eth0"          # a node's end of its veth, inside its namespace
MAX_IFNAME = 15               # Linux IFNAMSIZ - 1

_NODE_NAME = re.compile(r"^[a-z][a-z0-9-]{0,14}$")
_RUN_ID = re.compile(r"^[0-9a-f]{6}$")


class TopologyError(ValueError):
    pass


def check_node_name(name: str) -> str:
    """Node names become interface names in the hub: short, lower-case, not ``host``/``up``."""
    if not _NODE_NAME.match(name) or name in (HOST, UPLINK, BRIDGE):
        raise TopologyError(f"node name {name!r}: use 1-15 characters [a-z0-9-] starting with a "
                            f"letter, not {HOST!r}, {UPLINK!r} or {BRIDGE!r}")
    return name


@dataclass(frozen=True)
class RunNames:
    """The names one run uses; all of them carry the run id."""

    run_id: str

    def __post_init__(self):
        if not _RUN_ID.match(self.run_id):
            raise TopologyError(f"run id {self.run_id!r}: expected 6 hex digits")

    @property
    def hub(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.run_id}-hub"

    @property
    def host_device(self) -> str:
        return f"klf{self.run_id}"          # in the root namespace: 9 characters

    def namespace(self, node: str) -> str:
        return f"{NAMESPACE_PREFIX}{self.run_id}-{check_node_name(node)}"

    def owns(self, namespace: str) -> bool:
        return namespace.startswith(f"{NAMESPACE_PREFIX}{self.run_id}-")


def run_id_of(namespace: str) -> str | None:
    """The run id in one of our namespace names, or None for anybody else's namespace."""
    match = re.match(rf"^{NAMESPACE_PREFIX}([0-9a-f]{{6}})-", namespace)
    return match.group(1) if match else None


def pick_subnet(used: Iterable[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """The first /24 of 10.77.0.0/16 that overlaps nothing in ``used`` (routes and addresses
    of the root namespace: another run, a VPN, Docker)."""
    used = list(used)
    for candidate in SUPERNET.subnets(new_prefix=24):
        if not any(candidate.overlaps(net) for net in used):
            return candidate
    raise TopologyError(f"every /24 of {SUPERNET} is in use: remove stale klf* links "
                        "(`ip -br link | grep klf`) or free one")


def host_address(subnet: ipaddress.IPv4Network) -> str:
    return str(subnet.network_address + 1)


def node_address(subnet: ipaddress.IPv4Network, index: int) -> str:
    """The address of the ``index``-th node (0-based) added to the network."""
    number = FIRST_NODE_HOST_NUMBER + index
    if number >= subnet.num_addresses - 1:
        raise TopologyError(f"no address left in {subnet} for node #{index}")
    return str(subnet.network_address + number)


def hub_commands(names: RunNames, subnet: ipaddress.IPv4Network) -> list[list[str]]:
    """Create the hub namespace, its bridge, and the host's veth into it."""
    hub = names.hub
    return [
        ["ip", "netns", "add", hub],
        ["ip", "-n", hub, "link", "set", "dev", "lo", "up"],
        ["ip", "-n", hub, "link", "add", "name", BRIDGE, "type", "bridge"],
        ["ip", "-n", hub, "link", "set", "dev", BRIDGE, "up"],
        ["ip", "link", "add", "name", names.host_device, "type", "veth", "peer", "name", UPLINK,
         "netns", hub],
        ["ip", "-n", hub, "link", "set", "dev", UPLINK, "master", BRIDGE, "up"],
        ["ip", "addr", "add", f"{host_address(subnet)}/{subnet.prefixlen}", "dev",
         names.host_device],
        ["ip", "link", "set", "dev", names.host_device, "up"],
    ]


def node_commands(names: RunNames, node: str, address: str,
                  subnet: ipaddress.IPv4Network) -> list[list[str]]:
    """Create a node's namespace and plug it into the bridge with ``address``."""
    namespace, hub = names.namespace(node), names.hub
    return [
        ["ip", "netns", "add", namespace],
        ["ip", "-n", namespace, "link", "set", "dev", "lo", "up"],
        # created inside the hub (so its name cannot clash with the root namespace's devices),
        # the peer moved straight into the node's namespace
        ["ip", "-n", hub, "link", "add", "name", node, "type", "veth", "peer", "name", NODE_DEVICE,
         "netns", namespace],
        ["ip", "-n", hub, "link", "set", "dev", node, "master", BRIDGE, "up"],
        ["ip", "-n", namespace, "addr", "add", f"{address}/{subnet.prefixlen}", "dev",
         NODE_DEVICE],
        ["ip", "-n", namespace, "link", "set", "dev", NODE_DEVICE, "up"],
    ]


def exec_prefix(names: RunNames, node: str) -> tuple[str, ...]:
    """What runs a command inside ``node``'s namespace."""
    return ("ip", "netns", "exec", names.namespace(node))


def teardown_commands(names: RunNames, namespaces: Iterable[str]) -> list[list[str]]:
    """Delete the node namespaces, the hub (its bridge, veths and nft table go with it) and the
    host's veth end (gone already with its peer; deleted again in case the hub was not there)."""
    commands = [["ip", "netns", "delete", ns] for ns in sorted(namespaces) if ns != names.hub]
    commands.append(["ip", "netns", "delete", names.hub])
    commands.append(["ip", "link", "delete", "dev", names.host_device])
    return commands
