"""Transactions (KIP-98, KIP-447): what the transaction APIs answer a client, on both systems.

Each scenario speaks the protocol itself, as a transactional client does (FindCoordinator key
type 1, InitProducerId at the coordinator, AddPartitionsToTxn, transactional Produce, EndTxn,
AddOffsetsToTxn, TxnOffsetCommit), because librdkafka hides the error codes behind its retries and
fatal states; the librdkafka view of the same is tests/oracle/test_transactions_confluent.py.
Producer ids are chance (normalised); epochs, offsets, error codes, the aborted-transaction lists
and the record batches a read_committed Fetch returns are compared. Answers a client retries
(CONCURRENT_TRANSACTIONS while markers are written, COORDINATOR_LOAD_IN_PROGRESS) are retried
here too, since when they stop is timing, not behaviour.
"""

from __future__ import annotations

import struct

from kafkalite.jvm_hashing import java_string_hash
from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("produce-fetch")    # reported with the data path (no family of its own)
scenario = family.scenario

TS = 1_600_000_000_000              # fixed timestamps: the batches are the same on both systems
RETRIED = ("CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS",
           "COORDINATOR_NOT_AVAILABLE")


def _retried(call, what: str, ctx: Context, retried: tuple[str, ...] = RETRIED) -> dict:
    """``call()``'s answer once its ``error_code`` is not one a client retries."""
    last: dict = {}

    def settled():
        last.clear()
        last.update(call())
        return last.get("error_code") not in retried
    clients.wait_for(settled, what, ctx.timeout_s, 0.1)
    return last


def _find(ctx: Context, tid: str) -> dict:
    """FindCoordinator v3 key type 1, retried while the coordinator is not available yet."""
    return _retried(lambda: raw.call(ctx.addresses[0], 10, 3, {"key": tid, "key_type": 1}),
                    f"the coordinator of {tid}", ctx, ("COORDINATOR_NOT_AVAILABLE",))


def _coordinator(ctx: Context, tid: str) -> str:
    found = _find(ctx, tid)
    if found["error_code"] != "NONE":
        raise clients.ScenarioError(f"FindCoordinator for {tid}: {found}")
    return f"{found['host']}:{found['port']}"


def _init(address: str, tid: str | None, timeout_ms: int = 60000, pid: int = -1,
          epoch: int = -1, version: int = 4) -> dict:
    body = {"transactional_id": tid, "transaction_timeout": timeout_ms}
    if version >= 3:
        body.update(producer_id=pid, producer_epoch=epoch)
    return raw.call(address, 22, version, body)


def _batch(pid: int, epoch: int, sequence: int, count: int, start: int = 0) -> bytes:
    """A transactional v2 batch of ``count`` records (values ``v<start+i>``)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                        producer_id=pid, producer_epoch=epoch,
                                        base_sequence=sequence, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, timestamp=TS + i, key=None, value=b"v%d" % (start + i), headers=[])
    return bytes(builder.build())


class Txn:
    """One transactional producer at its coordinator, speaking the protocol."""

    def __init__(self, ctx: Context, suffix: str = "tx", timeout_ms: int = 60000):
        self.ctx = ctx
        self.tid = ctx.name(suffix)
        self.coordinator = _coordinator(ctx, self.tid)
        answer = _retried(lambda: _init(self.coordinator, self.tid, timeout_ms),
                          "InitProducerId", ctx)
        if answer["error_code"] != "NONE":
            raise clients.ScenarioError(f"InitProducerId for {self.tid}: {answer}")
        self.pid, self.epoch = answer["producer_id"], answer["producer_epoch"]
        self.sequences: dict[tuple[str, int], int] = {}

    def add(self, topics: dict[str, list[int]], pid: int | None = None,
            epoch: int | None = None, version: int = 3, address: str | None = None) -> object:
        """AddPartitionsToTxn: ``[[topic, partition, error]]`` in the request's order."""
        def call():
            answer = raw.call(address or self.coordinator, 24, version, {
                "v3_and_below_transactional_id": self.tid,
                "v3_and_below_producer_id": self.pid if pid is None else pid,
                "v3_and_below_producer_epoch": self.epoch if epoch is None else epoch,
                "v3_and_below_topics": [{"name": t, "partitions": p}
                                        for t, p in topics.items()]})
            errors = [[t["name"], p["partition_index"], p["partition_error_code"]]
                      for t in answer["results_by_topic_v3_and_below"]
                      for p in t["results_by_partition"]]
            # the whole answer's error, for _retried: one partition's is every partition's
            return {"error_code": errors[0][2] if errors else "NONE", "errors": errors}
        return sorted(_retried(call, "AddPartitionsToTxn", self.ctx)["errors"])

    def end(self, commit: bool, pid: int | None = None, epoch: int | None = None,
            version: int = 3, tid: str | None = None, retry: bool = False) -> str:
        """EndTxn's error (retried while CONCURRENT_TRANSACTIONS when ``retry``)."""
        def call():
            return raw.call(self.coordinator, 26, version, {
                "transactional_id": self.tid if tid is None else tid,
                "producer_id": self.pid if pid is None else pid,
                "producer_epoch": self.epoch if epoch is None else epoch,
                "committed": commit})
        if retry:
            return _retried(call, "EndTxn", self.ctx)["error_code"]
        return call()["error_code"]

    def produce(self, topic: str, count: int, partition: int = 0, start: int = 0) -> object:
        """A transactional batch to the partition's leader: [error, base offset]."""
        key = (topic, partition)
        sequence = self.sequences.get(key, 0)
        answer = raw.call(clients.leader_address(self.ctx, topic, partition), 0, 8, {
            "transactional_id": self.tid, "acks": -1, "timeout": 10000,
            "topic_data": [{"name": topic, "partition_data": [{
                "index": partition,
                "records": _batch(self.pid, self.epoch, sequence, count, start)}]}]})
        part = answer["responses"][0]["partition_responses"][0]
        if part["error_code"] == "NONE":
            self.sequences[key] = sequence + count
        return [part["error_code"], part["base_offset"]]

    def transaction(self, topic: str, count: int, commit: bool, start: int = 0) -> object:
        """Add the partition, produce ``count`` records, end: each step's answer."""
        return {"add": self.add({topic: [0]}), "produce": self.produce(topic, count, 0, start),
                "end": self.end(commit, retry=True)}


def _stable(ctx: Context, topic: str) -> int:
    """Wait until the partition's LSO is its high watermark (the markers written); the offset."""
    leader = clients.leader_address(ctx, topic)

    def stable():
        ends = [_list_offset(leader, topic, -1, level) for level in (0, 1)]
        return ends[0] == ends[1] and ends[0][0] == "NONE" and ends[0][1]
    return clients.wait_for(stable, f"{topic} stable", ctx.timeout_s)


def _list_offset(address: str, topic: str, timestamp: int, isolation: int,
                 version: int = 6) -> list:
    body = {"replica_id": -1, "topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]}
    if version >= 2:
        body["isolation_level"] = isolation
    if version == 0:
        body["topics"][0]["partitions"][0]["max_num_offsets"] = 1
    p = raw.call(address, 2, version, body)["topics"][0]["partitions"][0]
    return [p["error_code"], p["offset"] if version else p["old_style_offsets"]]


def _fetch_once(ctx: Context, topic: str, isolation: int, offset: int) -> dict:
    """One Fetch v12 of partition 0 at its leader, the records as bytes."""
    return raw.call(clients.leader_address(ctx, topic), 1, 12, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [{
            "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
            "last_fetched_epoch": -1, "log_start_offset": -1,
            "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""}, raw_records=True)["responses"][0][
            "partitions"][0]


def _batches(data: bytes) -> list[dict]:
    """Each record batch: offsets, transactional and control bits, values or markers."""
    from kafka.record.memory_records import MemoryRecords

    out, records = [], MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        seen = {"base_offset": batch.base_offset, "last_offset_delta": batch.last_offset_delta,
                "transactional": batch.is_transactional, "control": batch.is_control_batch,
                "producer_epoch": batch.producer_epoch}
        if batch.is_control_batch:
            # Kafka's control record: key (version, type: 0 abort, 1 commit), value (version,
            # coordinator epoch)
            seen["markers"] = [[list(struct.unpack(">hh", r.key)),
                                list(struct.unpack(">hi", r.value[:6]))] for r in batch]
        else:
            seen["values"] = [r.value.decode() for r in batch]
        out.append(seen)
    return out


def _fetch(ctx: Context, topic: str, isolation: int, offset: int = 0) -> dict:
    """Fetch v12 of partition 0 from ``offset``, fetching on from after the last batch
    returned until the end (the LSO for read_committed, else the high watermark), as a
    consumer does: Kafka returns less than the fetch's byte limits allow (one batch, when the
    leader's high watermark metadata is only an offset), so one answer is a chance share of the
    log. The first answer's watermarks; every batch; the aborted transactions of all answers
    (producer ids normalised) or null when every answer had null."""
    first = _fetch_once(ctx, topic, isolation, offset)
    end = first["last_stable_offset"] if isolation else first["high_watermark"]
    batches, aborted, answer = [], None, first
    while True:
        got = _batches(bytes(answer["records"] or b""))
        if answer["aborted_transactions"] is not None:
            aborted = (aborted or []) + [[a["producer_id"], a["first_offset"]]
                                         for a in answer["aborted_transactions"]]
        batches += got
        if answer["error_code"] != "NONE" or not got:
            break
        offset = got[-1]["base_offset"] + got[-1]["last_offset_delta"] + 1
        if offset >= end:
            break
        answer = _fetch_once(ctx, topic, isolation, offset)
    return {"error": first["error_code"], "high_watermark": first["high_watermark"],
            "last_stable_offset": first["last_stable_offset"],
            "aborted_transactions": None if aborted is None else [
                {"producer_id": pid, "first_offset": first_offset}
                for pid, first_offset in sorted({tuple(a) for a in aborted},
                                                key=lambda a: a[1])],
            "batches": batches}


@scenario("txn-find-coordinator", "FindCoordinator")
def txn_find_coordinator(ctx: Context) -> object:
    """FindCoordinator v3 with key type 1: the first answer for a new transactional id (the
    first lookup on a cluster creates __transaction_state, so it may be COORDINATOR_NOT_
    AVAILABLE or, when another lookup created the topic already, NONE: reported as either), the
    answer once the topic exists (the leader of partition abs(hash(id)) % 50), and the topic
    Kafka creates for it (partitions, replication, configs)."""
    tid = ctx.name("tx")
    first = raw.call(ctx.addresses[0], 10, 3, {"key": tid, "key_type": 1})
    found = _find(ctx, tid)
    partition = java_string_hash(tid)
    partition = (0 if partition == -(1 << 31) else abs(partition)) % 50
    admin = clients.admin(ctx)
    state = admin.list_topics("__transaction_state", timeout=ctx.timeout_s).topics[
        "__transaction_state"]
    configs = admin.describe_configs([_topic_resource("__transaction_state")])
    entries = list(configs.values())[0].result(ctx.timeout_s)
    wanted = ("cleanup.policy", "min.insync.replicas", "segment.bytes", "compression.type",
              "unclean.leader.election.enable")
    return {"first": first["error_code"] in ("NONE", "COORDINATOR_NOT_AVAILABLE"),
            "found": [found["error_code"], found["error_message"]],
            "is leader of the id's partition":
                found["node_id"] == state.partitions[partition].leader,
            "topic": {"partitions": len(state.partitions),
                      "replicas": sorted({len(p.replicas) for p in state.partitions.values()}),
                      "configs": {k: [entries[k].value, entries[k].source] for k in wanted}},
            "key type 1 at v0 (no key type)": raw.call(ctx.addresses[0], 10, 0, {"key": tid}
                                                      )["error_code"]}


def _topic_resource(name: str):
    from confluent_kafka.admin import ConfigResource, ResourceType

    return ConfigResource(ResourceType.TOPIC, name)


@scenario("txn-init-producer-id", "InitProducerId")
def txn_init_producer_id(ctx: Context) -> object:
    """InitProducerId v4 with a transactional id: the first (epoch 0), a second (same producer
    id, epoch bumped), KIP-360's with the current id and epoch, with a stale epoch and with a
    wrong id; a timeout above transaction.max.timeout.ms and of 0; an empty transactional id;
    at a broker that is not the id's coordinator; v0 and v2 (no id and epoch fields)."""
    txn = Txn(ctx)
    out: dict = {"first epoch": txn.epoch}
    second = _init(txn.coordinator, txn.tid)
    out["second"] = [second["error_code"], second["producer_id"] == txn.pid,
                     second["producer_epoch"]]
    current = second["producer_epoch"]
    kip360 = _init(txn.coordinator, txn.tid, pid=txn.pid, epoch=current)
    out["kip-360 current"] = [kip360["error_code"], kip360["producer_id"] == txn.pid,
                              kip360["producer_epoch"]]
    stale = _init(txn.coordinator, txn.tid, pid=txn.pid, epoch=0)
    out["kip-360 stale epoch"] = [stale["error_code"], stale["producer_epoch"]]
    wrong = _init(txn.coordinator, txn.tid, pid=txn.pid + 1000, epoch=0)
    out["kip-360 wrong id"] = [wrong["error_code"], wrong["producer_epoch"]]
    for label, timeout in (("timeout 900001", 900_001), ("timeout 0", 0),
                           ("timeout 900000", 900_000)):
        answer = _init(txn.coordinator, ctx.name(f"tx{timeout}"), timeout)
        if answer["error_code"] == "NOT_COORDINATOR":       # another id, another coordinator
            answer = _init(_coordinator(ctx, ctx.name(f"tx{timeout}")),
                           ctx.name(f"tx{timeout}"), timeout)
        out[label] = [answer["error_code"], answer["producer_epoch"]]
    empty = _init(ctx.addresses[0], "")
    out["empty id"] = [empty["error_code"], empty["producer_id"], empty["producer_epoch"]]
    away = _init(clients.other_address(ctx, txn.coordinator), txn.tid)
    out["not the coordinator"] = [away["error_code"], away["producer_id"],
                                  away["producer_epoch"]]
    v2 = _init(txn.coordinator, txn.tid, version=2)
    out["v2"] = [v2["error_code"], v2["producer_id"] == txn.pid, v2["producer_epoch"]]
    v0 = _init(txn.coordinator, txn.tid, version=0)
    out["v0"] = [v0["error_code"], v0["producer_id"] == txn.pid, v0["producer_epoch"]]
    return out


@scenario("txn-add-partitions", "AddPartitionsToTxn")
def txn_add_partitions(ctx: Context) -> object:
    """AddPartitionsToTxn v3: an unknown topic beside an existing one (the unknown
    UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED), a partition the topic
    lacks, a wrong producer id, a stale epoch (v1 and v3), an unknown transactional id, at a
    broker that is not the coordinator; then the partition itself, twice."""
    topic = clients.create_topic(ctx, "t")
    missing = ctx.name("none")
    txn = Txn(ctx)
    stale_epoch = txn.epoch
    txn.epoch = _retried(lambda: _init(txn.coordinator, txn.tid), "InitProducerId",
                         ctx)["producer_epoch"]
    away = clients.other_address(ctx, txn.coordinator)
    out = {
        "unknown topic": txn.add({topic: [0], missing: [0]}),
        "partition 5": txn.add({topic: [0, 5]}),
        "wrong producer id": txn.add({topic: [0]}, pid=txn.pid + 1000),
        "stale epoch v3": txn.add({topic: [0]}, epoch=stale_epoch),
        "stale epoch v1": txn.add({topic: [0]}, epoch=stale_epoch, version=1),
        "not the coordinator": txn.add({topic: [0]}, address=away),
        "added": txn.add({topic: [0]}),
        "added again": txn.add({topic: [0]}),
    }
    txn.tid = ctx.name("never")
    out["unknown transactional id"] = txn.add({topic: [0]},
                                              address=_coordinator(ctx, txn.tid))
    return out


@scenario("txn-end-txn", "EndTxn", "AddPartitionsToTxn", "Produce")
def txn_end_txn(ctx: Context) -> object:
    """EndTxn v3 with no transaction open (commit, abort), with a wrong producer id, a stale
    epoch (v1 and v3), an unknown transactional id; then a transaction of 2 records committed,
    the commit repeated (once the markers are written), and an abort after it."""
    topic = clients.create_topic(ctx, "t")
    txn = Txn(ctx)
    out: dict = {"no transaction: commit": txn.end(True),
                 "no transaction: abort": txn.end(False),
                 "wrong producer id": txn.end(True, pid=txn.pid + 1000),
                 "unknown transactional id": raw.call(
                     _coordinator(ctx, ctx.name("never")), 26, 3, {
                         "transactional_id": ctx.name("never"), "producer_id": txn.pid,
                         "producer_epoch": 0, "committed": True})["error_code"]}
    txn.add({topic: [0]})
    out["produce"] = txn.produce(topic, 2)
    out["stale epoch v3"] = txn.end(True, epoch=txn.epoch - 1 if txn.epoch else 32767)
    out["stale epoch v1"] = txn.end(True, epoch=txn.epoch - 1 if txn.epoch else 32767,
                                    version=1)
    out["commit"] = txn.end(True)
    out["stable at"] = _stable(ctx, topic)
    out["commit again"] = txn.end(True, retry=True)
    out["abort after commit"] = txn.end(False, retry=True)
    return out


def _offset_fetch(address: str, group: str, topic: str, stable: bool) -> list:
    answer = raw.call(address, 9, 7, {"group_id": group, "require_stable": stable,
                                      "topics": [{"name": topic, "partition_indexes": [0]}]})
    p = answer["topics"][0]["partitions"][0]
    return [answer["error_code"], p["error_code"], p["committed_offset"]]


@scenario("txn-offset-commit", "AddOffsetsToTxn", "TxnOffsetCommit", "OffsetFetch", "EndTxn")
def txn_offset_commit(ctx: Context) -> object:
    """AddOffsetsToTxn v3 for a group, TxnOffsetCommit v3 (generation -1, no member: a group
    with no members), OffsetFetch v7 meanwhile with and without require_stable (KIP-447), a
    TxnOffsetCommit with a generation and member the group does not have, and to a broker that
    is not the group's coordinator; after the commit, the offset; then an aborted one."""
    topic = clients.create_topic(ctx, "t")
    group = ctx.name("g")
    txn = Txn(ctx)
    group_coordinator = clients.coordinator_address(ctx, group)

    def add_offsets():
        return raw.call(txn.coordinator, 25, 3, {
            "transactional_id": txn.tid, "producer_id": txn.pid,
            "producer_epoch": txn.epoch, "group_id": group})

    def commit(offset: int, generation: int = -1, member: str = "",
               address: str = group_coordinator) -> list:
        answer = raw.call(address, 28, 3, {
            "transactional_id": txn.tid, "group_id": group, "producer_id": txn.pid,
            "producer_epoch": txn.epoch, "generation_id": generation, "member_id": member,
            "group_instance_id": None, "topics": [{"name": topic, "partitions": [{
                "partition_index": 0, "committed_offset": offset,
                "committed_leader_epoch": -1, "committed_metadata": "m"}]}]})
        return [[t["name"], p["partition_index"], p["error_code"]]
                for t in answer["topics"] for p in t["partitions"]]

    out: dict = {"add offsets": _retried(add_offsets, "AddOffsetsToTxn", ctx)["error_code"]}
    out["txn offset commit"] = commit(5)
    out["unknown generation and member"] = commit(6, generation=3, member="nobody")
    out["not the coordinator"] = commit(6, address=clients.other_address(
        ctx, group_coordinator))
    out["pending: require_stable"] = _offset_fetch(group_coordinator, group, topic, True)
    out["pending: not require_stable"] = _offset_fetch(group_coordinator, group, topic, False)
    out["end commit"] = txn.end(True, retry=True)

    def settled():
        answer = _offset_fetch(group_coordinator, group, topic, True)
        return answer if answer[1] != "UNSTABLE_OFFSET_COMMIT" else None
    out["after commit"] = clients.wait_for(settled, "the offsets committed", ctx.timeout_s)
    out["add offsets again"] = _retried(add_offsets, "AddOffsetsToTxn", ctx)["error_code"]
    out["txn offset commit 9"] = commit(9)
    out["end abort"] = txn.end(False, retry=True)
    out["after abort"] = clients.wait_for(settled, "the offsets aborted", ctx.timeout_s)
    return out


@scenario("txn-write-markers-no-authorizer", "WriteTxnMarkers")
def txn_write_markers_no_authorizer(ctx: Context) -> object:
    """WriteTxnMarkers v1 from a client (no ClusterAction; the cluster has no authorizer) to a
    partition's leader: a commit marker for a producer id with no transaction there, a partition
    of a topic that does not exist, and the same partition at a follower; then the partition's
    end offsets and what a read_committed Fetch returns of it."""
    topic = clients.create_topic(ctx, "t")
    missing = ctx.name("none")
    leader = clients.leader_address(ctx, topic)

    def markers(address: str, name: str) -> object:
        answer = raw.call(address, 27, 1, {"markers": [{
            "producer_id": 424242, "producer_epoch": 0, "transaction_result": True,
            "topics": [{"name": name, "partition_indexes": [0]}], "coordinator_epoch": 0}]})
        if isinstance(answer, str):
            return answer
        return [[t["name"], p["partition_index"], p["error_code"]]
                for m in answer["markers"] for t in m["topics"] for p in t["partitions"]]

    out = {"leader": markers(leader, topic), "unknown topic": markers(leader, missing),
           "follower": markers(clients.other_address(ctx, leader), topic),
           "end offsets": [_list_offset(leader, topic, -1, level) for level in (0, 1)],
           "fetch read_committed": _fetch(ctx, topic, 1)}
    return out


@scenario("txn-fetch-read-committed-aborted", "Fetch", "Produce", "EndTxn")
def txn_fetch_read_committed_aborted(ctx: Context) -> object:
    """An aborted transaction of 3 records, then a committed one of 2 (one producer): Fetch v12
    from offset 0 read_committed (the aborted_transactions list, the batches with their
    markers) and read_uncommitted (aborted_transactions null), and read_committed from past the
    aborted transaction."""
    topic = clients.create_topic(ctx, "t")
    txn = Txn(ctx)
    out: dict = {"aborted": txn.transaction(topic, 3, commit=False)}
    _stable(ctx, topic)
    out["committed"] = txn.transaction(topic, 2, commit=True, start=3)
    out["stable at"] = _stable(ctx, topic)
    out["read_committed"] = _fetch(ctx, topic, 1)
    out["read_uncommitted"] = _fetch(ctx, topic, 0)
    out["read_committed from 4"] = _fetch(ctx, topic, 1, offset=4)
    return out


@scenario("txn-list-offsets-open", "ListOffsets", "Fetch", "EndTxn")
def txn_list_offsets_open(ctx: Context) -> object:
    """A committed transaction of 2 records, then an open one of 3: ListOffsets latest and
    earliest at v6 read_committed and read_uncommitted, latest at v1 (no isolation level),
    and a read_committed Fetch, while it is open; the same once it is committed."""
    topic = clients.create_topic(ctx, "t")
    leader = clients.leader_address(ctx, topic)
    txn = Txn(ctx)
    out: dict = {"first": txn.transaction(topic, 2, commit=True)}
    _stable(ctx, topic)
    out["open"] = {"add": txn.add({topic: [0]}), "produce": txn.produce(topic, 3, start=2)}

    def offsets() -> dict:
        return {"latest read_uncommitted": _list_offset(leader, topic, -1, 0),
                "latest read_committed": _list_offset(leader, topic, -1, 1),
                "earliest read_committed": _list_offset(leader, topic, -2, 1),
                "latest v1": _list_offset(leader, topic, -1, 0, version=1),
                "fetch read_committed": _fetch(ctx, topic, 1)}
    out["while open"] = offsets()
    out["end"] = txn.end(True)
    out["stable at"] = _stable(ctx, topic)
    out["after commit"] = offsets()
    return out
