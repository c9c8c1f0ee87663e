"""Moving replicas between a broker's data dirs (KIP-113's AlterReplicaLogDirs): the
per-partition errors Kafka 2.8 answers on a broker with one data dir (the move itself needs two:
tests/tools/test_tool_alter_log_dirs.py). DescribeLogDirs is in ``admin``."""

from __future__ import annotations

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("admin")          # reported with the other admin APIs
scenario = family.scenario


def _errors(answer, names: dict[str, str]) -> object:
    """``[[topic's role, partition, error code]]`` sorted (topic names differ per run)."""
    if isinstance(answer, str):
        return answer
    return sorted([names.get(t["topic_name"], t["topic_name"]), p["partition_index"],
                   p["error_code"]] for t in answer["results"] for p in t["partitions"])


@scenario("alter-replica-log-dirs", "AlterReplicaLogDirs", "DescribeLogDirs")
def alter_replica_log_dirs(ctx: Context) -> object:
    """AlterReplicaLogDirs v1 at a replica's broker: to a dir not in log.dirs; to the dir the
    replica is in (found with DescribeLogDirs); a partition the cluster does not have, and one
    of its topic's that does not exist, to that dir."""
    topic = clients.create_topic(ctx, "t", replication=1)
    leader = clients.leader_address(ctx, topic)
    described = raw.call(leader, 35, 1, {"topics": [{"topic": topic, "partitions": [0]}]})
    if isinstance(described, str):
        return described
    [here] = [d["log_dir"] for d in described["results"]
              for t in d["topics"] if t["name"] == topic and t["partitions"]]
    unknown = ctx.name("none")
    names = {topic: "TOPIC", unknown: "UNKNOWN"}
    elsewhere = raw.call(leader, 34, 1, {"dirs": [
        {"path": "/no/such/log/dir", "topics": [{"name": topic, "partitions": [0]}]}]})
    in_place = raw.call(leader, 34, 1, {"dirs": [
        {"path": here, "topics": [{"name": topic, "partitions": [0, 7]},
                                  {"name": unknown, "partitions": [0]}]}]})
    return {"elsewhere": _errors(elsewhere, names), "in place": _errors(in_place, names)}
