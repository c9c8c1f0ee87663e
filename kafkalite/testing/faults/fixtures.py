"""pytest fixtures for fault tests (registered by kafkalite's pytest plugin).

- ``fault_network`` (session): a started :class:`~kafkalite.testing.faults.network.FaultNetwork`;
  the test is skipped, with the reason, where network namespaces or nftables cannot be used (not
  root, no ``ip``/``nft``, ``ip netns add`` refused).
- ``fault_zookeeper`` (session): a 3-node ZooKeeper ensemble on it, nodes ``zk1`` .. ``zk3``.
- ``fault_cluster_factory``: ``make(num_brokers=3, start=True, **broker_overrides)`` -> a
  :class:`~kafkalite.testing.faults.cluster.FaultCluster` on a fresh chroot. After the test every
  fault is undone (links healed, processes resumed, ZooKeeper nodes started again) and the
  brokers are stopped; when the test failed, the brokers' and ZooKeeper's log tails and the nft
  rules (with packet counters) are printed.

Overrides take Kafka's names with dots or underscores (``min_insync_replicas=2``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest


@pytest.fixture(scope="session")
def fault_network() -> Iterator[Any]:
    from kafkalite.testing.faults.network import FaultNetwork, FaultNetworkUnavailable

    try:
        network = FaultNetwork().start()
    except FaultNetworkUnavailable as exc:
        pytest.skip(f"fault injection needs network namespaces and nftables: {exc}")
    try:
        yield network
    finally:
        network.close()


@pytest.fixture(scope="session")
def fault_zookeeper(fault_network: Any, tmp_path_factory: Any) -> Iterator[Any]:
    from kafkalite.testing.faults.cluster import start_ensemble

    ensemble = start_ensemble(fault_network, str(tmp_path_factory.mktemp("fault-zookeeper")))
    try:
        yield ensemble
    finally:
        ensemble.stop()


@pytest.fixture
def fault_cluster_factory(fault_network: Any, fault_zookeeper: Any, tmp_path_factory: Any,
                          request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    from kafkalite.testing.faults.cluster import FaultCluster

    made: list[FaultCluster] = []

    def make(num_brokers: int = 3, start: bool = True, **overrides: Any) -> FaultCluster:
        settings = {key.replace("_", "."): value for key, value in overrides.items()}
        cluster = FaultCluster(fault_network, fault_zookeeper,
                               str(tmp_path_factory.mktemp("fault-cluster")), num_brokers,
                               settings)
        made.append(cluster)
        if start:
            cluster.start()
        return cluster

    yield make
    report = getattr(request.node, "_kafkalite_report_call", None)
    failed = report is None or report.failed
    for cluster in made:
        if failed:
            print(cluster.describe())
        try:
            cluster.restore()
        finally:
            cluster.stop()
