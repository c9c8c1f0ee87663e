"""The scenario whose ZooKeeper layout kafkalite and Apache Kafka 2.8.2 are compared on.

:func:`run_scenario` drives one cluster (kafkalite's ``LocalCluster`` or ``ApacheKafkaCluster``)
through it with Kafka's own tools and confluent-kafka, waiting on ZooKeeper itself after each step
until the cluster has acted on it; :func:`dump_tree` reads the cluster's chroot with Kafka's
``zookeeper-shell``. The test runs both clusters' scenarios side by side (one thread each) so the
waits overlap. :data:`SCENARIO` describes the steps for the generated document.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient

from kafkalite.testing.apache_kafka import run_tool
from kafkalite.local.cluster import ClusterError, wait_until
from kafkalite.testing.zk_layout import (
    LayoutDumpError, Znode, get_script, parse_get_stat, parse_ls_recursive,
)

TOPIC = "layout-a"              # 3 partitions, replication 2, a config override; the group's
DELETED_TOPIC = "layout-b"      # 1 partition, replication 3; deleted
GROUP = "layout-group"
USER = "layout-user"
ACL_TOPIC, ACL_GROUP, ACL_PREFIX = "acl-topic", "acl-group", "acl-"
RECORDS = 10
WAIT_S = 90.0

# broker settings both clusters get on top of SHARED_SETTINGS: an ACL authorizer, so that the
# brokers watch /kafka-acl-changes as Kafka's do (everyone allowed where no ACL names a resource)
AUTHORIZER_SETTINGS = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}

SCENARIO = [
    f"create topic `{TOPIC}` (3 partitions, replication factor 2, `retention.ms` override) and "
    f"`{DELETED_TOPIC}` (1 partition, replication factor 3) with confluent-kafka's AdminClient",
    f"`kafka-reassign-partitions --zookeeper ... --execute`: `{TOPIC}` partition 0 onto brokers "
    "1, 2, 3; wait until `/admin/reassign_partitions` is gone",
    f"`kafka-configs --bootstrap-server ... --alter --entity-type topics`: "
    f"`max.message.bytes` on `{TOPIC}`",
    f"`kafka-acls --authorizer-properties zookeeper.connect=... --add`: Read on topic "
    f"`{ACL_TOPIC}` and group `{ACL_GROUP}`, Write on the prefixed topic `{ACL_PREFIX}`",
    f"`kafka-configs --zookeeper ... --entity-type users --add-config "
    f"'SCRAM-SHA-256=[password=...]'` for `{USER}`",
    f"an idempotent confluent-kafka producer writes {RECORDS} records to `{TOPIC}`; a consumer "
    f"in group `{GROUP}` reads them and commits (so `__consumer_offsets` is created)",
    f"delete topic `{DELETED_TOPIC}`; wait until its znodes and `/admin/delete_topics/` "
    "children are gone",
    "wait until every ISR holds every replica; kill -9 the highest-id broker that is not the "
    "controller; wait until its registration is gone, every partition is led by a live replica "
    "with every live replica in the ISR (none names the dead broker), and "
    "`/isr_change_notification` is empty; then dump the tree",
]


@dataclass
class Side:
    """One system under the scenario."""
    name: str                   # "kafkalite" or "kafka"
    cluster: Any                # LocalCluster or ApacheKafkaCluster
    zk_connect: str             # with the cluster's chroot
    workdir: str
    victim: int | None = None


def _zk(side: Side) -> KazooClient:
    client = KazooClient(hosts=side.zk_connect, timeout=15.0)
    client.start(timeout=15.0)
    return client


def _tool(side: Side, tool: str, *args: str, input: str | None = None) -> str:
    proc = run_tool(tool, *args, input=input, timeout_s=180)
    if proc.returncode != 0:
        raise ClusterError(f"[{side.name}] {tool} {' '.join(args)} exited {proc.returncode}:\n"
                           f"stdout: {proc.stdout}\nstderr: {proc.stderr[-3000:]}")
    return proc.stdout


def _json(zk: KazooClient, path: str) -> Any:
    data, _stat = zk.get(path)
    return json.loads(data)


def run_scenario(side: Side) -> None:
    zk = _zk(side)
    try:
        _create_topics(side, zk)
        _reassign(side, zk)
        _alter_topic_config(side, zk)
        _acls_and_scram(side, zk)
        _consume_and_commit(side)
        _delete_topic(side, zk)
        _kill_a_broker(side, zk)
    finally:
        zk.stop()
        zk.close()


def _create_topics(side: Side, zk: KazooClient) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": side.cluster.bootstrap_servers})
    futures = admin.create_topics([
        NewTopic(TOPIC, 3, 2, config={"retention.ms": "86400000"}),
        NewTopic(DELETED_TOPIC, 1, 3)])
    for future in futures.values():
        future.result(60)

    def led() -> bool:
        for topic, count in ((TOPIC, 3), (DELETED_TOPIC, 1)):
            for p in range(count):
                state = _json(zk, f"/brokers/topics/{topic}/partitions/{p}/state")
                if state["leader"] < 0:
                    return False
        return True
    wait_until(led, WAIT_S, f"[{side.name}] leaders for the new topics", interval_s=0.2)


def _reassign(side: Side, zk: KazooClient) -> None:
    plan = os.path.join(side.workdir, "reassignment.json")
    with open(plan, "w") as fh:
        json.dump({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": 0, "replicas": [1, 2, 3]}]}, fh)
    _tool(side, "kafka-reassign-partitions", "--zookeeper", side.zk_connect,
          "--reassignment-json-file", plan, "--execute")

    def done() -> bool:
        if zk.exists("/admin/reassign_partitions"):
            return False
        assignment = _json(zk, f"/brokers/topics/{TOPIC}")
        state = _json(zk, f"/brokers/topics/{TOPIC}/partitions/0/state")
        return (assignment["partitions"]["0"] == [1, 2, 3]
                and not assignment.get("adding_replicas") and sorted(state["isr"]) == [1, 2, 3])
    wait_until(done, WAIT_S, f"[{side.name}] the reassignment of {TOPIC}-0", interval_s=0.2)


def _alter_topic_config(side: Side, zk: KazooClient) -> None:
    _tool(side, "kafka-configs", "--bootstrap-server", side.cluster.bootstrap_servers, "--alter",
          "--entity-type", "topics", "--entity-name", TOPIC,
          "--add-config", "max.message.bytes=2000000")
    wait_until(lambda: "max.message.bytes" in _json(zk, f"/config/topics/{TOPIC}")["config"],
               WAIT_S, f"[{side.name}] the config change of {TOPIC}", interval_s=0.2)


def _acls_and_scram(side: Side, zk: KazooClient) -> None:
    authorizer = ["--authorizer-properties", f"zookeeper.connect={side.zk_connect}"]
    principal = ["--allow-principal", f"User:{USER}"]
    _tool(side, "kafka-acls", *authorizer, "--add", *principal, "--operation", "Read",
          "--topic", ACL_TOPIC, "--group", ACL_GROUP)
    _tool(side, "kafka-acls", *authorizer, "--add", *principal, "--operation", "Write",
          "--topic", ACL_PREFIX, "--resource-pattern-type", "prefixed")
    _tool(side, "kafka-configs", "--zookeeper", side.zk_connect, "--alter",
          "--entity-type", "users", "--entity-name", USER,
          "--add-config", "SCRAM-SHA-256=[iterations=4096,password=layout-secret]")
    assert zk.exists(f"/kafka-acl/Topic/{ACL_TOPIC}"), "kafka-acls wrote no /kafka-acl"
    assert zk.exists(f"/config/users/{USER}"), "kafka-configs wrote no user"


def _consume_and_commit(side: Side) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap = side.cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "acks": "all", "log_level": 0})
    for n in range(RECORDS):
        producer.produce(TOPIC, key=str(n % 3).encode(), value=f"record {n}".encode())
    left = producer.flush(60)
    if left:
        raise ClusterError(f"[{side.name}] {left} records not delivered")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "log_level": 0})
    try:
        consumer.subscribe([TOPIC])
        seen: list[Any] = []

        def read_all() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg)
            return len(seen) >= RECORDS
        wait_until(read_all, WAIT_S, f"[{side.name}] the group to read {RECORDS} records",
                   interval_s=0)
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(TOPIC, p) for p in range(3)], timeout=30)
        if sum(max(tp.offset, 0) for tp in committed) != RECORDS:
            raise ClusterError(f"[{side.name}] committed offsets {committed}")
    finally:
        consumer.close()


def _delete_topic(side: Side, zk: KazooClient) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": side.cluster.bootstrap_servers})
    admin.delete_topics([DELETED_TOPIC])[DELETED_TOPIC].result(60)
    wait_until(lambda: (not zk.exists(f"/brokers/topics/{DELETED_TOPIC}")
                        and not zk.exists(f"/config/topics/{DELETED_TOPIC}")
                        and not zk.get_children("/admin/delete_topics")),
               WAIT_S, f"[{side.name}] the deletion of {DELETED_TOPIC}", interval_s=0.2)


def _settled_without(zk: KazooClient, victim: int) -> bool:
    """Every partition led by a live replica, its ISR every replica but ``victim`` (so no ISR
    change is still to come), and no ISR change notification waiting."""
    if zk.exists(f"/brokers/ids/{victim}") or zk.get_children("/isr_change_notification"):
        return False
    for topic in zk.get_children("/brokers/topics"):
        replicas = _json(zk, f"/brokers/topics/{topic}")["partitions"]
        for p in zk.get_children(f"/brokers/topics/{topic}/partitions"):
            state = _json(zk, f"/brokers/topics/{topic}/partitions/{p}/state")
            alive = sorted(r for r in replicas[p] if r != victim)
            if state["leader"] not in alive or sorted(state["isr"]) != alive:
                return False
    return True


def _kill_a_broker(side: Side, zk: KazooClient) -> None:
    controller = _json(zk, "/controller")["brokerid"]
    side.victim = max(b for b in side.cluster.brokers if b != controller)
    # first every ISR complete, so that the ISR changes seen after the kill are the kill's
    wait_until(lambda: _settled_without(zk, -1), WAIT_S, f"[{side.name}] every ISR complete",
               interval_s=0.2)
    side.cluster.kill(side.victim)
    wait_until(lambda: _settled_without(zk, side.victim), WAIT_S,
               f"[{side.name}] the controller to move leaders and ISRs off broker {side.victim}",
               interval_s=0.2)


def dump_tree(side: Side, attempts: int = 3) -> dict[str, Znode]:
    """Every znode under the side's chroot, read with Kafka's zookeeper-shell: ``ls -R /``, then
    ``get -s`` on each path (listed again when a znode went away in between)."""
    for attempt in range(attempts):
        listing = _tool(side, "zookeeper-shell", side.zk_connect, input="ls -R /\n")
        paths = parse_ls_recursive(listing)
        if not paths:
            raise ClusterError(f"[{side.name}] zookeeper-shell listed nothing:\n{listing}")
        out = _tool(side, "zookeeper-shell", side.zk_connect, input=get_script(paths))
        try:
            return parse_get_stat(out, paths)
        except LayoutDumpError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def run_and_dump(side: Side) -> dict[str, Znode]:
    run_scenario(side)
    return dump_tree(side)
