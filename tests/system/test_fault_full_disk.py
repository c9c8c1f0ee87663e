"""A full disk under one broker's log dir, handled as Kafka's LogDirFailureChannel does, on a
3-broker cluster of real processes with a real ZooKeeper.

The log dir sits on a 4 MiB tmpfs (mounted here: needs root; skipped with the reason otherwise)
that a filler file almost fills while an acks=all producer runs (rf 3, min.insync.replicas 2):

* two log.dirs on the victim (tmpfs + a normal dir): the tmpfs dir goes offline, its partitions
  answer KAFKA_STORAGE_ERROR on the victim, their leadership moves to in-sync replicas, the
  producer goes on on the new leaders, and the victim keeps leading and serving the partition of
  its other dir. After the filler is removed and the victim restarted, the dir is back (recovered),
  its replicas catch up and the ISRs are full again;
* one log.dir: no dir is left, so the victim halts (Kafka's choice) and its partitions fail over
  as for a dead broker; freed and restarted, it comes back in sync.

Every acknowledged record is read back, and the replicas agree byte for byte below the high
watermark.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections import Counter

import pytest

from kafkalite import AdminClient, NewTopic, Producer
from kafkalite.errors import KafkaStorageError
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch
from kafkalite.local.cluster import request, wait_until

from replication_tools import BackgroundProducer, log_bytes_up_to, read_all, step_printer

pytestmark = [pytest.mark.system, pytest.mark.slow]

TOPIC = "full"
VICTIM = 1
FS_BYTES = 4 * 1024 * 1024
LEFT_FREE = 96 * 1024      # what the filler leaves for the producer to fill


@pytest.fixture
def small_fs(tmp_path):
    """A 4 MiB tmpfs, unmounted at the end whatever happened."""
    path = tmp_path / "small-fs"
    path.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting the small tmpfs that fills up needs root and mount(8)")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_BYTES}", "tmpfs",
                              str(path)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): the full-disk test "
                    f"needs mount permission (a privileged container or a VM)")
    try:
        yield str(path)
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _fill(fs: str, leave: int) -> str:
    """Write a filler file until only ``leave`` bytes are free; returns its path."""
    filler = os.path.join(fs, "filler")
    stat = os.statvfs(fs)
    remaining = stat.f_bavail * stat.f_frsize - leave
    chunk = b"\0" * (64 * 1024)
    with open(filler, "wb") as f:
        while remaining > 0:
            try:
                remaining -= f.write(chunk[:remaining])
            except OSError:
                break
    return filler


def _create_topic(bootstrap, assignments):
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, replica_assignments=assignments,
                                      topic_configs={"min.insync.replicas": "2"})],
                            timeout_ms=30000)


def _produce_code(broker, partition) -> int:
    batch = build_batch([(int(time.time() * 1000), b"k", b"direct", None)])
    response = request("127.0.0.1", broker.port, m.ProduceRequest(
        acks=-1, timeout_ms=5000, topic_data={TOPIC: {partition: batch}}))
    return response.responses[TOPIC][partition].error_code


def _fetch_code(broker, partition) -> int:
    response = request("127.0.0.1", broker.port, m.FetchRequest(
        max_wait_ms=0, topics=[m.FetchTopic(TOPIC, [m.FetchPartition(partition, 0, 1 << 16)])]))
    return response.responses[0].partitions[0].error_code


def _isr(cluster, partition):
    found = cluster.partition_metadata(TOPIC, partition)
    return sorted(found.isr) if found else []


def _check_acknowledged_read_back(bootstrap, producer, partitions):
    records = read_all(bootstrap, TOPIC, partitions,
                       acknowledged=[(p, o) for _k, _s, p, o in producer.acknowledged])
    stored = {r.value for r in records}
    missing = [(k, s) for k, s, _p, _o in producer.acknowledged
               if b"%s:%d" % (k, s) not in stored]
    assert not missing, f"{len(missing)} acknowledged records lost: {missing[:5]}"
    return records


def _check_replicas_agree(cluster, records, partitions, dirs_of):
    """Every replica holds the same bytes below the high watermark (as far as was read)."""
    ends = Counter()
    for r in records:
        ends[r.partition] = max(ends[r.partition], r.offset + 1)
    for p in range(partitions):
        contents = {b: log_bytes_up_to(os.path.join(dirs_of(b, p), f"{TOPIC}-{p}"), ends[p])
                    for b in cluster.brokers}
        assert len(set(contents.values())) == 1, \
            f"partition {p}: replicas differ below offset {ends[p]}: " \
            f"{ {b: len(c) for b, c in contents.items()} }"
        assert len(next(iter(contents.values()))) > 0


def _wait_isr_full(cluster, partitions, timeout_s=60):
    for p in range(partitions):
        wait_until(lambda: _isr(cluster, p) == sorted(cluster.brokers), timeout_s,
                   f"partition {p} with every replica in sync", interval_s=0.2)


def test_full_dir_of_two_fails_over_and_comes_back(kafkalite_cluster_factory, small_fs):
    step = step_printer()

    cluster = kafkalite_cluster_factory(3, start=False, replica_lag_time_max_ms=4000)
    victim = cluster.brokers[VICTIM]
    # the tmpfs first: with both empty, the broker puts its first partition there
    victim.overrides["log.dirs"] = f"{small_fs},{victim.log_dir}"
    cluster.start()
    bootstrap = cluster.bootstrap_servers
    # the victim leads 0 and 1 and follows 2; its first and third partitions land on the tmpfs
    _create_topic(bootstrap, {0: [1, 2, 3], 1: [1, 3, 2], 2: [2, 3, 1]})
    wait_until(lambda: all(os.path.isdir(os.path.join(d, f"{TOPIC}-{p}"))
                           for p, d in ((0, small_fs), (1, victim.log_dir), (2, small_fs))),
               30, "the victim's partitions in their dirs (0 and 2 on the tmpfs, 1 not)")
    step("cluster up; victim leads 0 (tmpfs) and 1 (other dir), follows 2 (tmpfs)")
    producer = BackgroundProducer(bootstrap, TOPIC, keys=30).start()
    wait_until(lambda: producer.acked_count() > 300, 60, "records acknowledged before the fill")
    filler = _fill(small_fs, LEFT_FREE)
    step(f"tmpfs filled up to {LEFT_FREE // 1024} KiB free, {producer.acked_count()} acked")

    wait_until(lambda: cluster.leader_of(TOPIC, 0) not in (-1, VICTIM), 60,
               "partition 0's leadership moved off the full dir")
    wait_until(lambda: VICTIM not in _isr(cluster, 0) and VICTIM not in _isr(cluster, 2), 60,
               "the victim's offline replicas out of the ISRs")
    step(f"partition 0 now led by {cluster.leader_of(TOPIC, 0)}; ISRs {_isr(cluster, 0)}, "
         f"{_isr(cluster, 2)}")
    assert victim.running, "a broker with a live log dir left must keep running"
    assert _produce_code(victim, 0) == KafkaStorageError.code
    assert _fetch_code(victim, 2) == KafkaStorageError.code
    assert cluster.leader_of(TOPIC, 1) == VICTIM   # its other dir goes on
    assert _produce_code(victim, 1) == 0 and _fetch_code(victim, 1) == 0
    after_failover = producer.acked_count()
    wait_until(lambda: producer.acked_count() > after_failover + 1000, 60,
               "the producer going on on the new leaders")
    producer.stop()
    step(f"producer stopped: sent {producer.sent}, acked {producer.acked_count()}, "
         f"failed {len(producer.failed)}")
    records = _check_acknowledged_read_back(bootstrap, producer, 3)

    os.unlink(filler)
    cluster.restart(VICTIM)
    step("space freed, victim restarted")
    _wait_isr_full(cluster, 3)
    step("the tmpfs dir is back: every ISR is full again")
    with Producer(bootstrap_servers=bootstrap, acks="all") as again:
        for p in range(3):
            again.send(TOPIC, value=b"after", partition=p).get(timeout=30)
    records = read_all(bootstrap, TOPIC, 3)

    def dirs_of(broker_id, p):
        if broker_id == VICTIM and p != 1:
            return small_fs
        return cluster.brokers[broker_id].log_dir
    _check_replicas_agree(cluster, records, 3, dirs_of)
    step(f"{len(records)} records; replicas agree byte for byte")


def test_full_only_dir_halts_the_broker_and_comes_back(kafkalite_cluster_factory, small_fs):
    step = step_printer()

    cluster = kafkalite_cluster_factory(3, start=False, replica_lag_time_max_ms=4000)
    cluster.brokers[VICTIM].overrides["log.dirs"] = small_fs
    cluster.start()
    bootstrap = cluster.bootstrap_servers
    _create_topic(bootstrap, {0: [1, 2, 3], 1: [2, 3, 1]})
    producer = BackgroundProducer(bootstrap, TOPIC, keys=20).start()
    wait_until(lambda: producer.acked_count() > 300, 60, "records acknowledged before the fill")
    filler = _fill(small_fs, LEFT_FREE)
    step("only log dir filled up")
    victim = cluster.brokers[VICTIM]
    wait_until(lambda: not victim.running, 60, "the victim halting: no log dir left")
    assert victim.process.returncode == 1, victim.log_tail()
    assert "all its log dirs" in victim.log_tail(80)
    wait_until(lambda: cluster.leader_of(TOPIC, 0) not in (-1, VICTIM), 60,
               "partition 0's leadership moved off the halted broker")
    after_failover = producer.acked_count()
    wait_until(lambda: producer.acked_count() > after_failover + 1000, 60,
               "the producer going on on the new leader")
    producer.stop()
    step(f"victim halted, producer went on: acked {producer.acked_count()}, "
         f"failed {len(producer.failed)}")
    _check_acknowledged_read_back(bootstrap, producer, 2)
    os.unlink(filler)
    cluster.restart(VICTIM)
    _wait_isr_full(cluster, 2)
    records = read_all(bootstrap, TOPIC, 2)

    def dirs_of(broker_id, _p):
        return small_fs if broker_id == VICTIM else cluster.brokers[broker_id].log_dir
    _check_replicas_agree(cluster, records, 2, dirs_of)
    step("space freed, victim restarted, recovered and back in every ISR")
