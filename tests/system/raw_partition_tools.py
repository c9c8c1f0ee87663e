"""One Produce request straight to one broker, and a replica's records read from its files (no
test functions here).

A client library retries, refreshes metadata and picks the leader itself; these helpers do
none of that, so a test sees exactly what one broker answered to one request, and exactly what
one replica holds on disk.
"""

from __future__ import annotations

import glob
import os
import time

from kafkalite.protocol import messages as m
from kafkalite.record import build_batch, iter_records
from kafkalite.local.cluster import request

ACKS_ALL = -1


def produce_raw(broker, topic: str, partition: int, values, acks: int = ACKS_ALL,
                timeout_ms: int = 30000) -> m.ProducePartitionResponse:
    """One Produce request with one batch of ``values`` to ``broker`` (a BrokerProcess);
    the broker's answer for that partition."""
    now = int(time.time() * 1000)
    batch = build_batch([(now, None, value, None) for value in values])
    response = request("127.0.0.1", broker.port, m.ProduceRequest(
        acks=acks, timeout_ms=timeout_ms, topic_data={topic: {partition: batch}}),
        timeout_s=timeout_ms / 1000 + 10)
    return response.responses[topic][partition]


def partition_as_seen_by(broker, topic: str, partition: int):
    """The partition's metadata as ``broker`` itself answers it (None if it does not know it).

    A broker applies LeaderAndIsr before the UpdateMetadata that follows it, so the leader
    naming itself here has taken up leadership: other brokers may say so a little earlier."""
    response = request("127.0.0.1", broker.port, m.MetadataRequest(
        topics=[topic], allow_auto_topic_creation=False))
    for t in response.topics:
        for p in t.partitions:
            if t.name == topic and p.partition == partition:
                return p
    return None


def replica_records(broker, topic: str, partition: int) -> list[tuple[int, bytes]]:
    """``[(offset, value)]`` of every whole batch in the replica's segment files (a live broker
    may be writing the last one: a batch cut short at the end is left out)."""
    out = []
    for path in sorted(glob.glob(os.path.join(broker.log_dir, f"{topic}-{partition}", "*.log"))):
        with open(path, "rb") as f:
            content = f.read()
        out.extend((r.offset, r.value) for r in iter_records(content, allow_partial=True))
    return out
