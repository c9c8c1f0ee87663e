"""ACL refusals, on the authorizer pair (``conformance.clusters``): one broker of each system with
Kafka's AclAuthorizer semantics and allow.everyone.if.no.acl.found=true.

Each scenario denies ``User:ANONYMOUS`` (every PLAINTEXT client) something on resources named by
its own prefix, waits until the broker applies the ACL, then asks the APIs that need it: the
error codes are the answer. ACL administration (describe, delete, invalid bindings) is asked for
another principal, so that it refuses nothing.
"""

from __future__ import annotations

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.catalogue import records
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("security")


def scenario(name: str, *apis: str):
    return family.scenario(name, *apis, cluster="authorizer")


# Kafka's codes for the ACL enums
ANY, ALL, READ, WRITE, CREATE, DESCRIBE = 1, 2, 3, 4, 5, 8
DENY, ALLOW = 2, 3
TOPIC, GROUP, CLUSTER = 2, 3, 4
MATCH, LITERAL, PREFIXED = 2, 3, 4
ANONYMOUS = "User:ANONYMOUS"


def create_acls(ctx: Context, *bindings: tuple) -> list:
    """CreateAcls v2 of ``(resource_type, name, pattern, principal, operation, permission)``s:
    [error, has message] each."""
    answer = raw.call(ctx.addresses[0], 30, 2, {"creations": [
        {"resource_type": rt, "resource_name": name, "resource_pattern_type": pattern,
         "principal": principal, "host": "*", "operation": op, "permission_type": perm}
        for rt, name, pattern, principal, op, perm in bindings]})
    return [[r["error_code"], bool(r["error_message"])] for r in answer["results"]]


def _deny(ctx: Context, resource_type: int, name: str, operation: int = ALL,
          pattern: int = LITERAL) -> None:
    created = create_acls(ctx, (resource_type, name, pattern, ANONYMOUS, operation, DENY))
    if created[0][0] != "NONE":
        raise clients.ScenarioError(f"creating a DENY ACL on {name}: {created}")


def _metadata_error(ctx: Context, topic: str) -> str:
    answer = raw.call(ctx.addresses[0], 3, 9, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})
    return answer["topics"][0]["error_code"]


@scenario("acl-topic-denied", "Metadata", "Produce", "Fetch", "ListOffsets",
          "OffsetForLeaderEpoch", "DescribeConfigs", "AlterConfigs", "CreatePartitions",
          "DeleteRecords", "DeleteTopics")
def acl_topic_denied(ctx: Context) -> object:
    """A topic whose every operation is denied: what each topic API answers."""
    topic = clients.create_topic(ctx, "t", replication=1)
    address = ctx.addresses[0]
    records.produce(address, topic, records.batch(2), acks=1)
    _deny(ctx, TOPIC, topic)
    clients.wait_for(lambda: _metadata_error(ctx, topic) == "TOPIC_AUTHORIZATION_FAILED",
                     "the DENY ACL to apply", ctx.timeout_s)
    configs = raw.call(address, 32, 4, {"resources": [{"resource_type": 2, "resource_name": topic,
                                                       "configuration_keys": None}],
                                        "include_synonyms": False,
                                        "include_documentation": False})["results"][0]
    alter = raw.call(address, 33, 1, {"resources": [{"resource_type": 2, "resource_name": topic,
                                                     "configs": [{"name": "retention.ms",
                                                                  "value": "1000"}]}],
                                      "validate_only": True})["responses"][0]
    grow = raw.call(address, 37, 2, {"topics": [{"name": topic, "count": 2,
                                                  "assignments": None}],
                                      "timeout": 5000, "validate_only": True})["results"][0]
    trim = raw.call(address, 21, 2, {"topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "offset": 1}]}], "timeout": 5000})["topics"][0]["partitions"][0]
    delete = raw.call(address, 20, 5, {"topic_names": [topic], "timeout": 5000})
    return {
        "metadata": _metadata_error(ctx, topic),
        "produce": records.produce(address, topic, records.batch(), acks=1)["error"],
        "fetch": [p["error"] for p in records.fetch(address, [(topic, 0, 0, 1 << 20)])],
        "list offsets": [r[1] for r in records.list_offsets(address, topic, [-1])],
        "describe configs": configs["error_code"],
        "alter configs": alter["error_code"],
        "create partitions": grow["error_code"],
        "delete records": trim["error_code"],
        "delete topics": [r["error_code"] for r in delete["responses"]],
    }


@scenario("acl-topic-denied-offset-for-leader-epoch", "OffsetForLeaderEpoch")
def acl_topic_denied_offset_for_leader_epoch(ctx: Context) -> object:
    """OffsetForLeaderEpoch of a topic whose every operation is denied to the client (Kafka
    2.8 lets a principal with ClusterAction on the cluster through without topic checks, and
    allow.everyone.if.no.acl.found grants that here)."""
    topic = clients.create_topic(ctx, "t", replication=1)
    records.produce(ctx.addresses[0], topic, records.batch(2), acks=1)
    _deny(ctx, TOPIC, topic)
    clients.wait_for(lambda: _metadata_error(ctx, topic) == "TOPIC_AUTHORIZATION_FAILED",
                     "the DENY ACL to apply", ctx.timeout_s)
    return records.offset_for_leader_epoch(ctx.addresses[0], topic, [(-1, 0)])


@scenario("acl-topic-write-denied-consumer-reads", "Produce", "Fetch")
def acl_topic_write_denied_consumer_reads(ctx: Context) -> object:
    """WRITE denied, READ and DESCRIBE left allowed: confluent-kafka's producer is refused,
    a Fetch reads."""
    topic = clients.create_topic(ctx, "t", replication=1)
    records.produce(ctx.addresses[0], topic, records.batch(2), acks=1)
    _deny(ctx, TOPIC, topic, WRITE)
    clients.wait_for(lambda: records.produce(ctx.addresses[0], topic, records.batch(),
                                             acks=1)["error"] == "TOPIC_AUTHORIZATION_FAILED",
                     "the DENY ACL to apply", ctx.timeout_s)
    return {"producer": clients.produce(ctx, topic, ["x"], acks=1),
            "fetch": records.fetch(ctx.addresses[0], [(topic, 0, 0, 1 << 20)])}


@scenario("acl-group-denied", "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat",
          "LeaveGroup", "OffsetCommit", "OffsetFetch", "DescribeGroups", "ListGroups",
          "DeleteGroups", "OffsetDelete")
def acl_group_denied(ctx: Context) -> object:
    """A group (with a committed offset) whose every operation is denied."""
    topic = clients.create_topic(ctx, "t", replication=1)
    group = ctx.name("g")
    address = ctx.addresses[0]
    c = clients.consumer(ctx, group)
    try:
        from confluent_kafka import TopicPartition

        clients.wait_for(lambda: c.commit(offsets=[TopicPartition(topic, 0, 1)],
                                          asynchronous=False), "a commit", ctx.timeout_s, 0.2)
    finally:
        c.close()
    _deny(ctx, GROUP, group)

    def find():
        return raw.call(address, 10, 3, {"key": group, "key_type": 0})["error_code"]

    clients.wait_for(lambda: find() == "GROUP_AUTHORIZATION_FAILED", "the DENY ACL to apply",
                     ctx.timeout_s)
    join = raw.call(address, 11, 5, {
        "group_id": group, "session_timeout": 10000, "rebalance_timeout": 10000,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]})
    member = {"group_id": group, "generation_id": 1, "member_id": "m",
              "group_instance_id": None}
    commit = raw.call(address, 8, 8, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": 2, "committed_leader_epoch": -1,
             "committed_metadata": None}]}]})
    fetch = raw.call(address, 9, 7, {"group_id": group, "topics": None, "require_stable": False})
    listed = raw.call(address, 16, 4, {"states_filter": []})
    return {
        "find coordinator": find(),
        "join": join["error_code"],
        "sync": raw.call(address, 14, 3, {**member, "assignments": []})["error_code"],
        "heartbeat": raw.call(address, 12, 3, member)["error_code"],
        "leave": raw.call(address, 13, 3, {"group_id": group, "members": [
            {"member_id": "m", "group_instance_id": None}]})["error_code"],
        "offset commit": [p["error_code"] for t in commit["topics"] for p in t["partitions"]],
        "offset fetch": fetch["error_code"],
        "describe": [g["error_code"] for g in raw.call(address, 15, 5, {
            "groups": [group], "include_authorized_operations": False})["groups"]],
        "listed": [listed["error_code"], group in [g["group_id"] for g in listed["groups"]]],
        "delete": [r["error_code"] for r in raw.call(address, 42, 2, {
            "groups_names": [group]})["results"]],
        "offset delete": raw.call(address, 47, 0, {"group_id": group, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0}]}]})["error_code"],
    }


@scenario("acl-create-topic-denied", "CreateTopics", "Metadata")
def acl_create_topic_denied(ctx: Context) -> object:
    """CREATE and DESCRIBE denied on a topic-name prefix (CREATE on the cluster stays allowed,
    which Kafka checks first): CreateTopics under it and outside it, and Metadata with
    auto-creation under it."""
    denied = ctx.name("deny")
    _deny(ctx, TOPIC, denied, CREATE, PREFIXED)
    _deny(ctx, TOPIC, denied, DESCRIBE, PREFIXED)

    def create(name):
        answer = raw.call(ctx.addresses[0], 19, 5, {"topics": [{
            "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": []}], "timeout": 5000, "validate_only": True})
        return answer["topics"][0]["error_code"]

    clients.wait_for(lambda: _metadata_error(ctx, f"{denied}-0") == "TOPIC_AUTHORIZATION_FAILED",
                     "the DENY ACLs to apply", ctx.timeout_s)
    auto = raw.call(ctx.addresses[0], 3, 9, {
        "topics": [{"name": f"{denied}-auto"}], "allow_auto_topic_creation": True,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})["topics"][0]["error_code"]
    return {"under the prefix": create(f"{denied}-2"), "outside": create(ctx.name("ok")),
            "auto-create under the prefix": auto}


@scenario("acl-describe-and-delete", "CreateAcls", "DescribeAcls", "DeleteAcls")
def acl_describe_and_delete(ctx: Context) -> object:
    """Three ACLs for User:alice: described by exact filters and by a MATCH filter, deleted by
    a filter, described again."""
    topic, group = ctx.name("t"), ctx.name("g")
    created = create_acls(ctx, (TOPIC, topic, LITERAL, "User:alice", READ, ALLOW),
                          (TOPIC, ctx.prefix, PREFIXED, "User:alice", WRITE, DENY),
                          (GROUP, group, LITERAL, "User:alice", DESCRIBE, ALLOW))

    def describe(rtype, name, pattern):
        answer = raw.call(ctx.addresses[0], 29, 2, {
            "resource_type_filter": rtype, "resource_name_filter": name,
            "pattern_type_filter": pattern, "principal_filter": "User:alice",
            "host_filter": None, "operation": ANY, "permission_type": ANY})
        return [answer["error_code"], sorted(
            [r["resource_type"], r["resource_name"], r["pattern_type"],
             sorted([a["principal"], a["host"], a["operation"], a["permission_type"]]
                    for a in r["acls"])] for r in answer["resources"])]

    def seen():
        return describe(TOPIC, topic, MATCH)

    clients.wait_for(lambda: len(seen()[1]) == 2, "the ACLs to be described", ctx.timeout_s)
    out = {"created": created, "topic MATCH": seen(),
           "prefixed LITERAL": describe(TOPIC, ctx.prefix, PREFIXED),
           "group": describe(GROUP, group, LITERAL)}
    deleted = raw.call(ctx.addresses[0], 31, 2, {"filters": [{
        "resource_type_filter": TOPIC, "resource_name_filter": topic,
        "pattern_type_filter": MATCH, "principal_filter": "User:alice", "host_filter": None,
        "operation": ANY, "permission_type": ANY}]})
    out["deleted"] = [[f["error_code"], sorted([m["error_code"], m["resource_name"],
                                                m["pattern_type"], m["operation"]]
                                               for m in f["matching_acls"])]
                      for f in deleted["filter_results"]]
    clients.wait_for(lambda: not seen()[1], "the ACLs to go", ctx.timeout_s)
    out["after delete"] = seen()
    return out


@scenario("acl-invalid-bindings", "CreateAcls")
def acl_invalid_bindings(ctx: Context) -> object:
    """Bindings CreateAcls refuses: resource type ANY, operation ANY, pattern MATCH, a cluster
    resource not named kafka-cluster, a principal without a type, an empty resource name."""
    name = ctx.name("t")
    bindings = {"resource type ANY": (ANY, name, LITERAL, "User:alice", READ, ALLOW),
                "operation ANY": (TOPIC, name, LITERAL, "User:alice", ANY, ALLOW),
                "pattern MATCH": (TOPIC, name, MATCH, "User:alice", READ, ALLOW),
                "cluster 'other'": (CLUSTER, "other-cluster", LITERAL, "User:alice", ALL,
                                    ALLOW),
                "principal 'alice'": (TOPIC, name, LITERAL, "alice", READ, ALLOW),
                "empty name": (TOPIC, "", LITERAL, "User:alice", READ, ALLOW)}
    # one request each: Kafka fails a whole request whose binding it cannot even build
    return {label: create_acls(ctx, binding)[0][0] for label, binding in bindings.items()}


@scenario("acl-authorized-operations", "Metadata", "DescribeGroups")
def acl_authorized_operations(ctx: Context) -> object:
    """Metadata v8+ and DescribeGroups v3+ asked for authorized operations (KIP-430) of a topic
    whose WRITE is denied."""
    topic = clients.create_topic(ctx, "t", replication=1)
    _deny(ctx, TOPIC, topic, WRITE)
    clients.wait_for(lambda: records.produce(ctx.addresses[0], topic, records.batch(),
                                             acks=1)["error"] == "TOPIC_AUTHORIZATION_FAILED",
                     "the DENY ACL to apply", ctx.timeout_s)
    answer = raw.call(ctx.addresses[0], 3, 9, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True})
    return {"topic": answer["topics"][0]["topic_authorized_operations"],
            "cluster": answer["cluster_authorized_operations"]}
