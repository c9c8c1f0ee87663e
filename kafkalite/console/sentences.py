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
