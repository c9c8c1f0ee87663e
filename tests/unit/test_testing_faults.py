"""The fault toolkit's pure parts: names and ip commands, nft rules, command lines, zoo.cfg."""

from __future__ import annotations

import ipaddress

import pytest

from kafkalite.local.cluster import LocalCluster
from kafkalite.testing.faults import nft, topology
from kafkalite.testing.faults.cluster import FaultCluster
from kafkalite.testing.faults.topology import RunNames, TopologyError
from kafkalite.local.procs import Placement
from kafkalite.local.zookeeper_ensemble import EnsembleMember, ensemble_configs, plan_members
from kafkalite.local.zookeeper_install import QUORUM_MAIN, ZooKeeperInstall
from kafkalite.local.zookeeper_process import SERVER_DEFAULTS, ZooKeeperProcess

NAMES = RunNames("0a1b2c")
SUBNET = ipaddress.IPv4Network("10.77.3.0/24")


# ------------------------------------------------------------------------------------ topology

def test_names_carry_the_run_id_and_fit_interface_limits():
    assert NAMES.hub == "klf-0a1b2c-hub"
    assert NAMES.namespace("zk1") == "klf-0a1b2c-zk1"
    assert NAMES.host_device == "klf0a1b2c" and len(NAMES.host_device) <= topology.MAX_IFNAME
    assert NAMES.owns("klf-0a1b2c-b1") and not NAMES.owns("klf-ffffff-b1")
    assert topology.run_id_of("klf-0a1b2c-b12") == "0a1b2c"
    assert topology.run_id_of("docker-ns") is None and topology.run_id_of("klf-xyz-b1") is None


@pytest.mark.parametrize("bad", ["", "B1", "1b", "host", "uplink", "br0", "a" * 16, "b_1"])
def test_node_names_that_cannot_be_interfaces_are_refused(bad):
    with pytest.raises(TopologyError, match="node name"):
        NAMES.namespace(bad)


def test_run_ids_are_six_hex_digits():
    with pytest.raises(TopologyError):
        RunNames("../etc")


def test_subnet_avoids_every_network_in_use():
    used = [ipaddress.IPv4Network("10.77.0.0/24"), ipaddress.IPv4Network("10.77.1.0/25"),
            ipaddress.IPv4Network("192.0.2.0/24")]
    assert topology.pick_subnet(used) == ipaddress.IPv4Network("10.77.2.0/24")
    assert topology.pick_subnet([]) == ipaddress.IPv4Network("10.77.0.0/24")
    with pytest.raises(TopologyError, match="in use"):
        topology.pick_subnet([ipaddress.IPv4Network("10.0.0.0/8")])


def test_addresses():
    assert topology.host_address(SUBNET) == "10.77.3.1"
    assert [topology.node_address(SUBNET, i) for i in (0, 1, 5)] == [
        "10.77.3.10", "10.77.3.11", "10.77.3.15"]
    with pytest.raises(TopologyError):
        topology.node_address(SUBNET, 245)


def test_hub_commands():
    assert topology.hub_commands(NAMES, SUBNET) == [
        ["ip", "netns", "add", "klf-0a1b2c-hub"],
        ["ip", "-n", "klf-0a1b2c-hub", "link", "set", "dev", "lo", "up"],
        ["ip", "-n", "klf-0a1b2c-hub", "link", "add", "name", "br0", "type", "bridge"],
        ["ip", "-n", "klf-0a1b2c-hub", "link", "set", "dev", "br0", "up"],
        ["ip", "link", "add", "name", "klf0a1b2c", "type", "veth", "peer", "name", "uplink",
         "netns", "klf-0a1b2c-hub"],
        ["ip", "-n", "klf-0a1b2c-hub", "link", "set", "dev", "uplink", "master", "br0", "up"],
        ["ip", "addr", "add", "10.77.3.1/24", "dev", "klf0a1b2c"],
        ["ip", "link", "set", "dev", "klf0a1b2c", "up"],
    ]


def test_node_commands():
    ns, hub = "klf-0a1b2c-b1", "klf-0a1b2c-hub"
    assert topology.node_commands(NAMES, "b1", "10.77.3.10", SUBNET) == [
        ["ip", "netns", "add", ns],
        ["ip", "-n", ns, "link", "set", "dev", "lo", "up"],
        ["ip", "-n", hub, "link", "add", "name", "b1", "type", "veth", "peer", "name", "eth0",
         "netns", ns],
        ["ip", "-n", hub, "link", "set", "dev", "b1", "master", "br0", "up"],
        ["ip", "-n", ns, "addr", "add", "10.77.3.10/24", "dev", "eth0"],
        ["ip", "-n", ns, "link", "set", "dev", "eth0", "up"],
    ]
    assert topology.exec_prefix(NAMES, "b1") == ("ip", "netns", "exec", ns)


def test_teardown_deletes_nodes_then_hub_then_host_device():
    assert topology.teardown_commands(NAMES, ["klf-0a1b2c-zk1", "klf-0a1b2c-hub",
                                              "klf-0a1b2c-b1"]) == [
        ["ip", "netns", "delete", "klf-0a1b2c-b1"],
        ["ip", "netns", "delete", "klf-0a1b2c-zk1"],
        ["ip", "netns", "delete", "klf-0a1b2c-hub"],
        ["ip", "link", "delete", "dev", "klf0a1b2c"],
    ]


# ------------------------------------------------------------------------------------- nft

ADDRESSES = {"host": "10.77.3.1", "b1": "10.77.3.10", "zk1": "10.77.3.11", "zk2": "10.77.3.12"}


def test_directed_links():
    assert nft.directed("b1", ["zk1", "zk2"]) == {("b1", "zk1"), ("zk1", "b1"), ("b1", "zk2"),
                                                 ("zk2", "b1")}
    assert nft.directed("b1", "zk1", both=False) == {("b1", "zk1")}
    assert nft.directed(["b1", "zk1"], ["b1", "zk1"]) == {("b1", "zk1"), ("zk1", "b1")}


def test_ruleset_replaces_the_table_atomically_with_one_rule_per_direction():
    script = nft.ruleset({("zk1", "b1"), ("b1", "zk1")}, ADDRESSES)
    assert script == (
        "table bridge kafkalite_faults\n"
        "delete table bridge kafkalite_faults\n"
        "table bridge kafkalite_faults {\n"
        "    chain forward {\n"
        "        type filter hook forward priority filter; policy accept;\n"
        '        ip saddr 10.77.3.10 ip daddr 10.77.3.11 counter drop comment "b1 -> zk1"\n'
        '        ip saddr 10.77.3.11 ip daddr 10.77.3.10 counter drop comment "zk1 -> b1"\n'
        "    }\n"
        "}\n")


def test_healed_ruleset_keeps_an_empty_accepting_chain():
    script = nft.ruleset([], ADDRESSES)
    assert "drop" not in script and "policy accept" in script
    assert script.startswith("table bridge kafkalite_faults\ndelete table")
    assert nft.delete_script() == ("table bridge kafkalite_faults\n"
                                   "delete table bridge kafkalite_faults\n")


def test_ruleset_names_an_unknown_node():
    with pytest.raises(KeyError, match="no address for node 'b9'"):
        nft.ruleset([("b9", "zk1")], ADDRESSES)


# ------------------------------------------------------------------------------ command lines

def test_broker_command_runs_behind_the_placement_and_binds_its_address(tmp_path):
    placement = Placement("10.77.3.10", ("ip", "netns", "exec", "klf-0a1b2c-b1"))
    cluster = LocalCluster("10.77.3.11:2181/kl", 1, workdir=str(tmp_path), python="/py",
                           overrides={"min.insync.replicas": 2}, placement=lambda _id: placement)
    broker = cluster.brokers[1]
    command = cluster.broker_command(broker)
    assert command[:6] == ["ip", "netns", "exec", "klf-0a1b2c-b1", "/py", "-m"]
    assert command[6:8] == ["kafkalite", "broker"]
    overrides = dict(arg.split("=", 1) for arg in command[9::2])
    assert overrides["listeners"] == f"PLAINTEXT://10.77.3.10:{broker.port}"
    assert overrides["zookeeper.connect"] == "10.77.3.11:2181/kl"
    assert overrides["min.insync.replicas"] == "2"
    assert broker.address == f"10.77.3.10:{broker.port}"
    assert cluster.bootstrap_servers == broker.address


def test_broker_command_defaults_to_loopback(tmp_path):
    cluster = LocalCluster("127.0.0.1:2181", 1, workdir=str(tmp_path), python="/py")
    command = cluster.broker_command(cluster.brokers[1])
    assert command[0] == "/py" and cluster.brokers[1].host == "127.0.0.1"


def test_fault_cluster_names_nodes_and_groups(tmp_path):
    class Ensemble:
        size, connect_string = 3, "10.77.3.11:2181,10.77.3.12:2181,10.77.3.13:2181"

    class Network:
        def placement(self, name):
            return Placement(f"addr-of-{name}")

    cluster = FaultCluster(Network(), Ensemble(), str(tmp_path), 2, chroot="/kl-x")
    assert cluster.zk_connect == f"{Ensemble.connect_string}/kl-x"
    assert cluster.kafka.brokers[2].host == "addr-of-b2"
    assert cluster.nodes("zookeeper") == ["zk1", "zk2", "zk3"]
    assert cluster.nodes("brokers") == ["b1", "b2"]
    assert cluster.nodes([1, "zk2"]) == ["b1", "zk2"]
    assert cluster.kafka.overrides["zookeeper.session.timeout.ms"] == 5000
    with pytest.raises(ValueError, match="names no process"):
        cluster.kill("host")


def test_zookeeper_command_line_behind_a_prefix(tmp_path):
    install = ZooKeeperInstall(java="/usr/bin/java", classpath=("/zk.jar",), location="/zk.jar")
    process = ZooKeeperProcess(
        workdir=str(tmp_path), host="10.77.3.11", port=2181, install=install,
        main_class=QUORUM_MAIN, config={"clientPort": 2181}, myid=2, name="zk2",
        startup_timeout_s=1, command_prefix=("ip", "netns", "exec", "klf-0a1b2c-zk2"))
    command = process.command()
    assert command[:5] == ["ip", "netns", "exec", "klf-0a1b2c-zk2", "/usr/bin/java"]
    assert command[-3:] == ["/zk.jar", QUORUM_MAIN, str(tmp_path / "zoo.cfg")]
    assert (tmp_path / "data" / "myid").read_text() == "2\n"
    lines = (tmp_path / "zoo.cfg").read_text().splitlines()
    assert f"dataDir={tmp_path / 'data'}" in lines and "clientPort=2181" in lines


# ---------------------------------------------------------------------------- ensemble config

def test_members_on_their_own_addresses_use_the_standard_ports():
    assert plan_members(["10.77.3.11", "10.77.3.12"]) == [
        EnsembleMember(1, "10.77.3.11", 2181, 2888, 3888),
        EnsembleMember(2, "10.77.3.12", 2181, 2888, 3888)]


def test_ensemble_configs_list_every_member_on_every_node():
    members = [EnsembleMember(i, f"10.77.3.{10 + i}", 2181, 2888, 3888) for i in (1, 2, 3)]
    configs = ensemble_configs(members, tickTime=250, extra={"syncLimit": 5})
    assert len(configs) == 3
    for member, cfg in zip(members, configs):
        assert cfg["clientPort"] == 2181 and cfg["clientPortAddress"] == member.host
        assert cfg["tickTime"] == 250 and cfg["syncLimit"] == 5
        assert cfg["standaloneEnabled"] == "false"
        assert cfg["minSessionTimeout"] == SERVER_DEFAULTS["minSessionTimeout"]
        assert {k: v for k, v in cfg.items() if k.startswith("server.")} == {
            "server.1": "10.77.3.11:2888:3888", "server.2": "10.77.3.12:2888:3888",
            "server.3": "10.77.3.13:2888:3888"}


# ----------------------------------------------------------------------- where it cannot run

def test_not_root_is_refused_with_the_reason_before_anything_is_made(monkeypatch, tmp_path):
    from kafkalite.testing.faults import network

    monkeypatch.setattr(network.os, "geteuid", lambda: 1000)
    assert "need root" in network.unavailable_reason()
    made = []
    monkeypatch.setattr(network, "_run", lambda argv, **kw: made.append(argv))
    with pytest.raises(network.FaultNetworkUnavailable, match="need root"):
        network.FaultNetwork(state_dir=str(tmp_path)).start()
    assert made == [] and list(tmp_path.iterdir()) == []


def test_missing_nft_names_the_package(monkeypatch):
    from kafkalite.testing.faults import network

    monkeypatch.setattr(network.os, "geteuid", lambda: 0)
    monkeypatch.setattr(network.sys, "platform", "linux")
    monkeypatch.setattr(network.shutil, "which", lambda tool: None if tool == "nft" else "/x")
    assert network.unavailable_reason() == ("`nft` is not installed "
                                            "(apt-get install nftables)")


def test_a_refused_netns_add_becomes_a_skip_reason_and_leaves_nothing(monkeypatch, tmp_path):
    from kafkalite.testing.faults import network

    monkeypatch.setattr(network, "unavailable_reason", lambda: None)
    monkeypatch.setattr(network, "_root_networks", lambda: [])
    monkeypatch.setattr(network, "_namespaces", lambda: [])
    torn_down = []
    monkeypatch.setattr(network, "_teardown", lambda names, namespaces: torn_down.append(
        sorted(namespaces)))

    def run(argv, **kw):
        raise network.FaultNetworkError(f"`{' '.join(argv)}` failed (1): mount --make-shared "
                                        "/run/netns failed: Operation not permitted")
    monkeypatch.setattr(network, "_run", run)
    net = network.FaultNetwork(state_dir=str(tmp_path), run_id="0a1b2c")
    with pytest.raises(network.FaultNetworkUnavailable,
                       match="ip netns add klf-0a1b2c-hub.*Operation not permitted"):
        net.start()
    assert torn_down == [["klf-0a1b2c-hub"]]
    assert [p.name for p in tmp_path.iterdir()] == ["lock"]      # the run's state file is gone
