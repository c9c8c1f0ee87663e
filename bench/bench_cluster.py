"""The cluster a benchmark runs against: the one named by ``--bootstrap-server``, or a fresh
ZooKeeper and one broker of its own, stopped when the benchmark ends."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from typing import Iterator


@contextlib.contextmanager
def bootstrap_servers(given: str | None, num_brokers: int = 1,
                      system: str = "kafkalite") -> Iterator[str]:
    """``system`` "kafka": Apache Kafka 2.8.2's brokers instead (1 GB heap each)."""
    if given is not None:
        yield given
        return
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
            yield cluster.bootstrap_servers
        finally:
            cluster.stop()
    finally:
        zk.stop()
        shutil.rmtree(workdir, ignore_errors=True)   # GBs of logs otherwise stay behind
