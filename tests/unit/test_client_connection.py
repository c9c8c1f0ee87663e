"""BrokerConnection and ClusterMetadata against the fake broker and raw sockets."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from test_client_fakebroker import FakeCluster

from kafkalite import errors
from kafkalite.client.cluster import ClusterMetadata, StaticBootstrap, bootstrap_source
from kafkalite.client.connection import BrokerConnection, parse_address
from kafkalite.protocol import envelope
from kafkalite.protocol import messages as m
from kafkalite.protocol.framing import FrameDecoder, encode_frame


@pytest.fixture
def cluster():
    c = FakeCluster(2)
    yield c
    c.close()


class RawServer:
    """Accepts one connection and lets the test script what goes back."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.conn = None
        self.requests: list = []
        self._accepted = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        self.conn, _ = self.sock.accept()
        self._accepted.set()

    def read_requests(self, n: int, timeout: float = 5.0) -> list:
        self._accepted.wait(timeout)
        decoder = FrameDecoder()
        out = []
        self.conn.settimeout(timeout)
        while len(out) < n:
            for payload in decoder.feed(self.conn.recv(65536)):
                out.append(envelope.decode_request(payload))
        return out

    def close(self):
        if self.conn:
            self.conn.close()
        self.sock.close()


@pytest.fixture
def raw():
    server = RawServer()
    yield server
    server.close()


def test_parse_address():
    assert parse_address("h:1") == ("h", 1)
    assert parse_address("h") == ("h", 9092)
    assert parse_address("[::1]:9093") == ("::1", 9093)
    assert parse_address("PLAINTEXT://b:19092") == ("b", 19092)
    assert parse_address(("x", 5)) == ("x", 5)
    with pytest.raises(errors.ConfigError):
        parse_address("h:notaport")
    with pytest.raises(errors.ConfigError):
        parse_address("")


def test_request_and_pipelined_responses_in_order(cluster):
    cluster.create_topic("t", 3)
    conn = BrokerConnection("127.0.0.1", cluster.brokers[0].port, client_id="me")
    assert conn.request(m.ApiVersionsRequest()).api_versions
    ids = [conn.send(m.MetadataRequest(topics=["t"])) for _ in range(5)]
    assert conn.in_flight == 5
    got = [conn.receive() for _ in range(5)]
    assert [cid for cid, _ in got] == ids
    assert all(isinstance(r, m.MetadataResponse) for _, r in got)
    assert conn.in_flight == 0
    conn.close()
    assert conn.dead


def test_request_error_response_is_raised_and_connection_survives(raw):
    conn = BrokerConnection("127.0.0.1", raw.port)
    cid = conn.send(m.MetadataRequest(topics=[]))
    (header, _req), = raw.read_requests(1)
    assert header.correlation_id == cid
    raw.conn.sendall(envelope.encode_error_response(cid, errors.UnsupportedVersionError.code,
                                                    "nope"))
    with pytest.raises(errors.UnsupportedVersionError, match="nope") as info:
        conn.receive()
    assert info.value.correlation_id == cid
    assert not conn.dead
    conn.close()


def test_response_split_byte_by_byte_and_large_frames(raw):
    conn = BrokerConnection("127.0.0.1", raw.port)
    big = b"x" * (3 * 1024 * 1024)            # forces the receive buffer to grow
    c1 = conn.send(m.FetchRequest(topics=[]))
    c2 = conn.send(m.MetadataRequest(topics=[]))
    raw.read_requests(2)
    resp = m.FetchResponse(responses=[m.FetchTopicResponse("t", [
        m.FetchPartitionResponse(0, 0, 10, 10, 0, big)])])
    frame1 = envelope.encode_response(c1, resp)
    frame2 = envelope.encode_response(c2, m.MetadataResponse(controller_id=7))

    def trickle():
        data = frame1 + frame2
        for i in range(0, 64):          # the first bytes one at a time
            raw.conn.sendall(data[i:i + 1])
            time.sleep(0.001)
        raw.conn.sendall(data[64:])

    threading.Thread(target=trickle, daemon=True).start()
    cid, got = conn.receive()
    assert cid == c1 and got.responses[0].partitions[0].records == big
    cid, got = conn.receive()
    assert cid == c2 and got.controller_id == 7
    conn.close()


def test_receive_timeout_returns_none_then_request_deadline_kills(raw):
    conn = BrokerConnection("127.0.0.1", raw.port, request_timeout_ms=300)
    conn.send(m.MetadataRequest(topics=[]))
    raw.read_requests(1)
    assert conn.receive(timeout=0.05) is None
    assert not conn.dead
    with pytest.raises(errors.RequestTimedOutError):
        conn.receive()
    assert conn.dead
    with pytest.raises(errors.NetworkError):
        conn.send(m.MetadataRequest(topics=[]))


def test_broker_closing_connection_is_network_error(raw):
    conn = BrokerConnection("127.0.0.1", raw.port)
    conn.send(m.MetadataRequest(topics=[]))
    raw.read_requests(1)
    raw.conn.close()
    with pytest.raises(errors.NetworkError):
        conn.receive()
    assert conn.dead


def test_wrong_correlation_id_and_bad_frames_close_the_connection(raw):
    conn = BrokerConnection("127.0.0.1", raw.port)
    cid = conn.send(m.MetadataRequest(topics=[]))
    raw.read_requests(1)
    raw.conn.sendall(envelope.encode_response(cid + 5, m.MetadataResponse()))
    with pytest.raises(errors.NetworkError, match="correlation id"):
        conn.receive()
    assert conn.dead


def test_garbage_frame_is_network_error(raw):
    conn = BrokerConnection("127.0.0.1", raw.port)
    conn.send(m.MetadataRequest(topics=[]))
    raw.read_requests(1)
    raw.conn.sendall(encode_frame(b"\xc1\xc1\xc1"))
    with pytest.raises(errors.NetworkError, match="unreadable"):
        conn.receive()


def test_connect_refused_is_network_error():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(errors.NetworkError, match=f"127.0.0.1:{port}"):
        BrokerConnection("127.0.0.1", port)


def test_request_refuses_a_busy_connection(cluster):
    conn = BrokerConnection("127.0.0.1", cluster.brokers[0].port)
    conn.send(m.MetadataRequest(topics=[]))
    with pytest.raises(errors.IllegalStateError):
        conn.request(m.MetadataRequest(topics=[]))
    conn.receive()
    conn.close()


def test_acks0_produce_expects_no_response(cluster):
    from kafkalite.record import build_batch

    cluster.create_topic("t", 1)
    conn = BrokerConnection("127.0.0.1", cluster.brokers[0].port)
    batch = build_batch([(1, None, b"v", None)])
    assert conn.request(m.ProduceRequest(acks=0, topic_data={"t": {0: batch}})) is None
    assert conn.in_flight == 0
    assert conn.request(m.MetadataRequest(topics=["t"])).topics[0].name == "t"
    conn.close()


# --- cluster metadata -------------------------------------------------------------------------

def test_bootstrap_parsing():
    assert StaticBootstrap("a:1, b:2").addresses() == [("a", 1), ("b", 2)]
    assert StaticBootstrap(["a:1", ("b", 2)]).addresses() == [("a", 1), ("b", 2)]
    with pytest.raises(errors.ConfigError):
        StaticBootstrap("")

    class Zk:
        def addresses(self):
            return [("z", 3)]

        def describe(self):
            return "zookeeper"

    source = Zk()
    assert bootstrap_source(source) is source


def test_refresh_leaders_and_partitions(cluster):
    cluster.create_topic("t", 4)
    meta = ClusterMetadata(cluster.bootstrap)
    meta.add_topics("t")
    meta.refresh()
    assert meta.partitions_for("t") == {0, 1, 2, 3}
    assert meta.leader_for(("t", 0)) == 1 and meta.leader_for(("t", 1)) == 2
    assert meta.controller_id == 1 and meta.cluster_id == "fake-cluster"
    assert [b.node_id for b in meta.brokers()] == [1, 2]
    assert meta.partitions_for("nope") is None
    assert meta.leader_for(("nope", 0)) is None
    by_leader = meta.partitions_by_leader([("t", 0), ("t", 1), ("t", 2)])
    assert sorted(by_leader) == [1, 2] and len(by_leader[1]) == 2
    meta.close()


def test_no_brokers_available_names_every_server():
    ports = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        ports.append(s.getsockname()[1])
        s.close()
    meta = ClusterMetadata(",".join(f"127.0.0.1:{p}" for p in ports))
    with pytest.raises(errors.NoBrokersAvailableError) as info:
        meta.refresh()
    for p in ports:
        assert f"127.0.0.1:{p}" in str(info.value)


def test_refresh_falls_through_to_a_live_bootstrap_server(cluster):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    meta = ClusterMetadata(f"127.0.0.1:{dead},127.0.0.1:{cluster.brokers[1].port}")
    assert meta.refresh(topics=[]).controller_id == 1
    # the metadata connection dies: the next refresh finds another broker
    cluster.brokers[1].drop_connections()
    time.sleep(0.05)
    assert sorted(meta.refresh(topics=[]).brokers) == [1, 2]
    meta.close()


def test_wait_for_topic_retries_leader_not_available(cluster):
    cluster.leader_not_available_rounds = 2
    meta = ClusterMetadata(cluster.bootstrap, retry_backoff_ms=10)
    parts = meta.wait_for_topic("auto", timeout=5)
    assert sorted(parts) == [0]
    assert cluster.count(3) >= 3          # two LEADER_NOT_AVAILABLE answers, then the leaders
    meta.close()


def test_wait_for_topic_times_out_and_raises_non_retriable():
    c = FakeCluster(1, auto_create=False)
    try:
        meta = ClusterMetadata(c.bootstrap, retry_backoff_ms=10)
        with pytest.raises(errors.KafkaTimeoutError, match="missing"):
            meta.wait_for_topic("missing", timeout=0.2)
        with pytest.raises(errors.InvalidTopicError):
            # the fake reports what a broker would for a name it refuses
            c.topics.pop("bad name", None)
            orig = c.brokers[0].metadata

            def refuse(request):
                resp = orig(request)
                resp.topics = [m.MetadataTopic(errors.InvalidTopicError.code, t.name, [])
                               for t in resp.topics]
                return resp

            c.brokers[0].metadata = refuse
            meta.wait_for_topic("x", timeout=1)
        meta.close()
    finally:
        c.close()


def test_pool_reconnects_dead_connections(cluster):
    meta = ClusterMetadata(cluster.bootstrap)
    meta.refresh(topics=[])
    pool = meta.pool()
    conn = pool.get(2)
    assert pool.get(2) is conn
    conn.close()
    conn2 = pool.get(2)
    assert conn2 is not conn and conn2.connected
    with pytest.raises(errors.NetworkError):
        pool.get(99)
    pool.close()
    meta.close()
