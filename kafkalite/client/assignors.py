"""Partition assignors for ZooKeeper-coordinated consumer groups (pure functions).

Every member of a group runs the same assignor over the same sorted inputs and so computes the same
answer without talking to the others (Kafka 0.8's scheme). Inputs:

- ``subscriptions``: member id -> the topics it subscribes to
- ``partitions``: topic -> number of partitions
- ``previous``: member id -> partitions it owned before (only the sticky assignor looks at it)

Output: member id -> sorted list of (topic, partition). Each partition of a subscribed topic goes
to exactly one member subscribed to it; members beyond the partition count get nothing.
"""

from __future__ import annotations

from typing import Callable, Mapping

from kafkalite.topic_partition import TopicPartition

Assignment = dict[str, list[TopicPartition]]


def _empty(subscriptions: Mapping[str, set]) -> Assignment:
    return {member: [] for member in subscriptions}


def range_assign(subscriptions: Mapping[str, set], partitions: Mapping[str, int],
                 previous: Mapping[str, list] | None = None) -> Assignment:
    """Kafka's range assignor: per topic, sorted members each take a contiguous range; the first
    ``P mod C`` members take one extra."""
    result = _empty(subscriptions)
    for topic in sorted(partitions):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        count = partitions[topic]
        per_member, extra = divmod(count, len(members))
        for i, member in enumerate(members):
            start = per_member * i + min(i, extra)
            length = per_member + (1 if i < extra else 0)
            result[member].extend((topic, p) for p in range(start, start + length))
    return {m: sorted(tps) for m, tps in result.items()}


def roundrobin_assign(subscriptions: Mapping[str, set], partitions: Mapping[str, int],
                      previous: Mapping[str, list] | None = None) -> Assignment:
    """Kafka's round-robin assignor: partitions sorted by (topic, partition) are dealt to the
    sorted members in a cycle, skipping members not subscribed to the partition's topic."""
    result = _empty(subscriptions)
    members = sorted(subscriptions)
    if not members:
        return result
    position = 0
    for topic in sorted(partitions):
        if not any(topic in subscriptions[m] for m in members):
            continue
        for p in range(partitions[topic]):
            while topic not in subscriptions[members[position % len(members)]]:
                position += 1
            result[members[position % len(members)]].append((topic, p))
            position += 1
    return result


def sticky_assign(subscriptions: Mapping[str, set], partitions: Mapping[str, int],
                  previous: Mapping[str, list] | None = None) -> Assignment:
    """Balanced like round-robin, but keeps every partition where it was whenever balance allows,
    so a member joining or leaving moves as few partitions as possible."""
    previous = previous or {}
    result = _empty(subscriptions)
    all_tps = [(t, p) for t in sorted(partitions) for p in range(partitions[t])
               if any(t in topics for topics in subscriptions.values())]
    eligible = {tp: sorted(m for m, topics in subscriptions.items() if tp[0] in topics)
                for tp in all_tps}
    valid = set(all_tps)
    taken: set = set()
    # 1. keep what members still may own (each partition once, members in sorted order)
    for member in sorted(previous):
        if member not in subscriptions:
            continue
        for tp in sorted(map(tuple, previous[member])):
            if tp in valid and tp not in taken and member in eligible[tp]:
                result[member].append(tp)
                taken.add(tp)
    # 2. members above their fair share give up the excess (highest partitions first)
    total, count = len(all_tps), max(len(subscriptions), 1)
    ceiling = -(-total // count)
    for member in sorted(result):
        while len(result[member]) > ceiling:
            taken.discard(result[member].pop())
    # 3. unowned partitions go to the eligible member with the fewest
    for tp in all_tps:
        if tp not in taken:
            target = min(eligible[tp], key=lambda m: (len(result[m]), m))
            result[target].append(tp)
            taken.add(tp)
    # 4. even out: move from the fullest to the emptiest eligible member while it helps
    moved = True
    while moved:
        moved = False
        for donor in sorted(result, key=lambda m: (-len(result[m]), m)):
            for tp in sorted(result[donor], reverse=True):
                receiver = min(eligible[tp], key=lambda m: (len(result[m]), m))
                if len(result[donor]) - len(result[receiver]) > 1:
                    result[donor].remove(tp)
                    result[receiver].append(tp)
                    moved = True
                    break
            if moved:
                break
    return {m: sorted(tps) for m, tps in result.items()}


ASSIGNORS: dict[str, Callable[..., Assignment]] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "sticky": sticky_assign,
}


#: Kafka's assignor class names, for users who bring their Java settings along
_ALIASES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "RangeAssignor": "range", "RoundRobinAssignor": "roundrobin", "StickyAssignor": "sticky",
}

def assignor_names(strategy) -> list[str]:
    """``partition_assignment_strategy`` (a name or a list of them, Kafka's class names
    accepted) as Kafka's protocol names; ValueError for an unknown one."""
    if isinstance(strategy, str):
        strategy = [strategy]
    names = []
    for item in strategy:
        name = _ALIASES.get(item, item)
        get_assignor(name)            # ValueError naming the choices
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("partition_assignment_strategy is empty")
    return names


def get_assignor(name: str) -> Callable[..., Assignment]:
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise ValueError(f"unknown partition_assignment_strategy {name!r}; "
                         f"choose one of {', '.join(ASSIGNORS)}") from None


def moved_partitions(before: Mapping[str, list], after: Mapping[str, list]) -> int:
    """How many partitions changed owner (a partition of a member that left counts as moved)."""
    owner_before = {tuple(tp): m for m, tps in before.items() for tp in tps}
    owner_after = {tuple(tp): m for m, tps in after.items() for tp in tps}
    return sum(1 for tp, m in owner_after.items() if owner_before.get(tp) != m)
