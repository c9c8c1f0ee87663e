"""``kafkalite console`` against a real ZooKeeper and three real brokers: the JSON views tell the
truth about brokers, controller, leaders, offsets, both kinds of groups and znodes, and a kill -9
of a leader's broker comes out of ``/api/events`` as broker-death and new-leader events, judged by
their fields (broker, partition, leader, ISR, epoch; a transaction's id, producer, partitions),
the sentences checked only as those fields' rendering."""

from __future__ import annotations

import re

import pytest

from console_tools import ConsoleProcess, EventStream, wait_for
from kafkalite.client import AdminClient, Consumer, NewTopic, Producer

pytestmark = pytest.mark.integration

TOPIC = "orders"


@pytest.fixture
def cluster(kafkalite_cluster_factory):
    return kafkalite_cluster_factory(3)


@pytest.fixture
def console(cluster, zk_connect, tmp_path):
    process = ConsoleProcess(zk_connect, str(tmp_path / "console.log"))
    yield process
    process.stop()


def poll_until(consumers, condition, what):
    def step():
        for consumer in consumers:
            if consumer.poll(timeout_ms=100):
                consumer.commit()
        return condition()
    return wait_for(step, 60, what, interval_s=0)


def test_views_show_the_cluster_groups_and_znodes(cluster, console, zk_connect):
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=3)])
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for i in range(30):
            producer.send(TOPIC, value=b"v%d" % i, partition=i % 3)
        producer.flush()

    def offsets_sampled():
        view = console.get("/api/cluster")
        parts = view.get("topics", {}).get(TOPIC, {}).get("partitions", [])
        return view if parts and all(p["high_watermark"] == 10 for p in parts) else None
    view = wait_for(offsets_sampled, 30, "high watermarks of 10 in /api/cluster")
    assert [(b["id"], b["alive"], b["port"]) for b in view["brokers"]] == [
        (b.broker_id, True, b.port) for b in sorted(cluster.brokers.values(),
                                                   key=lambda b: b.broker_id)]
    assert view["controller"]["broker_id"] == cluster.controller_id()
    assert view["controller"]["epoch"] >= 1
    assert view["cluster_id"]
    for p in view["topics"][TOPIC]["partitions"]:
        assert p["leader"] == cluster.wait_for_leader(TOPIC, p["partition"])
        assert sorted(p["replicas"]) == [1, 2, 3] and sorted(p["isr"]) == [1, 2, 3]
        assert (p["offline"], p["log_end_offset"]) == (False, 10)

    zk_member = Consumer(TOPIC, group_id="zk-billing", zookeeper=zk_connect,
                         auto_offset_reset="earliest")
    coordinator_member = Consumer(TOPIC, group_id="co-billing",
                                  bootstrap_servers=cluster.bootstrap_servers,
                                  auto_offset_reset="earliest")
    try:
        def both_groups_committed():
            groups = {g["group"]: g for g in console.get("/api/groups")["groups"]}
            # one sample showing both the offsets and the member's assignment (a member can
            # be sampled between its join and its sync)
            done = all(name in groups and len(groups[name]["offsets"]) == 3
                       and all(row["lag"] == 0 for row in groups[name]["offsets"])
                       and len(groups[name]["members"]) == 1
                       and groups[name]["members"][0]["partitions"]
                       for name in ("zk-billing", "co-billing"))
            return groups if done else None
        groups = poll_until([zk_member, coordinator_member], both_groups_committed,
                            "both groups to own every partition with no lag")
    finally:
        zk_member.close()
        coordinator_member.close()
    zk_group, co_group = groups["zk-billing"], groups["co-billing"]
    assert (zk_group["kind"], co_group["kind"]) == ("zookeeper", "coordinator")
    for group in (zk_group, co_group):
        assert len(group["members"]) == 1
        assert [(tp["topic"], tp["partition"]) for tp in group["members"][0]["partitions"]] == [
            (TOPIC, 0), (TOPIC, 1), (TOPIC, 2)]
        assert [(r["committed"], r["log_end_offset"]) for r in group["offsets"]] == [(10, 10)] * 3

    ids = console.get("/api/zk?path=/brokers/ids")
    assert ids["children"] == ["1", "2", "3"] and ids["stat"]["ephemeral"] is False
    broker = console.get("/api/zk?path=/brokers/ids/2")
    assert broker["stat"]["ephemeral"] is True
    assert broker["json"]["port"] == cluster.brokers[2].port
    assert console.status_of("/api/zk?path=/no/such/znode")[0] == 404
    assert console.status_of("/api/zk?path=/brokers/../x")[0] == 400


def test_kill_of_a_leader_comes_out_as_events(cluster, console):
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=3)])
    def leader_everywhere():
        shown = console.get("/api/cluster")["topics"].get(TOPIC, {}).get("partitions")
        leader = shown[0]["leader"] if shown else None
        return leader if leader is not None and leader == cluster.leader_of(TOPIC, 0) else None
    victim = wait_for(leader_everywhere, 30, "the same leader in /api/cluster and the brokers")
    stream = EventStream(console.url)
    try:
        cluster.kill(victim)

        def both_published():
            events = list(stream.events)
            died = [e for e in events if e["kind"] == "broker_died" and e["broker"] == victim]
            elected = [e for e in events if e["kind"] == "leader_changed"
                       and (e["topic"], e["partition"]) == (TOPIC, 0) and e["leader"] != victim]
            return (died, elected) if died and elected else None
        # the event each waits for: the broker's /brokers/ids znode gone (its ZooKeeper session
        # of 6 s ended), then the controller's new leader written to the partition's state
        died, elected = wait_for(both_published, 60, "the broker_died and leader_changed events")
    finally:
        stream.close()
    # the events' fields are the facts; the sentence is their rendering
    assert died[0]["led"] == [f"{TOPIC}-0"]
    change = elected[0]
    new_leader = cluster.wait_for_leader(TOPIC, 0)
    assert change["leader"] == new_leader != victim and victim not in change["isr"]
    assert change["leader_epoch"] >= 1 and change["internal"] is False
    assert died[0]["sentence"].startswith(f"broker {victim} died (its ZooKeeper session ended")
    assert (f"broker {victim} died; partition {TOPIC}-0 elected leader {new_leader} from ISR "
            f"[{','.join(map(str, change['isr']))}] (epoch {change['leader_epoch']})") in [
                e["sentence"] for e in elected]
    view = console.get("/api/cluster")
    assert {b["id"]: b["alive"] for b in view["brokers"]}[victim] is False
    partition = view["topics"][TOPIC]["partitions"][0]
    assert partition["leader"] == new_leader and victim in partition["offline_replicas"]


def test_transactions_are_drawn_and_each_commit_or_abort_is_an_event(
        kafkalite_cluster_factory, zk_connect, tmp_path):
    """confluent-kafka (librdkafka) transactions: while one is open the partition's LSO in
    /api/cluster stays at its first offset below the HW and its id is Ongoing; its commit, and
    another id's abort, each come out of /api/events as one event."""
    from confluent_kafka import Producer as ConfluentProducer

    cluster = kafkalite_cluster_factory(3, transaction_state_log_num_partitions=5)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=3)])
    console = ConsoleProcess(zk_connect, str(tmp_path / "console.log"))
    stream = EventStream(console.url)

    def producer(transactional_id):
        p = ConfluentProducer({"bootstrap.servers": cluster.bootstrap_servers,
                               "transactional.id": transactional_id,
                               "transaction.timeout.ms": 120000})
        p.init_transactions(60)
        return p
    try:
        copier = producer("copier")
        copier.begin_transaction()
        for i in range(30):
            copier.produce(TOPIC, b"v%d" % i, partition=i % 3)
        copier.flush(60)

        def drawn_open():
            view = console.get("/api/cluster")
            parts = view["topics"].get(TOPIC, {}).get("partitions", [])
            txns = {t["transactional_id"]: t for t in view.get("transactions", [])}
            ok = (len(parts) == 3 and all(p["high_watermark"] == 10 and p["open_transaction"]
                                          for p in parts)
                  and txns.get("copier", {}).get("state") == "Ongoing")
            return (parts, txns["copier"]) if ok else None
        parts, shown = wait_for(drawn_open, 60, "the open transaction in /api/cluster")
        assert [p["last_stable_offset"] for p in parts] == [0, 0, 0]
        assert shown["open"] is True
        assert shown["partitions"] == [f"{TOPIC}-0", f"{TOPIC}-1", f"{TOPIC}-2"]
        assert shown["coordinator"] in (1, 2, 3)

        copier.commit_transaction(60)
        dropper = producer("dropper")
        dropper.begin_transaction()
        dropper.produce(TOPIC, b"never", partition=1)
        dropper.flush(60)
        dropper.abort_transaction(60)

        def both_published():
            events = list(stream.events)
            committed = [e for e in events if e["kind"] == "txn_committed"]
            aborted = [e for e in events if e["kind"] == "txn_aborted"]
            return (committed, aborted) if committed and aborted else None
        committed, aborted = wait_for(both_published, 60, "the txn_committed and txn_aborted "
                                                          "events")
        assert len(committed) == 1 and len(aborted) == 1
        copier_done, dropper_done = committed[0], aborted[0]
        assert (copier_done["transactional_id"], copier_done["producer_epoch"],
                copier_done["partitions"]) == ("copier", 0, [f"{TOPIC}-{p}" for p in range(3)])
        assert (dropper_done["transactional_id"], dropper_done["producer_epoch"],
                dropper_done["partitions"], dropper_done["fenced_epoch"]) == (
                    "dropper", 0, [f"{TOPIC}-1"], None)
        assert copier_done["producer_id"] != dropper_done["producer_id"]
        assert copier_done["duration_ms"] >= 0 and dropper_done["duration_ms"] >= 0
        # the sentences render those fields
        assert re.fullmatch(rf"producer {copier_done['producer_id']} \(transactional id copier, "
                            rf"epoch 0\) committed a transaction on {TOPIC}-0\.\.2, \d+\.\d s "
                            rf"after it began: read_committed consumers see its records now",
                            copier_done["sentence"])
        assert re.fullmatch(rf"producer {dropper_done['producer_id']} \(transactional id "
                            rf"dropper, epoch 0\) aborted a transaction on {TOPIC}-1, \d+\.\d s "
                            rf"after it began: read_committed consumers skip its records",
                            dropper_done["sentence"])

        def settled():
            view = console.get("/api/cluster")
            parts = view["topics"][TOPIC]["partitions"]
            txns = {t["transactional_id"]: t["state"] for t in view["transactions"]}
            # each marker took an offset: 10 records + COMMIT on 0 and 2; + 1 aborted + ABORT on 1
            ok = ([(p["high_watermark"], p["last_stable_offset"]) for p in parts]
                  == [(11, 11), (13, 13), (11, 11)])
            return ok and txns == {"copier": "CompleteCommit", "dropper": "CompleteAbort"}
        wait_for(settled, 30, "LSO = HW everywhere and both ids complete")
    finally:
        stream.close()
        console.stop()
