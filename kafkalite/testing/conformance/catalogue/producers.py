"""DescribeProducers (KIP-664): a partition's active producers, as each system's replicas know
them, asked with raw requests (librdkafka has no DescribeProducers).

Producer ids are chance, so ``shape`` names them by the role the scenario gave them; a
timestamp the scenario chose is kept, one a coordinator's marker carries (its clock) is
``"marker time"``; a coordinator epoch is kept when -1 (no marker) and else ``">= 0"`` (the
epoch of the __transaction_state partition's leader, a history of the shared cluster). Used by
tests/oracle/test_describe_producers_oracle.py too.
"""

from __future__ import annotations

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.catalogue import records
from kafkalite.testing.conformance.catalogue.transactions import TS, Txn, _stable
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("produce-fetch")    # reported with the data path (no family of its own)
scenario = family.scenario


def describe(address: str, topics: dict[str, list[int]]) -> dict | str:
    """DescribeProducers v0 at ``address``, the answer as plain data."""
    return raw.call(address, 61, 0, {"topics": [
        {"name": name, "partition_indexes": partitions} for name, partitions in topics.items()]})


def shape(answer: dict | str, roles: dict[int, str], chosen_timestamps=()) -> object:
    """``{topic: [[partition, error, message, {role: state}]]}`` of a DescribeProducers answer,
    ids, marker times and coordinator epochs normalised (module docstring)."""
    if isinstance(answer, str):
        return answer
    chosen = set(chosen_timestamps)

    def state(s: dict) -> dict:
        return {"producer_epoch": s["producer_epoch"], "last_sequence": s["last_sequence"],
                "last_timestamp": (s["last_timestamp"] if s["last_timestamp"] in chosen
                                   or s["last_timestamp"] == -1 else "marker time"),
                "coordinator_epoch": (-1 if s["coordinator_epoch"] == -1 else
                                      ">= 0" if s["coordinator_epoch"] >= 0 else
                                      s["coordinator_epoch"]),
                "current_txn_start_offset": s["current_txn_start_offset"]}
    return {"throttle_time_ms": answer["throttle_time"], "topics": {
        t["name"]: [[p["partition_index"], p["error_code"], p["error_message"],
                     {roles.get(s["producer_id"], "unknown producer"): state(s)
                      for s in p["active_producers"]}]
                    for p in t["partitions"]]
        for t in answer["topics"]}}


def _idempotent_batch(pid: int, count: int, timestamp: int) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=pid, producer_epoch=0, base_sequence=0,
                                        batch_size=1 << 30)
    for i in range(count):
        builder.append(i, timestamp=timestamp + i, key=None, value=b"i%d" % i, headers=[])
    return bytes(builder.build())


@scenario("describe-producers", "DescribeProducers", "Produce", "EndTxn")
def describe_producers(ctx: Context) -> object:
    """An idempotent producer's batch of 3 records, then a transactional producer's 2 records
    left open: DescribeProducers v0 at the partition's leader (with a partition the topic lacks
    and a topic that does not exist), at a follower once it has replicated them; after the
    commit at the leader; a 1-replica topic asked at a broker without its replica."""
    topic = clients.create_topic(ctx, "t")
    leader = clients.leader_address(ctx, topic)
    init = raw.call(leader, 22, 4, {"transactional_id": None, "transaction_timeout": 60000,
                                    "producer_id": -1, "producer_epoch": -1})
    idempotent = init["producer_id"]
    out: dict = {"idempotent produce": records.produce(
        leader, topic, _idempotent_batch(idempotent, 3, TS))["error"]}
    txn = Txn(ctx)
    out["transaction"] = {"add": txn.add({topic: [0]}), "produce": txn.produce(topic, 2)}
    roles = {idempotent: "idempotent", txn.pid: "transactional"}
    chosen = (TS + 2, TS + 1)
    missing = ctx.name("none")
    out["open, at the leader"] = shape(describe(leader, {topic: [0, 5], missing: [0]}), roles,
                                       chosen)
    follower = clients.other_address(ctx, leader)
    at_leader = shape(describe(leader, {topic: [0]}), roles, chosen)

    def caught_up():
        return shape(describe(follower, {topic: [0]}), roles, chosen) == at_leader
    clients.wait_for(caught_up, f"{follower} to replicate {topic}", ctx.timeout_s)
    out["open, at a follower"] = at_leader
    out["end"] = txn.end(True, retry=True)
    out["stable at"] = _stable(ctx, topic)
    out["committed, at the leader"] = shape(describe(leader, {topic: [0]}), roles, chosen)
    single = clients.create_topic(ctx, "one", replication=1)
    away = clients.other_address(ctx, clients.leader_address(ctx, single))
    out["no replica here"] = shape(describe(away, {single: [0]}), roles)
    return out
