"""Consumer groups: membership, rebalances, assignments, offsets, and the group APIs' errors.

Member ids are chance (normalised); which member gets which partitions depends on their order,
so rebalances are reported as the sizes of the assignments and the callbacks each consumer saw.
Error cases are asked with raw requests at the group's coordinator, where the error code is the
whole answer.
"""

from __future__ import annotations

import time

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("groups")
scenario = family.scenario

_RANGE_METADATA = b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"   # consumer protocol v1, no topics


class Member:
    """A confluent-kafka consumer in a group, recording its rebalance callbacks."""

    def __init__(self, ctx: Context, group: str, topics: list[str], **conf):
        self.events: list[str] = []
        self.assigned: set[int] = set()
        self.consumer = clients.consumer(ctx, group, **conf)
        self.cooperative = conf.get("partition_assignment_strategy") == "cooperative-sticky"
        self.consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke)

    def _on_assign(self, consumer, partitions):
        if partitions:          # librdkafka also reports empty incremental assignments
            self.events.append(f"assign {len(partitions)}")
        if self.cooperative:
            self.assigned |= {p.partition for p in partitions}
        else:
            self.assigned = {p.partition for p in partitions}

    def _on_revoke(self, consumer, partitions):
        if partitions:
            self.events.append(f"revoke {len(partitions)}")
        self.assigned -= {p.partition for p in partitions}

    def seen(self) -> list[str]:
        """The callbacks so far, without the sizes after the first assignment: which member
        gets the larger share depends on the order of their (random) member ids."""
        return self.events[:2] + [e.split()[0] for e in self.events[2:]]

    def poll(self) -> None:
        self.consumer.poll(0.1)

    def close(self) -> None:
        self.consumer.close()


def _poll_until(members: list[Member], condition, what: str, ctx: Context) -> None:
    deadline = time.monotonic() + ctx.timeout_s
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
        if condition():
            return
    raise clients.ScenarioError(f"timed out waiting for {what}: "
                                f"{[(m.events, sorted(m.assigned)) for m in members]}")


def _describe(ctx: Context, group: str) -> dict:
    client = clients.admin(ctx)
    result = clients.outcome(client.describe_consumer_groups([group])[group], ctx.timeout_s)
    if isinstance(result, dict):
        return result
    return {"state": str(result.state).rsplit(".", 1)[-1],
            "protocol": result.partition_assignor, "simple": result.is_simple_consumer_group,
            "members": sorted([len(m.assignment.topic_partitions), m.group_instance_id]
                              for m in result.members)}


def _committed_group(ctx: Context, group: str, topic: str, offsets: dict[int, int]) -> None:
    """A group with committed offsets and no members (a consumer that commits and closes;
    retried while the coordinator moves or loads)."""
    c = clients.consumer(ctx, group)
    try:
        clients.wait_for(lambda: c.commit(offsets=[TopicPartition(topic, p, o)
                                                   for p, o in offsets.items()],
                                          asynchronous=False), f"a commit by {group}",
                         ctx.timeout_s, 0.2)
    finally:
        c.close()


@scenario("group-single-member", "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat",
          "DescribeGroups", "LeaveGroup")
def group_single_member(ctx: Context) -> object:
    """One consumer subscribes to a 3-partition topic: its callbacks, the group as described
    while it is a member, and after it leaves."""
    topic = clients.create_topic(ctx, "t", partitions=3)
    group = ctx.name("g")
    member = Member(ctx, group, [topic])
    _poll_until([member], lambda: len(member.assigned) == 3, "3 partitions", ctx)
    while_member = _describe(ctx, group)
    events = list(member.events)
    member.close()
    after = clients.wait_for(lambda: (lambda d: d if d.get("state") != "STABLE" else None)(
        _describe(ctx, group)), "the group to empty", ctx.timeout_s)
    return {"events": events, "member": while_member, "after leave": after}


@scenario("group-rebalance-range", "JoinGroup", "SyncGroup", "Heartbeat")
def group_rebalance_range(ctx: Context) -> object:
    """A second consumer joins (eager range assignor): both sides' callbacks and the sizes of
    the new assignments."""
    topic = clients.create_topic(ctx, "t", partitions=3)
    group = ctx.name("g")
    first = Member(ctx, group, [topic])
    _poll_until([first], lambda: len(first.assigned) == 3, "the first assignment", ctx)
    second = Member(ctx, group, [topic])
    try:
        _poll_until([first, second], lambda: second.assigned and
                    len(first.assigned) + len(second.assigned) == 3, "the rebalance", ctx)
        return {"first": first.seen(), "second": [e.split()[0] for e in second.events],
                "sizes": sorted([len(first.assigned), len(second.assigned)]),
                "group": _describe(ctx, group)}
    finally:
        second.close()
        first.close()


@scenario("group-rebalance-cooperative", "JoinGroup", "SyncGroup", "Heartbeat")
def group_rebalance_cooperative(ctx: Context) -> object:
    """The same with cooperative-sticky (KIP-429): the first consumer gives up only what moves."""
    topic = clients.create_topic(ctx, "t", partitions=4)
    group = ctx.name("g")
    conf = {"partition_assignment_strategy": "cooperative-sticky"}
    first = Member(ctx, group, [topic], **conf)
    _poll_until([first], lambda: len(first.assigned) == 4, "the first assignment", ctx)
    second = Member(ctx, group, [topic], **conf)
    try:
        _poll_until([first, second], lambda: len(first.assigned) == 2 and
                    len(second.assigned) == 2, "two partitions each", ctx)
        return {"first": list(first.events), "second": list(second.events),
                "group": _describe(ctx, group)}
    finally:
        second.close()
        first.close()


@scenario("group-static-member", "JoinGroup", "DescribeGroups")
def group_static_member(ctx: Context) -> object:
    """A static member (group.instance.id, KIP-345) that closes stays in the group until its
    session ends."""
    topic = clients.create_topic(ctx, "t", partitions=2)
    group = ctx.name("g")
    member = Member(ctx, group, [topic], group_instance_id=ctx.name("i"))
    _poll_until([member], lambda: len(member.assigned) == 2, "2 partitions", ctx)
    member.close()
    return _describe(ctx, group)


@scenario("commit-and-fetch-offsets", "OffsetCommit", "OffsetFetch")
def commit_and_fetch_offsets(ctx: Context) -> object:
    """A consumer commits offsets with metadata; committed() and the admin's group offsets."""
    topic = clients.create_topic(ctx, "t", partitions=2)
    group = ctx.name("g")
    c = clients.consumer(ctx, group)
    try:
        c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        tps = [TopicPartition(topic, 0, 5, metadata="meta"), TopicPartition(topic, 1, 7)]
        answer = c.commit(offsets=tps, asynchronous=False)
        committed = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)],
                                ctx.timeout_s)
    finally:
        c.close()
    client = clients.admin(ctx)
    listed = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    listed = clients.outcome(listed, ctx.timeout_s)
    return {"commit": [[t.partition, t.offset, clients.error(t.error)] for t in answer],
            "committed": [[t.partition, t.offset, t.metadata] for t in committed],
            "admin": listed if isinstance(listed, dict) else sorted(
                [t.partition, t.offset] for t in listed.topic_partitions)}


@scenario("commit-unknown-topic", "OffsetCommit")
def commit_unknown_topic(ctx: Context) -> object:
    """Committing an offset for a topic that does not exist."""
    group = ctx.name("g")
    c = clients.consumer(ctx, group)
    try:
        answer = c.commit(offsets=[TopicPartition(ctx.name("none"), 0, 3)], asynchronous=False)
        return [[t.partition, t.offset, clients.error(t.error)] for t in answer]
    except Exception as exc:  # noqa: BLE001 - the client's error is the answer
        return {"error": clients.error(exc)}
    finally:
        c.close()


@scenario("commit-raw-errors", "OffsetCommit")
def commit_raw_errors(ctx: Context) -> object:
    """OffsetCommit v8 at the coordinator: a simple commit (generation -1), an unknown
    partition of a known topic, an unknown member with a generation, and at a broker that is
    not the coordinator."""
    topic = clients.create_topic(ctx, "t")
    group = ctx.name("g")
    coordinator = clients.coordinator_address(ctx, group)

    def commit(address, partition, generation=-1, member=""):
        answer = raw.call(address, 8, 8, {
            "group_id": group, "generation_id_or_member_epoch": generation,
            "member_id": member, "group_instance_id": None, "topics": [{
                "name": topic, "partitions": [{"partition_index": partition,
                                               "committed_offset": 1,
                                               "committed_leader_epoch": -1,
                                               "committed_metadata": None}]}]})
        return answer["topics"][0]["partitions"][0]["error_code"]

    return {"simple": commit(coordinator, 0), "unknown partition": commit(coordinator, 9),
            "unknown member": commit(coordinator, 0, 3, "who"),
            "not coordinator": commit(clients.other_address(ctx, coordinator), 0)}


@scenario("offset-fetch-raw", "OffsetFetch")
def offset_fetch_raw(ctx: Context) -> object:
    """OffsetFetch v7 of a group that never existed (one partition, and all), and of a group
    with a commit."""
    topic = clients.create_topic(ctx, "t")
    group = ctx.name("g")
    _committed_group(ctx, group, topic, {0: 4})
    coordinator = clients.coordinator_address(ctx, group)

    def fetch(group_id, topics):
        answer = raw.call(coordinator, 9, 7, {"group_id": group_id, "topics": topics,
                                              "require_stable": False})
        return {"error": answer["error_code"], "topics": [
            [t["name"], [[p["partition_index"], p["committed_offset"], p["metadata"],
                          p["error_code"]] for p in t["partitions"]]] for t in answer["topics"]]}

    never = ctx.name("never")
    never_coordinator = clients.coordinator_address(ctx, never)
    none = raw.call(never_coordinator, 9, 7, {"group_id": never, "topics": [
        {"name": topic, "partition_indexes": [0]}], "require_stable": False})
    return {"never": [none["error_code"], none["topics"][0]["partitions"][0]["committed_offset"]],
            "committed": fetch(group, [{"name": topic, "partition_indexes": [0, 1]}]),
            "all": fetch(group, None)}


@scenario("alter-group-offsets", "OffsetCommit", "OffsetFetch")
def alter_group_offsets(ctx: Context) -> object:
    """AdminClient.alter_consumer_group_offsets on an empty group, then listed."""
    topic = clients.create_topic(ctx, "t")
    group = ctx.name("g")
    client = clients.admin(ctx)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 11)])
    altered = clients.outcome(client.alter_consumer_group_offsets([request])[group],
                              ctx.timeout_s)
    listed = clients.outcome(client.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)])[group], ctx.timeout_s)

    def tps(result):
        return result if isinstance(result, dict) else [
            [t.partition, t.offset, clients.error(t.error)] for t in result.topic_partitions]

    return {"altered": tps(altered), "listed": tps(listed)}


@scenario("list-groups", "ListGroups")
def list_groups(ctx: Context) -> object:
    """A group with offsets only (Empty) in ListGroups v4, filtered by state and not, and in
    AdminClient.list_consumer_groups."""
    topic = clients.create_topic(ctx, "t")
    group = ctx.name("g")
    _committed_group(ctx, group, topic, {0: 1})
    coordinator = clients.coordinator_address(ctx, group)

    def listed(states):
        answer = raw.call(coordinator, 16, 4, {"states_filter": states})
        return [answer["error_code"], [[g["group_id"], g["protocol_type"], g["group_state"]]
                                       for g in answer["groups"] if g["group_id"] == group]]

    client = clients.admin(ctx)
    result = clients.outcome(client.list_consumer_groups(request_timeout=10), ctx.timeout_s)
    mine = [[g.group_id, g.is_simple_consumer_group, str(g.state).rsplit(".", 1)[-1]]
            for g in result.valid if g.group_id == group]
    return {"all": listed([]), "Empty": listed(["Empty"]), "Stable": listed(["Stable"]),
            "admin": mine}


@scenario("describe-groups-raw", "DescribeGroups")
def describe_groups_raw(ctx: Context) -> object:
    """DescribeGroups v5 of a group that never existed, and of an empty group with offsets."""
    topic = clients.create_topic(ctx, "t")
    group = ctx.name("g")
    _committed_group(ctx, group, topic, {0: 1})
    coordinator = clients.coordinator_address(ctx, group)
    answer = raw.call(coordinator, 15, 5, {"groups": [group],
                                           "include_authorized_operations": False})
    never = ctx.name("never")
    none = raw.call(clients.coordinator_address(ctx, never), 15, 5, {
        "groups": [never], "include_authorized_operations": False})
    return {"empty": answer["groups"], "never": none["groups"]}


@scenario("delete-groups", "DeleteGroups")
def delete_groups(ctx: Context) -> object:
    """Deleting a group with a member, an empty group with offsets, and an unknown group."""
    topic = clients.create_topic(ctx, "t")
    busy, empty, unknown = ctx.name("busy"), ctx.name("empty"), ctx.name("unknown")
    _committed_group(ctx, empty, topic, {0: 2})
    member = Member(ctx, busy, [topic])
    try:
        _poll_until([member], lambda: member.assigned, "an assignment", ctx)
        client = clients.admin(ctx)
        futures = client.delete_consumer_groups([busy, empty, unknown], request_timeout=10)
        out = {}
        for name, label in ((busy, "busy"), (empty, "empty"), (unknown, "unknown")):
            result = clients.outcome(futures[name], ctx.timeout_s)
            out[label] = result if isinstance(result, dict) else "deleted"
        return out
    finally:
        member.close()


@scenario("offset-delete", "OffsetDelete")
def offset_delete(ctx: Context) -> object:
    """OffsetDelete (KIP-496) of an empty group's offsets, of a subscribed group's, of an
    unknown group's."""
    topic = clients.create_topic(ctx, "t")
    empty, busy, unknown = ctx.name("empty"), ctx.name("busy"), ctx.name("unknown")
    _committed_group(ctx, empty, topic, {0: 2})

    def delete(group):
        answer = raw.call(clients.coordinator_address(ctx, group), 47, 0, {
            "group_id": group, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0}]}]})
        return [answer["error_code"], [[p["partition_index"], p["error_code"]]
                                       for t in answer["topics"] for p in t["partitions"]]]

    member = Member(ctx, busy, [topic])
    try:
        _poll_until([member], lambda: member.assigned, "an assignment", ctx)
        member.consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        return {"empty": delete(empty), "subscribed": delete(busy), "unknown": delete(unknown)}
    finally:
        member.close()


def _join(address: str, group: str, member: str = "", session_ms: int = 10000,
          protocols: list[str] | None = None, protocol_type: str = "consumer",
          version: int = 5) -> dict:
    return raw.call(address, 11, version, {
        "group_id": group, "session_timeout": session_ms, "rebalance_timeout": 10000,
        "member_id": member, "group_instance_id": None, "protocol_type": protocol_type,
        "protocols": [{"name": p, "metadata": _RANGE_METADATA}
                      for p in protocols or ["range"]]}, timeout_s=15)


@scenario("join-group-errors", "JoinGroup", "FindCoordinator")
def join_group_errors(ctx: Context) -> object:
    """JoinGroup v5 without a member id (KIP-394: MEMBER_ID_REQUIRED and an id), with a
    session timeout below group.min.session.timeout.ms, with an unknown member id, at a
    broker that is not the coordinator, and JoinGroup v3 (no member id needed)."""
    group = ctx.name("g")
    coordinator = clients.coordinator_address(ctx, group)
    first = _join(coordinator, group)
    short_group = ctx.name("short")
    short = _join(clients.coordinator_address(ctx, short_group), short_group, session_ms=1000)
    unknown = _join(coordinator, group, member="not-a-member")
    other = _join(clients.other_address(ctx, coordinator), group)
    v3 = _join(coordinator, group, version=3)
    return {"no member id": [first["error_code"], bool(first["member_id"]),
                             first["generation_id"]],
            "short session": short["error_code"], "unknown member": unknown["error_code"],
            "not coordinator": other["error_code"],
            "v3": [v3["error_code"], v3["generation_id"], v3["protocol_name"],
                   v3["leader"] == v3["member_id"], len(v3["members"])]}


@scenario("join-group-protocol-mismatch", "JoinGroup", "LeaveGroup")
def join_group_protocol_mismatch(ctx: Context) -> object:
    """A member of a 'consumer' group on 'range'; a second asking only 'roundrobin', and a
    third of another protocol type; then the first leaves, and leaves again."""
    group = ctx.name("g")
    coordinator = clients.coordinator_address(ctx, group)
    first = _join(coordinator, group, version=3)
    second = _join(coordinator, group, protocols=["roundrobin"], version=3)
    third = _join(coordinator, group, protocol_type="connect", version=3)
    members = [{"member_id": first["member_id"], "group_instance_id": None}]
    leave = raw.call(coordinator, 13, 3, {"group_id": group, "members": members})
    again = raw.call(coordinator, 13, 3, {"group_id": group, "members": members})
    return {"first": first["error_code"], "other protocol": second["error_code"],
            "other type": third["error_code"],
            "leave": [leave["error_code"], [m["error_code"] for m in leave["members"]]],
            "leave again": [again["error_code"], [m["error_code"] for m in again["members"]]]}


@scenario("sync-and-heartbeat-errors", "SyncGroup", "Heartbeat")
def sync_and_heartbeat_errors(ctx: Context) -> object:
    """A joined member (v3) heartbeats before syncing, syncs, heartbeats with the wrong
    generation; an unknown member heartbeats and syncs; a group that does not exist."""
    group = ctx.name("g")
    coordinator = clients.coordinator_address(ctx, group)
    joined = _join(coordinator, group, version=3)
    member, generation = joined["member_id"], joined["generation_id"]

    def heartbeat(gen, who, group_id=group):
        address = coordinator if group_id == group else clients.coordinator_address(ctx, group_id)
        return raw.call(address, 12, 3, {"group_id": group_id, "generation_id": gen,
                                             "member_id": who,
                                             "group_instance_id": None})["error_code"]

    def sync(gen, who, assignments):
        answer = raw.call(coordinator, 14, 3, {"group_id": group, "generation_id": gen,
                                               "member_id": who, "group_instance_id": None,
                                               "assignments": assignments})
        return [answer["error_code"], answer["assignment"]]

    before = heartbeat(generation, member)
    synced = sync(generation, member, [{"member_id": member, "assignment": b"\x00\x01"}])
    return {"heartbeat before sync": before, "sync": synced,
            "heartbeat": heartbeat(generation, member),
            "wrong generation": heartbeat(generation + 5, member),
            "unknown member": heartbeat(generation, "nobody"),
            "sync unknown member": sync(generation, "nobody", []),
            "unknown group": heartbeat(1, "nobody", ctx.name("nogroup"))}


@scenario("find-coordinator-v0", "FindCoordinator")
def find_coordinator_v0(ctx: Context) -> object:
    """FindCoordinator v0 (a group id only) answers the same coordinator as v3."""
    group = ctx.name("g")
    v3 = clients.coordinator_address(ctx, group)
    v0 = raw.call(ctx.addresses[0], 10, 0, {"key": group})
    return [v0["error_code"], f"{v0['host']}:{v0['port']}" == v3]


@scenario("find-coordinator-unknown-key-type", "FindCoordinator")
def find_coordinator_unknown_key_type(ctx: Context) -> object:
    """FindCoordinator v3 with key type 7 (0 is a group, 1 a transactional id)."""
    answer = raw.call(ctx.addresses[0], 10, 3, {"key": ctx.name("g"), "key_type": 7})
    return answer["error_code"]


@scenario("find-coordinator-empty-group", "FindCoordinator")
def find_coordinator_empty_group(ctx: Context) -> object:
    """FindCoordinator v3 for the empty group id."""
    def found():
        answer = raw.call(ctx.addresses[0], 10, 3, {"key": "", "key_type": 0})
        return answer["error_code"] != "COORDINATOR_NOT_AVAILABLE" and answer["error_code"]

    return clients.wait_for(found, "an answer other than COORDINATOR_NOT_AVAILABLE",
                            ctx.timeout_s)
