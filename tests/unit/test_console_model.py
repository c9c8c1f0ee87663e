"""The console's pure parts: the sentences, the model's changes, rates, views and the coordinator
group diffs (no network: values go in, changes and JSON come out)."""

from zk_schema.brokers import BrokerRegistration
from zk_schema.topics import PartitionState, TopicAssignment

from kafkalite.console import sentences as say
from kafkalite.console.broker_reader import PartitionOffsets
from kafkalite.console.model import ClusterModel
from kafkalite.console.rates import RateTracker
from kafkalite.console.sampler import coordinator_group_changes
from kafkalite.console.views import cluster_view, groups_view


def state(leader, epoch, isr):
    return PartitionState(leader=leader, leader_epoch=epoch, controller_epoch=1, isr=tuple(isr))


def three_broker_model():
    model = ClusterModel()
    model.set_broker_ids([1, 2, 3])
    for b in (1, 2, 3):
        model.set_broker(b, BrokerRegistration.plaintext(b, "127.0.0.1", 9091 + b))
    model.set_topics(["orders"])
    model.set_assignment("orders", TopicAssignment({0: (2, 3, 1), 1: (3, 1, 2)}))
    model.set_partition_state("orders", 0, state(2, 3, [2, 3, 1]))
    model.set_partition_state("orders", 1, state(3, 0, [3, 1, 2]))
    return model


# --- sentences ---------------------------------------------------------------------------------

def test_the_issues_example_sentence_for_a_leader_lost_with_its_broker():
    old, new = state(2, 3, [2, 3, 1]), state(3, 4, [3, 1])
    assert say.partition_changed("orders", 0, old, new, dead={2}) == [
        "broker 2 died; partition orders-0 elected leader 3 from ISR [3,1] (epoch 4)"]


def test_partition_sentences_for_each_kind_of_change():
    assert say.partition_changed("t", 1, state(1, 0, [1, 2]), state(-1, 1, [1]), dead={1}) == [
        "broker 1 died; partition t-1 is offline: no live in-sync replica to lead it "
        "(ISR [1], epoch 1)"]
    assert say.partition_changed("t", 1, state(-1, 1, [1]), state(1, 2, [1]), dead=()) == [
        "partition t-1 is back online: leader 1 from ISR [1] (epoch 2)"]
    assert say.partition_changed("t", 0, state(2, 1, [2, 1]), state(1, 2, [1, 2]), dead=()) == [
        "partition t-0 moved its leader from broker 2 to 1 (ISR [1,2], epoch 2)"]
    assert say.partition_changed("t", 0, state(1, 1, [1, 2, 3]), state(1, 1, [1, 3]),
                                 dead=()) == ["broker 2 fell out of sync on t-0: ISR now [1,3]"]
    assert say.partition_changed("t", 0, state(1, 1, [1, 3]), state(1, 1, [1, 3, 2]),
                                 dead=()) == [
        "broker 2 caught up on t-0 and rejoined its ISR, now [1,3,2]"]
    assert say.partition_changed("t", 0, state(1, 1, [1, 2, 3]), state(1, 1, [1]),
                                 dead={2, 3}) == [
        "partition t-0 dropped dead brokers 2 and 3 from its ISR, now [1]"]
    assert say.partition_changed("t", 0, state(1, 1, [1]), state(1, 1, [1]), dead=()) == []
    assert say.partition_changed("t", 0, None, state(1, 0, [1]), dead=()) == []


def test_broker_death_lists_what_it_led_and_counts_internal_partitions():
    led = [("orders", 0), ("__consumer_offsets", 4), ("__consumer_offsets", 7)]
    assert say.broker_died(2, led) == (
        "broker 2 died (its ZooKeeper session ended: /brokers/ids/2 is gone); it led orders-0 "
        "and 2 partitions of __consumer_offsets")
    assert say.broker_died(2) == ("broker 2 died (its ZooKeeper session ended: /brokers/ids/2 "
                                  "is gone)")


def test_group_sentences_name_idle_members():
    assert say.group_assignment("billing", "zookeeper", {
        "billing_host-1700000000000-bbbbbbbb": [("orders", 1), ("orders", 0)],
        "billing_host-1700000000001-aaaaaaaa": []}) == (
        "group billing (zookeeper) rebalanced: bbbbbbbb owns orders-0, orders-1; aaaaaaaa owns "
        "nothing (idle)")
    assert say.short_member("consumer-1") == "consumer-1"


# --- the model ---------------------------------------------------------------------------------

def test_broker_death_then_election_reads_as_the_failover():
    model = three_broker_model()
    died = model.set_broker(2, None)
    assert [c.kind for c in died] == ["broker_died"]
    assert died[0].data == {"broker": 2, "led": ["orders-0"]}
    elected = model.set_partition_state("orders", 0, state(3, 4, [3, 1]))
    assert [(c.kind, c.sentence) for c in elected] == [
        ("leader_changed",
         "broker 2 died; partition orders-0 elected leader 3 from ISR [3,1] (epoch 4)")]
    shrunk = model.set_partition_state("orders", 1, state(3, 0, [3, 1]))
    assert [c.sentence for c in shrunk] == [
        "partition orders-1 dropped dead broker 2 from its ISR, now [3,1]"]
    assert model.set_broker(2, None) == []      # already dead: said once
    back = model.set_broker(2, BrokerRegistration.plaintext(2, "127.0.0.1", 9093))
    assert [c.sentence for c in back] == [
        "broker 2 is back at 127.0.0.1:9093 and registered again in ZooKeeper"]


def test_controller_is_announced_once_both_znodes_of_the_election_arrived():
    model = ClusterModel()
    assert model.set_controller(1, 1000) == []              # epoch not known yet
    first = model.set_controller_epoch(1)
    assert [c.sentence for c in first] == ["broker 1 is now the controller (epoch 1)"]
    gone = model.set_controller(None, None)
    assert [c.kind for c in gone] == ["controller_gone"]
    assert model.set_controller_epoch(2) == []              # no controller registered yet
    moved = model.set_controller(3, 2000)
    assert [c.sentence for c in moved] == [
        "controller moved from broker 1 to broker 3 (epoch 2)"]
    # the new registration first, its epoch second: still one sentence, with the new epoch
    assert model.set_controller(2, 3000) == []
    assert [c.sentence for c in model.set_controller_epoch(3)] == [
        "controller moved from broker 3 to broker 2 (epoch 3)"]


def test_topics_created_grown_and_deleted():
    model = ClusterModel()
    model.set_topics(["t"])
    created = model.set_assignment("t", TopicAssignment({0: (1, 2), 1: (2, 1)}))
    assert [c.sentence for c in created] == [
        "topic t created with 2 partitions, replication factor 2"]
    grown = model.set_assignment("t", TopicAssignment({0: (1, 2), 1: (2, 1), 2: (1, 2)}))
    assert [c.sentence for c in grown] == ["topic t grew from 2 to 3 partitions"]
    assert [c.sentence for c in model.set_topics([])] == ["topic t deleted"]


def test_zookeeper_group_members_owners_and_completeness():
    model = three_broker_model()
    model.set_zk_groups(["g"])
    joined = model.set_zk_members("g", ["g_h-1-aaaaaaaa", "g_h-2-bbbbbbbb"])
    assert [c.sentence for c in joined] == [
        "group g (zookeeper): member aaaaaaaa joined (2 members)",
        "group g (zookeeper): member bbbbbbbb joined (2 members)"]
    assert model.set_zk_owner("g", "orders", 0, "g_h-1-aaaaaaaa-0") is True
    assert model.set_zk_owner("g", "orders", 0, "g_h-1-aaaaaaaa-0") is False
    assert not model.zk_assignment_complete("g")             # orders-1 has no owner yet
    model.set_zk_owner("g", "orders", 1, "g_h-1-aaaaaaaa-0")
    assert model.zk_assignment_complete("g")
    assert model.zk_assignment("g") == {"g_h-1-aaaaaaaa": [("orders", 0), ("orders", 1)],
                                        "g_h-2-bbbbbbbb": []}
    left = model.set_zk_members("g", ["g_h-2-bbbbbbbb"])
    assert [c.kind for c in left] == ["member_left"]
    assert not model.zk_assignment_complete("g")             # owned by a member that left


# --- rates, views, coordinator diffs --------------------------------------------------------------

def test_rates_over_the_window_and_after_a_reset():
    rates = RateTracker(window_s=10.0)
    rates.add(0.0, {("t", 0): 100})
    assert rates.rate(("t", 0)) == 0.0
    rates.add(2.0, {("t", 0): 300, ("t", 1): 0})
    rates.add(4.0, {("t", 0): 500, ("t", 1): 40})
    assert rates.rate(("t", 0)) == 100.0
    assert rates.topic_rates() == {"t": 120.0}
    rates.add(20.0, {("t", 0): 500, ("t", 1): 40})            # idle: the old samples age out
    assert rates.rate(("t", 0)) == 0.0
    rates.add(22.0, {("t", 0): 10})                          # recreated topic: start over
    assert rates.rate(("t", 0)) == 0.0


def test_cluster_view_shape_and_dead_brokers():
    model = three_broker_model()
    model.set_broker(2, None)
    model.set_partition_state("orders", 0, state(3, 4, [3, 1]))
    model.set_controller(1, 5)
    model.set_controller_epoch(7)
    offsets = {("orders", 0): PartitionOffsets(high_watermark=10, log_end_offset=12,
                                               last_stable_offset=7)}
    view = cluster_view(model, offsets, RateTracker())
    assert view["controller"] == {"broker_id": 1, "epoch": 7}
    assert [(b["id"], b["alive"], b["port"]) for b in view["brokers"]] == [
        (1, True, 9092), (2, False, 9093), (3, True, 9094)]
    p0, p1 = view["topics"]["orders"]["partitions"]
    assert p0 == {"partition": 0, "leader": 3, "leader_epoch": 4, "replicas": [2, 3, 1],
                  "isr": [3, 1], "offline": False, "offline_replicas": [2],
                  "log_end_offset": 12, "high_watermark": 10, "last_stable_offset": 7,
                  "open_transaction": True, "records_per_s": 0.0}
    assert p1["high_watermark"] is None and p1["offline_replicas"] == [2]
    assert p1["last_stable_offset"] is None and p1["open_transaction"] is False
    assert view["transactions"] == []


def test_no_open_transaction_when_the_lso_is_the_hw_or_unknown():
    model = three_broker_model()
    offsets = {("orders", 0): PartitionOffsets(10, 10, 10), ("orders", 1): PartitionOffsets(3, 3)}
    p0, p1 = cluster_view(model, offsets, RateTracker())["topics"]["orders"]["partitions"]
    assert (p0["last_stable_offset"], p0["open_transaction"]) == (10, False)
    assert (p1["last_stable_offset"], p1["open_transaction"]) == (None, False)


def test_groups_view_computes_lag_for_both_kinds():
    model = three_broker_model()
    model.set_zk_groups(["zg"])
    model.set_zk_members("zg", ["zg_h-1-aaaaaaaa"])
    model.set_zk_owner("zg", "orders", 0, "zg_h-1-aaaaaaaa-0")
    model.set_zk_offset("zg", "orders", 0, 4)
    coordinator = [{"group": "cg", "kind": "coordinator", "state": "Stable",
                    "assignment_strategy": "range", "coordinator": 2,
                    "members": [{"id": "c-1", "client_id": "c", "host": "/127.0.0.1",
                                 "partitions": [["orders", 1]]}],
                    "committed": {"orders:1": 1}}]
    offsets = {("orders", 0): PartitionOffsets(10, 10), ("orders", 1): PartitionOffsets(3, 3)}
    zg, cg = groups_view(model, offsets, coordinator)["groups"]
    assert (zg["group"], zg["kind"], zg["state"]) == ("zg", "zookeeper", "Stable")
    assert zg["offsets"] == [{"topic": "orders", "partition": 0, "committed": 4,
                              "log_end_offset": 10, "lag": 6, "owner": "zg_h-1-aaaaaaaa"}]
    assert cg["members"][0]["partitions"] == [{"topic": "orders", "partition": 1}]
    assert cg["offsets"][0]["lag"] == 2


def test_coordinator_group_changes_between_samples():
    one = {"group": "cg", "members": [{"id": "c-1-aaaaaaaa", "partitions": [["t", 0], ["t", 1]]}]}
    two = {"group": "cg", "members": [{"id": "c-1-aaaaaaaa", "partitions": [["t", 0]]},
                                      {"id": "c-2-bbbbbbbb", "partitions": [["t", 1]]}]}
    assert coordinator_group_changes(None, [one]) == []
    changes = coordinator_group_changes([one], [two])
    assert [c.sentence for c in changes] == [
        "group cg (coordinator): member bbbbbbbb joined (2 members)",
        "group cg (coordinator) rebalanced: aaaaaaaa owns t-0; bbbbbbbb owns t-1"]
    assert [c.kind for c in coordinator_group_changes([two], [])] == ["group_gone"]
