"""pytest fixtures that start real kafkalite brokers (registered by the kafkalite pytest plugin).

- ``kafkalite_cluster_factory(num_brokers=1, **overrides)``: start a LocalCluster on this test's
  own ZooKeeper chroot; every cluster it made is stopped after the test, and the brokers' log tails
  are printed when the test failed.
- ``kafkalite_broker``: one running broker; ``kafkalite_cluster``: three.
- ``bootstrap_servers``: the single broker's address, for a test that only needs to connect.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest


@pytest.fixture
def kafkalite_cluster_factory(zk_connect: str, tmp_path_factory: Any,
                              request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    from kafkalite.local.cluster import LocalCluster

    made: list[LocalCluster] = []

    def make(num_brokers: int = 1, start: bool = True, **overrides: Any) -> LocalCluster:
        workdir = tmp_path_factory.mktemp("kafkalite-cluster")
        settings = {key.replace("_", "."): value for key, value in overrides.items()}
        cluster = LocalCluster(zk_connect, num_brokers, workdir=str(workdir),
                               overrides=settings)
        made.append(cluster)
        if start:
            cluster.start()
        return cluster

    yield make
    call_report = getattr(request.node, "_kafkalite_report_call", None)
    failed = call_report is None or call_report.failed
    for cluster in made:
        if failed:
            print(cluster.describe_logs())
        cluster.stop()


@pytest.fixture
def kafkalite_broker(kafkalite_cluster_factory: Callable[..., Any]) -> Any:
    return kafkalite_cluster_factory(1)


@pytest.fixture
def kafkalite_cluster(kafkalite_cluster_factory: Callable[..., Any]) -> Any:
    return kafkalite_cluster_factory(3)


@pytest.fixture
def bootstrap_servers(kafkalite_broker: Any) -> str:
    return kafkalite_broker.bootstrap_servers
