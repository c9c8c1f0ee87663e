"""Two listeners, as in a docker-compose cluster: each client gets the addresses of the listener it
connected to, and the brokers talk to each other on the inter-broker listener."""

import pytest

from kafkalite.protocol import messages as m
from kafkalite.local.cluster import request, wait_until
from kafkalite.local.ports import free_ports

pytestmark = pytest.mark.integration


def test_metadata_answers_per_listener(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(2, start=False)
    external = {}
    for broker in cluster.brokers.values():
        internal_port = broker.port
        (external_port,) = free_ports(1)
        external[broker.broker_id] = external_port
        broker.overrides.update({
            "listeners": f"INTERNAL://127.0.0.1:{internal_port},"
                         f"EXTERNAL://127.0.0.1:{external_port}",
            "advertised.listeners": f"INTERNAL://127.0.0.1:{internal_port},"
                                    f"EXTERNAL://localhost:{external_port}",
            "inter.broker.listener.name": "INTERNAL"})
    cluster.start()
    for broker in cluster.brokers.values():
        inside = request("127.0.0.1", broker.port, m.MetadataRequest(topics=[]))
        outside = request("127.0.0.1", external[broker.broker_id], m.MetadataRequest(topics=[]))
        assert {(b.node_id, b.host, b.port) for b in inside.brokers} == {
            (b.broker_id, "127.0.0.1", b.port) for b in cluster.brokers.values()}
        assert {(b.node_id, b.host, b.port) for b in outside.brokers} == {
            (i, "localhost", port) for i, port in external.items()}
    # the controller reached both brokers on INTERNAL: a replicated topic gets its leaders.
    # CreateTopics goes to the controller (another broker answers NOT_CONTROLLER, as Kafka 2.8)
    def controller_id():
        known = request("127.0.0.1", cluster.brokers[1].port,
                        m.MetadataRequest(topics=[])).controller_id
        return known if known in cluster.brokers else None
    controller = wait_until(controller_id, 30, "a controller")
    created = request("127.0.0.1", cluster.brokers[controller].port, m.CreateTopicsRequest(
        topics=[m.CreatableTopic("two", 2, 2, {}, {})], timeout_ms=15000))
    assert created.topics[0].error_code == 0, created
