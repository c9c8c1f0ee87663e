"""The cluster a benchmark runs against: the one named by ``--bootstrap-server``, or a fresh
ZooKeeper and brokers of its own, stopped (and their data removed) when the benchmark ends."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from typing import Iterator


@contextlib.contextmanager
def own_cluster(num_brokers: int = 1, system: str = "kafkalite") -> Iterator:
    """A started cluster on a ZooKeeper of its own: a LocalCluster, or with ``system`` "kafka"
    an ApacheKafkaCluster (Apache Kafka 2.8.2, 1 GB heap each). Both have ``bootstrap_servers``
    and ``brokers`` (each with its ``process``)."""
    from kafkalite.local.cluster import LocalCluster
    from kafkalite.local.zookeeper import start_zookeeper
    from kafkalite.testing.apache_kafka import ApacheKafkaCluster

    workdir = tempfile.mkdtemp(prefix="kafkalite-bench-")
    zk = start_zookeeper(os.path.join(workdir, "zk"))
    try:
        chroot = zk.connect_string + "/bench-" + uuid.uuid4().hex[:8]
        folder = os.path.join(workdir, "brokers")
        cluster = (ApacheKafkaCluster(chroot, num_brokers, workdir=folder, heap="1g")
                   if system == "kafka" else
                   LocalCluster(chroot, num_brokers=num_brokers, workdir=folder))
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        zk.stop()
        shutil.rmtree(workdir, ignore_errors=True)   # GBs of logs otherwise stay behind


@contextlib.contextmanager
def bootstrap_servers(given: str | None, num_brokers: int = 1,
                      system: str = "kafkalite") -> Iterator[str]:
    """``given`` itself, or an ``own_cluster``'s bootstrap servers."""
    if given is not None:
        yield given
        return
    with own_cluster(num_brokers, system) as cluster:
        yield cluster.bootstrap_servers
