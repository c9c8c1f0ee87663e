"""KIP-74 on the leader: a Fetch answer stays within the request's max_bytes.

As Kafka 2.8's ReplicaManager.readFromLocalLog: each partition reads at most min(its own
partition_max_bytes, what the response has left), and only until some partition returned data may
one whole batch exceed the limit (so a consumer always progresses). Before this, the first
partition read up to its own limit whatever max_bytes said: confluent-kafka with
fetch.max.bytes=1000000 and max.partition.fetch.bytes=20000000 got a 19.4 MB answer it refused.
"""

import os
import time

from twisted.internet.task import Clock

from kafkalite.config import TopicConfig
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch, iter_records
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.replica_manager import ReplicaManager

BATCH_VALUE = 10_000


def _manager(tmp_path):
    clock = Clock()
    clock.advance(1000)
    config = TopicConfig()
    logs = LogManager([str(tmp_path / "b1")], config, clock)
    logs.startService()
    manager = ReplicaManager(1, logs, clock, lambda: int(clock.seconds() * 1000),
                             topic_config=lambda t: config, replica_lag_time_max_ms=10000,
                             isr_change_callback=lambda p, isr: None)
    manager.start()
    states = [m.LeaderAndIsrPartitionState("t", p, 1, 1, 0, [1], 0, [1]) for p in (0, 1)]
    manager.become_leader_or_follower(m.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=1, partition_states=states))
    now = int(time.time() * 1000)
    for partition in (0, 1):
        for i in range(10):     # ten batches of one ~10 kB record each
            manager.append_records(1000, 1, False, {
                ("t", partition): build_batch([(now, None, os.urandom(BATCH_VALUE), None)])})
    return manager


def _fetch(manager, max_bytes, partition_max_bytes):
    response = manager.fetch(FetchParams(-1, 0, 1, max_bytes),
                             {("t", p): PartitionData(0, max_bytes=partition_max_bytes)
                              for p in (0, 1)})
    return [r.records for r in response.values()]


def test_response_stays_under_max_bytes_when_partition_limits_are_larger(tmp_path):
    manager = _manager(tmp_path)
    first, second = _fetch(manager, max_bytes=25_000, partition_max_bytes=20_000_000)
    assert 0 < len(first) + len(second) <= 25_000
    assert len(list(iter_records(first))) == 2      # two whole ~10 kB batches fit, not three
    assert second == b""                            # nothing left for the second partition


def test_remaining_room_goes_to_the_next_partition(tmp_path):
    manager = _manager(tmp_path)
    first, second = _fetch(manager, max_bytes=150_000, partition_max_bytes=50_000)
    assert len(list(iter_records(first))) == 4      # its own 50 kB limit
    assert len(list(iter_records(second))) == 4
    assert len(first) + len(second) <= 150_000


def test_one_batch_larger_than_max_bytes_is_still_returned_first(tmp_path):
    manager = _manager(tmp_path)
    first, second = _fetch(manager, max_bytes=100, partition_max_bytes=20_000_000)
    assert len(list(iter_records(first))) == 1      # progress: one whole batch
    assert second == b""                            # but no more than that one
