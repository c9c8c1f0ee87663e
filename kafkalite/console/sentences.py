"""One human-readable sentence per cluster change: what the console's timeline and ``/api/events``
say. Pure functions of before/after values, so each wording is unit-tested.

Lists are written as Kafka's tools write replica lists in the seeds' pictures, without spaces
(``[3,1]``); a partition is ``<topic>-<partition>``.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from zk_schema.topics import NO_LEADER, PartitionState


def ids(values: Iterable[int]) -> str:
    """``[3,1]``: broker ids in the order given."""
    return "[" + ",".join(str(v) for v in values) + "]"


def tp_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def short_member(member: str) -> str:
    """A member id short enough for a projector: its last ``-`` part when that is a long random
    suffix (``billing_host-1700000000000-1a2b3c4d`` -> ``1a2b3c4d``), else the whole id."""
    head, sep, tail = member.rpartition("-")
    return tail if sep and head and len(tail) >= 6 else member


# --- brokers and the controller ------------------------------------------------------------------

def broker_joined(broker_id: int, host: str | None, port: int | None, seen_before: bool) -> str:
    where = f" at {host}:{port}" if host else ""
    if seen_before:
        return f"broker {broker_id} is back{where} and registered again in ZooKeeper"
    return f"broker {broker_id} joined{where}"


def is_internal(topic: str) -> bool:
    """Kafka's internal topics (``__consumer_offsets``): the page folds them away by default."""
    return topic.startswith("__")


def broker_died(broker_id: int, led: Sequence[tuple[str, int]] = ()) -> str:
    """``led``: the partitions it led; internal topics' are counted, not listed (50 partitions
    of __consumer_offsets would drown the ones a learner made)."""
    text = f"broker {broker_id} died (its ZooKeeper session ended: /brokers/ids/{broker_id} is gone)"
    shown = [tp_name(t, p) for t, p in led if not is_internal(t)]
    internal: dict[str, int] = {}
    for t, _p in led:
        if is_internal(t):
            internal[t] = internal.get(t, 0) + 1
    shown += [f"{n} partition{'s' if n != 1 else ''} of {t}" for t, n in sorted(internal.items())]
    if shown:
        text += f"; it led {_and(shown)}"
    return text


def controller_elected(broker_id: int, epoch: int | None, previous: int | None) -> str:
    epoch_text = f" (epoch {epoch})" if epoch is not None else ""
    if previous is None:
        return f"broker {broker_id} is now the controller{epoch_text}"
    if previous == broker_id:
        return f"broker {broker_id} became the controller again{epoch_text}"
    return f"controller moved from broker {previous} to broker {broker_id}{epoch_text}"


def controller_gone(broker_id: int) -> str:
    return (f"controller broker {broker_id} is gone (/controller was deleted); the live brokers "
            f"race to create it")


# --- topics and partitions -----------------------------------------------------------------------

def topic_created(topic: str, partitions: Mapping[int, Sequence[int]]) -> str:
    rf = len(next(iter(partitions.values()), ()))
    return (f"topic {topic} created with {len(partitions)} partition"
            f"{'s' if len(partitions) != 1 else ''}, replication factor {rf}")


def topic_deleted(topic: str) -> str:
    return f"topic {topic} deleted"


def partitions_added(topic: str, before: int, after: int) -> str:
    return f"topic {topic} grew from {before} to {after} partitions"


def partition_changed(topic: str, partition: int, old: PartitionState | None,
                      new: PartitionState, dead: Iterable[int]) -> list[str]:
    """Sentences for one partition state znode that changed from ``old`` to ``new``; ``dead`` are
    the brokers known to be dead at that moment (to say why a leader moved)."""
    name = tp_name(topic, partition)
    dead = set(dead)
    if old is None:
        return []
    if new.leader != old.leader:
        if new.leader == NO_LEADER:
            cause = f"broker {old.leader} died; " if old.leader in dead else ""
            return [f"{cause}partition {name} is offline: no live in-sync replica to lead it "
                    f"(ISR {ids(new.isr)}, epoch {new.leader_epoch})"]
        if old.leader == NO_LEADER:
            return [f"partition {name} is back online: leader {new.leader} from ISR "
                    f"{ids(new.isr)} (epoch {new.leader_epoch})"]
        if old.leader in dead:
            return [f"broker {old.leader} died; partition {name} elected leader {new.leader} "
                    f"from ISR {ids(new.isr)} (epoch {new.leader_epoch})"]
        return [f"partition {name} moved its leader from broker {old.leader} to {new.leader} "
                f"(ISR {ids(new.isr)}, epoch {new.leader_epoch})"]
    if tuple(new.isr) == tuple(old.isr):
        return []
    left = [b for b in old.isr if b not in new.isr]
    joined = [b for b in new.isr if b not in old.isr]
    out = []
    if left:
        gone_dead = [b for b in left if b in dead]
        lagging = [b for b in left if b not in dead]
        if gone_dead:
            out.append(f"partition {name} dropped dead broker{_s(gone_dead)} "
                       f"{_and(gone_dead)} from its ISR, now {ids(new.isr)}")
        if lagging:
            out.append(f"broker{_s(lagging)} {_and(lagging)} fell out of sync on {name}: ISR "
                       f"now {ids(new.isr)}")
    if joined:
        out.append(f"broker{_s(joined)} {_and(joined)} caught up on {name} and rejoined its "
                   f"ISR, now {ids(new.isr)}")
    return out


def _s(items: Sequence) -> str:
    return "s" if len(items) != 1 else ""


def _and(items: Sequence) -> str:
    words = [str(i) for i in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# --- consumer groups -----------------------------------------------------------------------------

def member_joined(group: str, kind: str, member: str, count: int) -> str:
    return (f"group {group} ({kind}): member {short_member(member)} joined "
            f"({count} member{'s' if count != 1 else ''})")


def member_left(group: str, kind: str, member: str, count: int) -> str:
    return (f"group {group} ({kind}): member {short_member(member)} left "
            f"({count} member{'s' if count != 1 else ''})")


def group_assignment(group: str, kind: str,
                     assignment: Mapping[str, Sequence[tuple[str, int]]]) -> str:
    """``group billing (zookeeper) rebalanced: 1a2b3c4d owns orders-0, orders-1; 5e6f7a8b owns
    nothing (idle)``: who owns what after a rebalance, members in id order."""
    if not assignment:
        return f"group {group} ({kind}) has no members: nothing is owned"
    parts = []
    for member in sorted(assignment):
        owned = sorted(assignment[member])
        what = ", ".join(tp_name(t, p) for t, p in owned) if owned else "nothing (idle)"
        parts.append(f"{short_member(member)} owns {what}")
    return f"group {group} ({kind}) rebalanced: " + "; ".join(parts)


def group_gone(group: str, kind: str) -> str:
    return f"group {group} ({kind}) is gone"


# --- transactions --------------------------------------------------------------------------------

def tp_ranges(partitions: Iterable[tuple[str, int]]) -> str:
    """``orders-0..2, payments-5``: partitions by topic (in name order), consecutive runs of one
    topic written as a range."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    parts = []
    for topic in sorted(by_topic):
        numbers = sorted(set(by_topic[topic]))
        start = prev = numbers[0]
        for n in numbers[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            parts.append(tp_name(topic, start) if start == prev
                         else f"{topic}-{start}..{prev}")
            if n is not None:
                start = prev = n
    return ", ".join(parts)


def _txn_where(partitions: Iterable[tuple[str, int]]) -> str:
    """The data partitions of a transaction, and apart from them its consumer offsets
    (AddOffsetsToTxn adds the group's __consumer_offsets partition)."""
    partitions = list(partitions)
    data = [tp for tp in partitions if not is_internal(tp[0])]
    offsets = [tp for tp in partitions if is_internal(tp[0])]
    text = f" on {tp_ranges(data)}" if data else ""
    if offsets:
        text += (" with " if data else " of ") + f"consumer offsets in {tp_ranges(offsets)}"
    return text


def _producer(producer_id: int, producer_epoch: int, transactional_id: str) -> str:
    return f"producer {producer_id} (transactional id {transactional_id}, epoch {producer_epoch})"


def _took(duration_ms: int | None) -> str:
    if duration_ms is None or duration_ms < 0:
        return ""
    return f", {duration_ms / 1000:.1f} s after it began"


def txn_committed(producer_id: int, producer_epoch: int, transactional_id: str,
                  partitions: Iterable[tuple[str, int]], duration_ms: int | None) -> str:
    """``producer 4001 (transactional id copier, epoch 0) committed a transaction on orders-0..2,
    1.2 s after it began: read_committed consumers see its records now``."""
    return (f"{_producer(producer_id, producer_epoch, transactional_id)} committed a "
            f"transaction{_txn_where(partitions)}{_took(duration_ms)}: read_committed consumers "
            f"see its records now")


def txn_aborted(producer_id: int, producer_epoch: int, transactional_id: str,
                partitions: Iterable[tuple[str, int]], duration_ms: int | None,
                fenced_epoch: int | None = None) -> str:
    """An abort the producer asked for, or (``fenced_epoch``: the epoch the transaction was
    written with, below the abort's) one the coordinator made itself: the transaction timed
    out, or a newer producer of the same id fenced it, and the epoch was bumped."""
    who = _producer(producer_id, producer_epoch, transactional_id)
    if fenced_epoch is not None:
        return (f"the transaction coordinator aborted the transaction of producer {producer_id} "
                f"(transactional id {transactional_id}){_txn_where(partitions)}"
                f"{_took(duration_ms)}: it timed out or a newer producer of the id fenced it "
                f"(epoch {fenced_epoch} -> {producer_epoch}); read_committed consumers skip its "
                f"records")
    return (f"{who} aborted a transaction{_txn_where(partitions)}{_took(duration_ms)}: "
            f"read_committed consumers skip its records")
