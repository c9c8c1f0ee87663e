"""A 3-broker cluster of real processes on a real ZooKeeper keeps every record it acknowledged
with acks=all while brokers are killed, paused and restarted."""

import os
from collections import defaultdict

import pytest

from kafkalite import Producer, errors
from kafkalite.protocol import messages as m
from kafkalite.local.cluster import request, wait_until

from replication_tools import (BackgroundProducer, create_topic, log_bytes_up_to, read_all,
                               step_printer)

pytestmark = [pytest.mark.system, pytest.mark.slow]


def _check_no_loss(producer, records):
    """``(missing, duplicates, misordered)`` for what ``producer`` sent and ``records`` read.

    ``missing``: acknowledged records not at their acknowledged offset. ``duplicates``: records
    read more than once (the producer is not idempotent: a batch whose answer was lost is sent
    again). ``misordered``: partitions whose records break the producer's order, where the only
    repeat allowed is a retried batch: the run written last, written again right after itself.
    """
    stored = {(r.partition, r.offset): r.value for r in records}
    missing = [(k, s, p, o) for k, s, p, o in producer.acknowledged
               if stored.get((p, o)) != b"%s:%d" % (k, s)]
    per_partition = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        per_partition[r.partition].append(int(r.value.split(b":")[1]))
    duplicates, misordered = 0, []
    for partition, seqs in per_partition.items():
        kept: list = []            # first copies, in log order: must be strictly increasing
        i = 0
        while i < len(seqs):
            if not kept or seqs[i] > kept[-1]:
                kept.append(seqs[i])
                i += 1
                continue
            tail = kept[kept.index(seqs[i]):] if seqs[i] in kept else None
            if tail is None or seqs[i:i + len(tail)] != tail:
                misordered.append((partition, i, seqs[max(0, i - 3):i + 3]))
                break
            duplicates += len(tail)
            i += len(tail)
    return missing, duplicates, misordered


def _partition_seen_by(cluster, broker_id, topic, partition):
    """The partition as one broker's metadata cache has it; None while that broker has not
    heard of it."""
    response = request("127.0.0.1", cluster.brokers[broker_id].port,
                       m.MetadataRequest(topics=[topic], allow_auto_topic_creation=False))
    return next((p for t in response.topics for p in t.partitions if p.partition == partition),
                None)


def _agreed_leader(cluster, topic, partition, timeout_s=60):
    """The partition's leader once every live broker's metadata names the same one. CreateTopics
    answers once the controller's metadata has the leaders (as in Kafka); the other brokers learn
    them from UpdateMetadata a moment later, and until then their answer has no leader (-1)."""
    def agreed():
        leaders = {getattr(_partition_seen_by(cluster, b.broker_id, topic, partition), "leader",
                           -1) for b in cluster.live_brokers()}
        return leaders if len(leaders) == 1 and -1 not in leaders else None
    (leader,) = wait_until(agreed, timeout_s, f"every broker naming the leader of {topic}-"
                                              f"{partition}", on_timeout=cluster.describe_logs)
    return leader


def test_leader_kill_loses_nothing_acknowledged(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(3, replica_lag_time_max_ms=4000)
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "durable", 3, 3, min_insync_replicas=2)
    producer = BackgroundProducer(bootstrap, "durable").start()
    kills = []
    for round_ in range(3):
        wait_until(lambda: producer.acked_count() > 2000 * (round_ + 1), 120,
                   f"{2000 * (round_ + 1)} acknowledged records")
        victim = _agreed_leader(cluster, "durable", round_ % 3)
        cluster.kill(victim)
        kills.append(victim)
        wait_until(lambda: cluster.leader_of("durable", round_ % 3) not in (-1, victim), 60,
                   "a new leader")
        cluster.restart(victim)
    wait_until(lambda: producer.acked_count() > 8000, 120, "more records after the kills")
    producer.stop()
    records = read_all(bootstrap, "durable", 3,
                       acknowledged=[(p, o) for _k, _s, p, o in producer.acknowledged])
    missing, duplicates, misordered = _check_no_loss(producer, records)
    print(f"\nleader kill: killed brokers {kills}; sent {producer.sent}, acknowledged "
          f"{len(producer.acknowledged)}, failed {len(producer.failed)}, read {len(records)}, "
          f"duplicates {duplicates}")
    # retries outlast every failover: each send is acknowledged, none fails
    assert not producer.failed, f"{len(producer.failed)} sends failed: {producer.failed[:3]}"
    assert len(producer.acknowledged) == producer.sent, "sends left unresolved"
    assert not missing, f"{len(missing)} acknowledged records lost: {missing[:5]}"
    assert not misordered, f"records out of the producer's order: {misordered}"
    # what was read is what was acknowledged, plus the retried batches' second copies
    assert len(records) == len(producer.acknowledged) + duplicates


def test_controller_kill_then_broker_failure(kafkalite_cluster_factory, zk_client):
    cluster = kafkalite_cluster_factory(3)
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "ctl", 3, 3)
    first = cluster.controller_id()
    epoch = zk_client.get_controller_epoch().epoch
    cluster.kill(first)
    second = wait_until(lambda: (lambda c: c if c not in (-1, first) else None)(
        cluster.controller_id()), 60, "a new controller")
    # one election, won in ZooKeeper by a live broker: its epoch fences the dead controller
    assert zk_client.get_controller_id() == second
    assert second in {b.broker_id for b in cluster.live_brokers()}
    assert zk_client.get_controller_epoch().epoch == epoch + 1
    # leadership still moves when a broker dies after the failover
    victim = next(b for b in cluster.brokers if b not in (first, second))
    led = [p for p in range(3) if cluster.wait_for_leader("ctl", p) == victim]
    cluster.kill(victim)
    for p in range(3):
        wait_until(lambda: cluster.leader_of("ctl", p) == second, 60,
                   f"partition {p} led by the only live broker {second}")
    with Producer(bootstrap_servers=bootstrap, acks=1) as producer:
        for p in range(3):
            producer.send("ctl", value=b"after", partition=p).get(timeout=30)
    print(f"\ncontroller {first} killed -> controller {second}; broker {victim} killed "
          f"(led {led}); all partitions now led by {second}")


def test_paused_follower_leaves_and_rejoins_isr(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(2, replica_lag_time_max_ms=2000)
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "isr", 1, 2, min_insync_replicas=2)
    leader = _agreed_leader(cluster, "isr", 0)
    follower = next(b for b in cluster.brokers if b != leader)

    def isr():      # as the leader's metadata has it: the paused follower's may be stale
        return sorted(_partition_seen_by(cluster, leader, "isr", 0).isr)
    step = step_printer()

    with Producer(bootstrap_servers=bootstrap, acks="all") as producer:
        producer.send("isr", value=b"both in sync").get(timeout=30)
    step("acks=all with both replicas in sync")
    cluster.pause(follower)
    try:
        wait_until(lambda: isr() == [leader], 60, f"follower {follower} out of the ISR",
                   on_timeout=cluster.describe_logs)
        step(f"follower {follower} paused and out of the ISR")
        # bootstrap from the leader: the paused broker accepts connections but never answers
        alive = cluster.brokers[leader].address
        strict = Producer(bootstrap_servers=alive, acks="all", retries=0)
        with pytest.raises(errors.NotEnoughReplicasError):
            strict.send("isr", value=b"needs two").get(timeout=30)
        strict.close(timeout=5)
        step("acks=all refused with NOT_ENOUGH_REPLICAS")
        with Producer(bootstrap_servers=alive, acks=1) as relaxed:
            assert relaxed.send("isr", value=b"one is enough").get(timeout=30).offset >= 1
        step("acks=1 still accepted")
    finally:
        cluster.resume(follower)
    wait_until(lambda: isr() == sorted([leader, follower]), 60,
               f"follower {follower} back in the ISR", on_timeout=cluster.describe_logs)
    step(f"follower {follower} resumed, caught up and back in the ISR")
    with Producer(bootstrap_servers=bootstrap, acks="all") as producer:
        producer.send("isr", value=b"in sync again").get(timeout=30)
    step("acks=all accepted again")


def test_replicas_hold_identical_logs_after_leader_changes(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(3, replica_lag_time_max_ms=4000)
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "same", 1, 3, min_insync_replicas=2)
    producer = BackgroundProducer(bootstrap, "same", keys=5).start()
    for round_ in range(2):
        wait_until(lambda: producer.acked_count() > 1500 * (round_ + 1), 120, "records")
        victim = _agreed_leader(cluster, "same", 0)
        cluster.kill(victim)
        wait_until(lambda: cluster.leader_of("same", 0) not in (-1, victim), 60, "new leader")
        cluster.restart(victim)
    producer.stop()
    wait_until(lambda: len(cluster.partition_metadata("same", 0).isr) == 3, 60,
               "all three replicas in sync")
    records = read_all(bootstrap, "same", 1)
    high_watermark = max(r.offset for r in records) + 1
    cluster.stop()     # clean shutdown: files are complete and quiet
    contents = {b.broker_id: log_bytes_up_to(os.path.join(b.log_dir, "same-0"), high_watermark)
                for b in cluster.brokers.values()}
    sizes = {b: len(c) for b, c in contents.items()}
    print(f"\nbytes up to HW {high_watermark} per broker: {sizes}")
    first = next(iter(contents.values()))
    assert first and all(c == first for c in contents.values()), sizes
