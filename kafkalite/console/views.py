"""The JSON documents of ``/api/cluster``, ``/api/groups`` and ``/api/zk``: pure functions of the
console's state, so their shape is tested without a server.

``/api/cluster``::

    {"cluster_id", "controller": {"broker_id", "epoch"},
     "brokers": [{"id", "host", "port", "rack", "alive"}],
     "topics": {"<t>": {"topic_id", "records_per_s",
                        "partitions": [{"partition", "leader", "leader_epoch", "replicas", "isr",
                                        "offline", "offline_replicas", "log_end_offset",
                                        "high_watermark", "last_stable_offset",
                                        "open_transaction", "records_per_s"}]}},
     "transactions": [{"transactional_id", "producer_id", "producer_epoch", "state", "open",
                       "partitions", "coordinator", "timeout_ms", "start_ms",
                       "last_update_ms"}]}

``offline`` is true when the partition has no live leader; ``log_end_offset``,
``high_watermark`` and ``last_stable_offset`` are the leader's, from the last sample (null until
one answered); ``open_transaction`` is true while the LSO is below the HW (a transaction holds
records there that read_committed consumers do not see yet). ``transactions``: each
transactional id as ``__transaction_state`` last said (:mod:`kafkalite.console.transactions`).
"""

from __future__ import annotations

import base64
import json
from typing import Mapping

from zk_schema.topics import NO_LEADER

from kafkalite.console.broker_reader import PartitionOffsets
from kafkalite.console.model import ZOOKEEPER_KIND, ClusterModel, owner_member
from kafkalite.console.rates import RateTracker
from kafkalite.console.sentences import is_internal, short_member
from kafkalite.zk.znode_info import ZnodeInfo

Offsets = Mapping[tuple[str, int], PartitionOffsets]


def cluster_view(model: ClusterModel, offsets: Offsets, rates: RateTracker,
                 transactions: list[dict] | None = None) -> dict:
    dead = model.dead_brokers()
    brokers = []
    # a replica on a broker the console never saw registered is on a dead broker: draw it too
    assigned = {r for info in model.topics.values() for rs in info.assignment.values() for r in rs}
    for broker_id in sorted(set(model.brokers) | assigned):
        info = model.brokers.get(broker_id)
        reg = info.registration if info else None
        brokers.append({"id": broker_id, "host": reg.host if reg else None,
                        "port": reg.port if reg else None, "rack": reg.rack if reg else None,
                        "alive": bool(info and info.alive)})
    topics = {}
    topic_rates = rates.topic_rates()
    for topic, info in sorted(model.topics.items()):
        partitions = []
        for partition, replicas in sorted(info.assignment.items()):
            state = info.states.get(partition)
            leader = state.leader if state else NO_LEADER
            got = offsets.get((topic, partition))
            partitions.append({
                "partition": partition,
                "leader": None if leader == NO_LEADER else leader,
                "leader_epoch": state.leader_epoch if state else None,
                "replicas": list(replicas),
                "isr": list(state.isr) if state else [],
                "offline": leader == NO_LEADER or leader in dead,
                "offline_replicas": [r for r in replicas if r in dead or r not in model.brokers],
                "log_end_offset": got.log_end_offset if got else None,
                "high_watermark": got.high_watermark if got else None,
                "last_stable_offset": got.last_stable_offset if got else None,
                "open_transaction": bool(got and got.last_stable_offset is not None
                                         and got.last_stable_offset < got.high_watermark),
                "records_per_s": round(rates.rate((topic, partition)), 1),
            })
        topics[topic] = {"topic_id": info.topic_id, "internal": is_internal(topic),
                         "records_per_s": round(topic_rates.get(topic, 0.0), 1),
                         "partitions": partitions}
    return {
        "cluster_id": model.cluster_id,
        "controller": {"broker_id": model.controller_id, "epoch": model.controller_epoch},
        "brokers": brokers,
        "topics": topics,
        "transactions": list(transactions or []),
    }


def groups_view(model: ClusterModel, offsets: Offsets,
                coordinator_groups: list[dict]) -> dict:
    """Every group of both kinds: members with their partitions, and per partition the committed
    offset, the high watermark and the lag."""
    groups = []
    for group, info in sorted(model.zk_groups.items()):
        assignment = model.zk_assignment(group)
        owners = {tp: owner_member(o) for tp, o in info.owners.items()}
        groups.append({
            "group": group, "kind": ZOOKEEPER_KIND,
            "state": "Stable" if info.members else "Empty",
            "assignment_strategy": None, "coordinator": None,
            "members": [_member(m, None, None, assignment.get(m, [])) for m in sorted(assignment)],
            "offsets": _offset_rows(info.offsets, owners, offsets),
        })
    for described in coordinator_groups:
        committed = {}
        for key, offset in described.get("committed", {}).items():
            topic, _, partition = key.rpartition(":")
            committed[(topic, int(partition))] = offset
        owners = {(t, p): mem["id"] for mem in described["members"] for t, p in mem["partitions"]}
        groups.append({
            "group": described["group"], "kind": described["kind"], "state": described["state"],
            "assignment_strategy": described.get("assignment_strategy"),
            "coordinator": described.get("coordinator"),
            "members": [_member(mem["id"], mem.get("client_id"), mem.get("host"),
                                [tuple(tp) for tp in mem["partitions"]])
                        for mem in described["members"]],
            "offsets": _offset_rows(committed, owners, offsets),
        })
    return {"groups": groups}


def _member(member: str, client_id: str | None, host: str | None,
            partitions: list[tuple[str, int]]) -> dict:
    return {"id": member, "short": short_member(member), "client_id": client_id, "host": host,
            "partitions": [{"topic": t, "partition": p} for t, p in sorted(partitions)]}


def _offset_rows(committed: Mapping[tuple[str, int], int], owners: Mapping[tuple[str, int], str],
                 offsets: Offsets) -> list[dict]:
    rows = []
    for tp in sorted(set(committed) | set(owners)):
        current = committed.get(tp)
        got = offsets.get(tp)
        end = got.high_watermark if got else None
        rows.append({"topic": tp[0], "partition": tp[1], "committed": current,
                     "log_end_offset": end,
                     "lag": end - current if end is not None and current is not None else None,
                     "owner": owners.get(tp)})
    return rows


def zk_view(info: ZnodeInfo) -> dict:
    """One znode: its data (text; also parsed when it is JSON; base64 when it is not UTF-8), its
    stat and its children."""
    try:
        text: str | None = info.data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    parsed = None
    if text:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
    stat = info.stat
    return {
        "path": info.path,
        "data": text,
        "data_base64": None if text is not None else base64.b64encode(info.data).decode(),
        "json": parsed,
        "stat": {"czxid": stat.czxid, "mzxid": stat.mzxid, "pzxid": stat.pzxid,
                 "ctime": stat.ctime_ms, "mtime": stat.mtime_ms, "version": stat.version,
                 "cversion": stat.cversion, "aversion": stat.aversion,
                 "ephemeral_owner": stat.ephemeral_owner, "ephemeral": stat.ephemeral,
                 "data_length": stat.data_length, "num_children": stat.num_children},
        "children": list(info.children),
    }
