"""The fault network itself (kafkalite.testing.faults): a cut link really drops packets, in the
direction asked, established connections included; heal restores them; a ZooKeeper node cut from
its peers stops serving and comes back; a paused ZooKeeper leader is replaced and follows once
resumed; a crashed run's namespaces are removed by the next run.

Processes here are tiny Python listeners started inside the namespaces. Skipped, with the reason,
where network namespaces cannot be made (not root, no ip/nft).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from kafkalite.local.cluster import wait_until
from kafkalite.testing.faults.network import STATE_DIR, FaultNetwork
from kafkalite.testing.faults.topology import HOST

pytestmark = [pytest.mark.system]

LISTENER = """
import socket, sys
kind, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if kind == "tcp":
    server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((address, port)); server.listen()
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        while True:                                   # echo until the peer closes
            data = conn.recv(65536)
            if not data:
                break
            conn.sendall(data)
else:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); server.bind((address, port))
    print("ready", flush=True)
    while True:
        print(server.recv(65536).decode(), flush=True)
"""

SEND_UDP = ("import socket,sys; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
            ".sendto(sys.argv[3].encode(), (sys.argv[1], int(sys.argv[2])))")


class Listener:
    """A TCP echo server or a UDP printer inside a node's namespace."""

    def __init__(self, network, node, kind, port):
        placement = network.placement(node)
        self.proc = subprocess.Popen(
            [*placement.command_prefix, sys.executable, "-c", LISTENER, kind, placement.host,
             str(port)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def lines(self, count, timeout_s):
        """Up to ``count`` printed lines, waiting at most ``timeout_s`` for them."""
        import selectors

        got = []
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout_s
            while len(got) < count and sel.select(max(0.0, deadline - time.monotonic())):
                got.append(self.proc.stdout.readline().strip())
        return got

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def network(fault_network):
    yield fault_network
    fault_network.heal()


def test_cut_drops_tcp_both_ways_and_heal_restores_it(network):
    listener = Listener(network, "probe-b", "tcp", 7001)
    try:
        network.add_node("probe-a")
        assert network.can_connect("probe-a", "probe-b", 7001)
        network.cut("probe-a", "probe-b")
        assert not network.can_connect("probe-a", "probe-b", 7001, timeout_s=1.0)
        assert network.can_connect(HOST, "probe-b", 7001), "the host's link was cut too"
        rules = network.rules_text()
        assert "probe-a -> probe-b" in rules and "probe-b -> probe-a" in rules
        network.heal()
        assert network.can_connect("probe-a", "probe-b", 7001)
        assert "drop" not in network.rules_text()
    finally:
        listener.stop()


def test_an_established_connection_stalls_while_cut_and_resumes_after_heal(network):
    listener = Listener(network, "probe-b", "tcp", 7002)
    try:
        with socket.create_connection((network.address("probe-b"), 7002), timeout=5) as conn:
            conn.sendall(b"before")
            assert conn.recv(100) == b"before"
            network.isolate("probe-b", from_host=True)
            conn.settimeout(1.5)
            conn.sendall(b"during")           # goes into the send buffer; never arrives
            with pytest.raises(socket.timeout):
                conn.recv(100)
            network.heal()
            conn.settimeout(30)               # TCP retransmits on its own backoff
            assert conn.recv(100) == b"during"
    finally:
        listener.stop()


def test_a_one_way_cut_drops_one_direction_only(network):
    at_a = Listener(network, "probe-a", "udp", 7003)
    at_b = Listener(network, "probe-b", "udp", 7003)
    try:
        def send(source, target, text):
            result = network.run_in(source, [sys.executable, "-c", SEND_UDP,
                                             network.address(target), "7003", text])
            assert result.returncode == 0, result.stderr

        network.cut("probe-a", "probe-b", both=False)       # a -> b dropped, b -> a open
        send("probe-a", "probe-b", "a-to-b-while-cut")
        send("probe-b", "probe-a", "b-to-a-while-cut")
        assert at_a.lines(1, 5.0) == ["b-to-a-while-cut"]
        network.heal()
        send("probe-a", "probe-b", "a-to-b-healed")
        # the datagram sent while cut never arrives: the first line b sees is the healed one
        assert at_b.lines(1, 5.0) == ["a-to-b-healed"]
    finally:
        at_a.stop()
        at_b.stop()


def test_a_zookeeper_node_cut_from_its_peers_stops_serving_then_rejoins(network,
                                                                        fault_zookeeper):
    ensemble = fault_zookeeper
    wait_until(lambda: len(ensemble.serving()) == 3, 60, "all three nodes serving")
    network.cut("zk1", ["zk2", "zk3"])
    try:
        # zk1 alone has no quorum: it stops serving; zk2 and zk3 still form one
        wait_until(lambda: ensemble.mode(0) is None, 60, "zk1 to stop serving")
        wait_until(lambda: sorted(ensemble.serving()) == [1, 2], 60, "zk2 and zk3 serving")
    finally:
        network.heal()
    wait_until(lambda: ensemble.mode(0) == "follower", 60, "zk1 back as a follower")


def test_a_paused_zookeeper_leader_is_replaced_and_follows_when_resumed(fault_zookeeper):
    ensemble = fault_zookeeper
    wait_until(lambda: len(ensemble.serving()) == 3 and ensemble.leader() is not None, 60,
               "a leader and two followers")
    frozen = ensemble.leader()
    ensemble.pause(frozen)
    try:
        # the followers stop hearing from it and elect one of themselves
        wait_until(lambda: ensemble.leader() not in (None, frozen), 60, "a new leader")
        assert ensemble.nodes[frozen].running and ensemble.nodes[frozen].paused
    finally:
        ensemble.resume(frozen)
    wait_until(lambda: ensemble.mode(frozen) == "follower", 60, "the resumed node to follow")
    assert "paused with SIGSTOP" in ensemble.nodes[frozen].log_tail(400)


CRASHING_RUN = """
import sys, time
from kafkalite.testing.faults.network import FaultNetwork
network = FaultNetwork().start()
network.add_node("crashed")
print(network.run_id, flush=True)
time.sleep(600)
"""


def test_a_crashed_runs_namespaces_are_removed_by_the_next_run(fault_network):
    crashed = subprocess.Popen([sys.executable, "-c", CRASHING_RUN], stdout=subprocess.PIPE,
                               text=True, cwd=os.getcwd())
    run_id = crashed.stdout.readline().strip()
    assert run_id, "the crashing run did not start its network"
    crashed.send_signal(signal.SIGKILL)       # no atexit, no finally: everything is left behind
    crashed.wait()

    def namespaces():
        return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout

    assert f"klf-{run_id}-hub" in namespaces() and f"klf-{run_id}-crashed" in namespaces()
    assert os.path.exists(os.path.join(STATE_DIR, f"{run_id}.json"))
    with FaultNetwork() as next_run:
        assert next_run.run_id != run_id
        assert f"klf-{run_id}-" not in namespaces()
        assert not os.path.exists(os.path.join(STATE_DIR, f"{run_id}.json"))
        links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
        assert f"klf{run_id}" not in links
        # and the session's own network, whose owner is alive, was left alone
        assert f"klf-{fault_network.run_id}-hub" in namespaces()
