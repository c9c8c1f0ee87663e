"""The cluster a benchmark runs against: the one named by ``--bootstrap-server``, or a fresh
ZooKeeper and one broker of its own, stopped when the benchmark ends."""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from typing import Iterator


@contextlib.contextmanager
def bootstrap_servers(given: str | None, num_brokers: int = 1) -> Iterator[str]:
    if given is not None:
        yield given
        return
    from kafkalite.local.cluster import LocalCluster
    from kafkalite.local.zookeeper import start_zookeeper

    workdir = tempfile.mkdtemp(prefix="kafkalite-bench-")
    zk = start_zookeeper(os.path.join(workdir, "zk"))
    try:
        cluster = LocalCluster(zk.connect_string + "/bench-" + uuid.uuid4().hex[:8],
                               num_brokers=num_brokers, workdir=os.path.join(workdir, "brokers"))
        cluster.start()
        try:
            yield cluster.bootstrap_servers
        finally:
            cluster.stop()
    finally:
        zk.stop()
