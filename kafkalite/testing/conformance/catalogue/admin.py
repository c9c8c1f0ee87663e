"""Admin APIs beyond topics and configs: DeleteRecords, DescribeCluster, ElectLeaders,
DescribeLogDirs, partition reassignment, SCRAM credentials and client quotas.
"""

from __future__ import annotations

from confluent_kafka import TopicPartition

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.catalogue import records
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("admin")
scenario = family.scenario


def _filled_topic(ctx: Context, count: int = 10) -> tuple[str, str]:
    topic = clients.create_topic(ctx, "t")
    leader = clients.leader_address(ctx, topic)
    for _ in range(count):
        records.produce(leader, topic, records.batch())
    return topic, leader


@scenario("delete-records", "DeleteRecords", "ListOffsets", "Fetch")
def delete_records(ctx: Context) -> object:
    """AdminClient.delete_records before offset 4 of 10: the low watermark it reports, the
    earliest offset after it, a fetch below it, and where an 'earliest' consumer starts."""
    topic, leader = _filled_topic(ctx)
    client = clients.admin(ctx)
    tp = TopicPartition(topic, 0, 4)
    result = clients.outcome(client.delete_records([tp], operation_timeout=10)[tp],
                             ctx.timeout_s)
    deleted = result if isinstance(result, dict) else result.low_watermark
    return {"low watermark": deleted,
            "earliest": records.list_offsets(leader, topic, [-2, -1]),
            "fetch 0": [[p["error"], p["log_start_offset"]] for p in
                        records.fetch(leader, [(topic, 0, 0, 1 << 20)])],
            "consumer starts at": [r.get("offset", r) for r in
                                   clients.consume_all(ctx, topic, 1)],
            "watermarks": clients.watermarks(ctx, topic)}


@scenario("delete-records-raw", "DeleteRecords")
def delete_records_raw(ctx: Context) -> object:
    """DeleteRecords v2 at the leader: to the high watermark (-1), beyond it, below the low
    watermark, of an unknown partition; and at a follower."""
    topic, leader = _filled_topic(ctx, 5)

    def delete(address, offset, partition=0):
        answer = raw.call(address, 21, 2, {"topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "offset": offset}]}], "timeout": 10000})
        p = answer["topics"][0]["partitions"][0]
        return [p["error_code"], p["low_watermark"]]

    return {"to 3": delete(leader, 3), "below low watermark": delete(leader, 1),
            "high watermark (-1)": delete(leader, -1), "beyond": delete(leader, 50),
            "unknown partition": delete(leader, 1, partition=6),
            "follower": delete(clients.other_address(ctx, leader), 1)}


@scenario("describe-cluster-admin", "DescribeCluster", "Metadata")
def describe_cluster_admin(ctx: Context) -> object:
    """AdminClient.describe_cluster: the nodes and whether the controller is one of them."""
    client = clients.admin(ctx)
    result = client.describe_cluster(request_timeout=10).result(ctx.timeout_s)
    return {"nodes": sorted(n.id for n in result.nodes),
            "controller is a node": result.controller.id in {n.id for n in result.nodes},
            "authorized operations": result.authorized_operations}


@scenario("elect-leaders", "ElectLeaders")
def elect_leaders(ctx: Context) -> object:
    """AdminClient.elect_leaders (preferred) for a partition whose preferred replica leads."""
    from confluent_kafka import ElectionType

    topic = clients.create_topic(ctx, "t")
    client = clients.admin(ctx)
    tp = TopicPartition(topic, 0)
    result = clients.outcome(client.elect_leaders(ElectionType.PREFERRED, [tp]),
                             ctx.timeout_s)
    if isinstance(result, dict):
        return result
    return [[k.partition, clients.error(k.error)] for k in result]


@scenario("describe-log-dirs", "DescribeLogDirs")
def describe_log_dirs(ctx: Context) -> object:
    """DescribeLogDirs v1 of one topic: the directory's error and the partitions in it."""
    topic = clients.create_topic(ctx, "t", replication=1)
    leader = clients.leader_address(ctx, topic)
    answer = raw.call(leader, 35, 1, {"topics": [{"topic": topic, "partitions": [0]}]})
    if isinstance(answer, str):
        return answer
    return [[d["error_code"], [[p["partition_index"], p["is_future_key"]]
                               for t in d["topics"] if t["name"] == topic
                               for p in t["partitions"]]] for d in answer["results"]]


@scenario("list-partition-reassignments", "ListPartitionReassignments")
def list_partition_reassignments(ctx: Context) -> object:
    """ListPartitionReassignments v0 (KIP-455) of all partitions, at the controller: none."""
    answer = raw.call(clients.controller_address(ctx), 46, 0, {"timeout_ms": 10000,
                                                               "topics": None})
    if isinstance(answer, str):
        return answer
    return [answer["error_code"], answer["topics"]]


@scenario("describe-scram-credentials", "DescribeUserScramCredentials")
def describe_scram_credentials(ctx: Context) -> object:
    """AdminClient.describe_user_scram_credentials of a user that has none."""
    client = clients.admin(ctx)
    futures = client.describe_user_scram_credentials([ctx.name("user")], request_timeout=10)
    out = {}
    for user, future in futures.items():
        result = clients.outcome(future, ctx.timeout_s)
        out[user] = result if isinstance(result, dict) else "described"
    return out


@scenario("alter-partition-reassignments-cancel", "AlterPartitionReassignments")
def alter_partition_reassignments_cancel(ctx: Context) -> object:
    """AlterPartitionReassignments v0 at the controller, cancelling (null replicas) moves that do
    not exist: a partition of a topic at rest, and a partition of a topic that does not exist."""
    topic = clients.create_topic(ctx, "t")
    answer = raw.call(clients.controller_address(ctx), 45, 0, {"timeout_ms": 10000, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "replicas": None}]},
        {"name": ctx.name("missing"), "partitions": [{"partition_index": 0,
                                                      "replicas": None}]}]})
    if isinstance(answer, str):
        return answer
    # sorted: Kafka lists the topics in its HashMap's order of their (here random) names
    return [answer["error_code"], sorted([t["name"] == topic, p["partition_index"],
                                          p["error_code"]]
                                         for t in answer["responses"] for p in t["partitions"])]


@scenario("client-quotas", "AlterClientQuotas", "DescribeClientQuotas")
def client_quotas(ctx: Context) -> object:
    """AlterClientQuotas v1 (validate only, then for real, then an unknown key) for a user, and
    DescribeClientQuotas v1 of that user before and after."""
    user = ctx.name("user")
    address = ctx.addresses[0]

    def alter(key, value, validate_only):
        answer = raw.call(address, 49, 1, {"validate_only": validate_only, "entries": [{
            "entity": [{"entity_type": "user", "entity_name": user}],
            "ops": [{"key": key, "value": value, "remove": False}]}]})
        if isinstance(answer, str):
            return answer
        return [[e["error_code"], [c["entity_type"] for c in e["entity"]]]
                for e in answer["entries"]]

    def describe():
        answer = raw.call(address, 48, 1, {"strict": True, "components": [
            {"entity_type": "user", "match_type": 0, "match": user}]})
        if isinstance(answer, str):
            return answer
        return [answer["error_code"], [sorted((v["key"], v["value"]) for v in e["values"])
                                       for e in answer["entries"] or []]]

    return {"validate only": alter("producer_byte_rate", 1024.0, True),
            "after validate only": describe(),
            "alter": alter("producer_byte_rate", 1024.0, False),
            "after alter": clients.wait_for(
                lambda: (lambda d: d if isinstance(d, str) or d[1] else None)(describe()),
                "the quota to be described", ctx.timeout_s),
            "unknown key": alter("no_such_quota", 1.0, False)}
