"""The AdminClient's consumer groups of both generations (docs/architecture.md, 9. Consumer groups).

* ``coordinator`` groups (Kafka 0.9+, the brokers' group coordinator): ListGroups on every
  broker (each lists the groups it coordinates), DescribeGroups and OffsetFetch at the group's
  coordinator (FindCoordinator, retried while it is being elected or loaded, looked up again on
  NOT_COORDINATOR), log end offsets by ListOffsets from the leaders. Offsets are reset with an
  OffsetCommit of generation -1 (Kafka's admin commit, taken only while the group is empty),
  groups deleted with DeleteGroups.
* ``zookeeper`` groups (Kafka 0.8): ``/consumers/<g>`` through the AdminClient's ZooKeeper
  session (``admin.py``), only when the AdminClient has ``zookeeper=``.

Every result names its kind. The functions here take the AdminClient and work with its cluster
metadata and connections.
"""

from __future__ import annotations

import time
from typing import Iterable, NamedTuple

from kafkalite import errors
from kafkalite.client.structs import BrokerMetadata, OffsetAndMetadata, TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.protocol import messages as m

__all__ = ["COORDINATOR", "ZOOKEEPER", "KINDS", "ConsumerGroupListing",
           "ConsumerGroupDescription", "ConsumerGroupPartition", "MemberDescription"]

COORDINATOR = "coordinator"
ZOOKEEPER = "zookeeper"
KINDS = (COORDINATOR, ZOOKEEPER)

# consumer_protocol is imported where it is used: it loads kio's schemas, which import hypothesis
# (seconds under load), and every ``import kafkalite`` loads this module
_CONSUMER_PROTOCOL_TYPE = "consumer"      # consumer_protocol.PROTOCOL_TYPE

_RETRIABLE = {errors.CoordinatorNotAvailableError.code, errors.NotCoordinatorError.code,
              errors.CoordinatorLoadInProgressError.code}


class ConsumerGroupListing(str):
    """A group's name (a ``str``, so lists of them read as the names they always were) that
    also says which ``kind`` of group it is, its ``protocol_type`` and its ``state`` (None where
    a kind has no such thing)."""

    kind: str
    protocol_type: str | None
    state: str | None

    def __new__(cls, group_id: str, kind: str, protocol_type: str | None = None,
                state: str | None = None):
        self = super().__new__(cls, group_id)
        self.kind = kind
        self.protocol_type = protocol_type
        self.state = state
        return self

    @property
    def group_id(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return (f"ConsumerGroupListing({str(self)!r}, kind={self.kind!r}, "
                f"state={self.state!r})")


class MemberDescription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str | None
    host: str | None
    assignment: list[TopicPartition]


class ConsumerGroupDescription(NamedTuple):
    """A group as Kafka's ``describeConsumerGroups`` tells it. ``state``: Empty,
    PreparingRebalance, CompletingRebalance, Stable or Dead (ZooKeeper groups: Stable with live
    members, else Empty); ``coordinator``: the broker coordinating it (None for ZooKeeper
    groups); ``assignment_strategy``: the chosen assignor ("range"...), "" when none."""

    group_id: str
    kind: str
    state: str
    protocol_type: str
    assignment_strategy: str
    coordinator: BrokerMetadata | None
    members: list[MemberDescription]


class ConsumerGroupPartition(NamedTuple):
    """One row of ``AdminClient.describe_consumer_group`` (Kafka's describe columns); None
    where a value is missing (no committed offset, no owner, no leader...)."""

    group: str
    topic: str | None
    partition: int | None
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None
    kind: str = "zookeeper"          # "coordinator" (Kafka 0.9+) or "zookeeper" (Kafka 0.8)


def member_host(group: str, member: str) -> str | None:
    """The host in a ZooKeeper member id ``<g>_<host>-<ms>-<uuid8>``, as Kafka's tool shows
    it."""
    rest = member[len(group) + 1:] if member.startswith(group + "_") else member
    parts = rest.rsplit("-", 2)
    return "/" + parts[0] if len(parts) == 3 and parts[0] else None


def check_kind(kind: str | None) -> str | None:
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} or None, got {kind!r}")
    return kind


# --- the coordinator and requests to it ------------------------------------------------------

def _deadline(admin) -> float:
    return time.monotonic() + admin.request_timeout_ms / 1000


def find_coordinator(admin, group: str, deadline: float | None = None) -> int:
    """The node id of ``group``'s coordinator (retrying while it is not available)."""
    deadline = deadline or _deadline(admin)
    last: KafkaError | None = None
    while True:
        try:
            response = admin._any_broker_request(m.FindCoordinatorRequest(key=group))
        except KafkaError as exc:
            if not exc.retriable:
                raise
            response, last = None, exc
        if response is not None:
            if response.error_code == 0:
                if admin._cluster.broker(response.node_id) is None:
                    admin._cluster.refresh(topics=[])
                return response.node_id
            last = errors.for_code(response.error_code, response.error_message)
            if response.error_code not in _RETRIABLE:
                raise errors.for_code(response.error_code,
                                      f"finding the coordinator of group '{group}': "
                                      f"{last.message}")
        if time.monotonic() >= deadline:
            raise errors.KafkaTimeoutError(
                f"could not find the coordinator of group '{group}' (last error: {last}); is "
                f"the __consumer_offsets topic available?")
        time.sleep(admin._retry_backoff)


def coordinator_request(admin, group: str, request, error_of):
    """``request`` answered by ``group``'s coordinator; ``error_of(response)`` gives the
    response's error code (0 when fine). Coordinator moves and loading are retried until the
    request timeout; other errors are returned to the caller in the response."""
    deadline = _deadline(admin)
    last: KafkaError | None = None
    while True:
        node = find_coordinator(admin, group, deadline)
        try:
            response = admin._pool.get(node).request(request)
        except KafkaError as exc:
            if not exc.retriable and not isinstance(exc, errors.NetworkError):
                raise
            admin._pool.drop(node)
            response, last = None, exc
        if response is not None:
            code = error_of(response)
            if code not in _RETRIABLE:
                return node, response
            last = errors.for_code(code)
        if time.monotonic() >= deadline:
            raise errors.KafkaTimeoutError(
                f"group '{group}': {type(request).__name__[:-7]} did not succeed within "
                f"{admin.request_timeout_ms} ms (last error: {last})")
        time.sleep(admin._retry_backoff)


# --- listing and describing ------------------------------------------------------------------

def list_coordinator_groups(admin) -> list[ConsumerGroupListing]:
    """Every consumer group the brokers coordinate (ListGroups on each broker; groups of other
    protocol types, e.g. Kafka Connect's, are left out as Kafka's tool does)."""
    admin._check_open()
    snap = admin._cluster.refresh(topics=[])
    found: dict[str, ConsumerGroupListing] = {}
    for node in sorted(snap.brokers):
        deadline = _deadline(admin)
        while True:
            try:
                response = admin._pool.get(node).request(m.ListGroupsRequest())
            except KafkaError as exc:
                if not exc.retriable and not isinstance(exc, errors.NetworkError):
                    raise
                admin._pool.drop(node)
                code = None
            else:
                code = response.error_code
            if code == 0 or code == errors.CoordinatorNotAvailableError.code:
                break     # not available: a broker without a group coordinator lists nothing
            if time.monotonic() >= deadline:
                raise errors.KafkaTimeoutError(
                    f"broker {node} did not list its groups within {admin.request_timeout_ms} "
                    f"ms" + (f" ({errors.for_code(code).name})" if code else ""))
            time.sleep(admin._retry_backoff)
        if code:
            continue
        for g in response.groups:
            if g.protocol_type in ("", _CONSUMER_PROTOCOL_TYPE):
                found[g.group_id] = ConsumerGroupListing(g.group_id, COORDINATOR,
                                                         g.protocol_type, g.group_state)
    return [found[name] for name in sorted(found)]


def _decode_assignment(data: bytes) -> list[TopicPartition]:
    from kafkalite.client import consumer_protocol

    try:
        return consumer_protocol.decode_assignment(data).partitions
    except KafkaError:
        return []


def describe_coordinator_group(admin, group: str) -> ConsumerGroupDescription:
    node, response = coordinator_request(
        admin, group, m.DescribeGroupsRequest(groups=[group]),
        lambda r: r.groups[0].error_code if r.groups else 0)
    if not response.groups:
        raise errors.UnknownServerError(f"DescribeGroups returned nothing for '{group}'")
    g = response.groups[0]
    if g.error_code:
        raise errors.for_code(g.error_code, f"describing group '{group}'")
    consumer = g.protocol_type in ("", _CONSUMER_PROTOCOL_TYPE)
    members = [MemberDescription(x.member_id, x.group_instance_id, x.client_id, x.client_host,
                                 _decode_assignment(x.member_assignment) if consumer else [])
               for x in g.members]
    return ConsumerGroupDescription(group, COORDINATOR, g.group_state, g.protocol_type,
                                    g.protocol_data, admin._cluster.broker(node), members)


def fetch_committed(admin, group: str, partitions: Iterable | None = None
                    ) -> dict[TopicPartition, OffsetAndMetadata]:
    """``{tp: OffsetAndMetadata}`` committed by a coordinator group (every partition it has an
    offset for, or those asked)."""
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp[0], []).append(int(tp[1]))
        topics = [m.OffsetFetchTopic(t, sorted(set(ps))) for t, ps in by_topic.items()]
    _node, response = coordinator_request(admin, group,
                                          m.OffsetFetchRequest(group_id=group, topics=topics),
                                          lambda r: r.error_code)
    if response.error_code:
        raise errors.for_code(response.error_code, f"fetching the offsets of group '{group}'")
    out = {}
    for t in response.topics:
        for p in t.partitions:
            if p.error_code:
                raise errors.for_code(p.error_code, f"fetching the offset of {t.topic}-"
                                                    f"{p.partition} for group '{group}'")
            if p.committed_offset >= 0:
                out[TopicPartition(t.topic, p.partition)] = OffsetAndMetadata(
                    p.committed_offset, p.metadata or "")
    return dict(sorted(out.items()))


def describe_coordinator_group_offsets(admin, group: str, row_type) -> list:
    """Kafka's ``--describe`` rows: the partitions of members with an assignment (members with
    more partitions first), then committed partitions nobody owns, then members owning
    nothing."""
    description = describe_coordinator_group(admin, group)
    committed = fetch_committed(admin, group)
    if description.state == "Dead" and not committed:
        raise errors.GroupIdNotFoundError(f"consumer group '{group}' does not exist")
    owned = {tp for member in description.members for tp in member.assignment}
    everything = sorted(owned | set(committed))
    ends = admin._list_offsets(everything, -1,
                               timeout_s=min(5.0, admin.request_timeout_ms / 1000))
    rows = []

    def row(tp, member):
        current = committed.get(tp)
        offset = current.offset if current is not None else None
        end = ends.get(tp)
        lag = end - offset if offset is not None and end is not None else None
        return row_type(group, tp.topic, tp.partition, offset, end, lag,
                        member.member_id if member else None,
                        member.host if member else None,
                        member.client_id if member else None, COORDINATOR)

    by_size = sorted((x for x in description.members if x.assignment),
                     key=lambda x: -len(x.assignment))
    for member in by_size:
        for tp in sorted(member.assignment, key=lambda tp: (tp.topic, tp.partition)):
            rows.append(row(tp, member))
    for tp in sorted(set(committed) - owned):
        rows.append(row(tp, None))
    for member in description.members:
        if not member.assignment:
            rows.append(row_type(group, None, None, None, None, None, member.member_id,
                                 member.host, member.client_id, COORDINATOR))
    return rows


# --- changing ---------------------------------------------------------------------------------

def delete_coordinator_groups(admin, groups: list[str]) -> dict[str, KafkaError | None]:
    out: dict[str, KafkaError | None] = {}
    for group in groups:
        _node, response = coordinator_request(
            admin, group, m.DeleteGroupsRequest(groups_names=[group]),
            lambda r: r.results[0].error_code if r.results else 0)
        code = response.results[0].error_code if response.results else -1
        if code == 0:
            out[group] = None
        elif code == errors.NonEmptyGroupError.code:
            out[group] = errors.NonEmptyGroupError(
                f"consumer group '{group}' has live members; stop its consumers before "
                f"deleting it")
        elif code == errors.GroupIdNotFoundError.code:
            out[group] = errors.GroupIdNotFoundError(f"consumer group '{group}' does not "
                                                     f"exist")
        else:
            out[group] = errors.for_code(code, f"deleting group '{group}'")
    return out


def refuse_active_coordinator_group(admin, group: str) -> ConsumerGroupDescription:
    description = describe_coordinator_group(admin, group)
    if description.state not in ("Empty", "Dead"):
        raise errors.NonEmptyGroupError(
            f"Assignments can only be reset if the group '{group}' is inactive, but the "
            f"current state is {description.state}.")
    return description


def commit_coordinator_offsets(admin, group: str, offsets: dict) -> None:
    """Write committed offsets for an inactive coordinator group (Kafka's
    alterConsumerGroupOffsets: an OffsetCommit outside any generation)."""
    by_topic: dict[str, list[m.OffsetCommitPartition]] = {}
    for tp, value in offsets.items():
        offset = value.offset if isinstance(value, OffsetAndMetadata) else int(value)
        metadata = value.metadata if isinstance(value, OffsetAndMetadata) else ""
        by_topic.setdefault(tp[0], []).append(m.OffsetCommitPartition(int(tp[1]), offset, -1,
                                                                      metadata))
    request = m.OffsetCommitRequest(group_id=group, generation_id=-1, member_id="",
                                    topics=[m.OffsetCommitTopic(t, ps)
                                            for t, ps in by_topic.items()])

    def first_error(r):
        return next((p.error_code for t in r.topics for p in t.partitions if p.error_code), 0)

    _node, response = coordinator_request(admin, group, request, first_error)
    for t in response.topics:
        for p in t.partitions:
            if p.error_code in (errors.UnknownMemberIdError.code,
                                errors.IllegalGenerationError.code,
                                errors.RebalanceInProgressError.code):
                raise errors.NonEmptyGroupError(
                    f"consumer group '{group}' became active while its offsets were being "
                    f"reset ({errors.for_code(p.error_code).name}); stop its consumers first")
            if p.error_code:
                raise errors.for_code(p.error_code, f"committing the offset of {t.topic}-"
                                                    f"{p.partition} for group '{group}'")


def delete_coordinator_offsets(admin, group: str, partitions: Iterable
                               ) -> dict[TopicPartition, KafkaError | None]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp[0], []).append(int(tp[1]))
    request = m.OffsetDeleteRequest(group_id=group, topics=[
        m.OffsetDeleteTopic(t, sorted(set(ps))) for t, ps in by_topic.items()])
    _node, response = coordinator_request(admin, group, request, lambda r: r.error_code)
    if response.error_code:
        raise errors.for_code(response.error_code, f"deleting offsets of group '{group}'")
    return {TopicPartition(t.topic, p.partition):
            (errors.for_code(p.error_code, f"{t.topic}-{p.partition}") if p.error_code else None)
            for t in response.topics for p in t.partitions}


# --- resetting offsets (both kinds; pure: the AdminClient reads and writes) -------------------

def reset_targets(group: str, topic, partitions, committed: dict, partitions_of
                  ) -> list[TopicPartition]:
    """The partitions an offset reset covers: ``topic`` (a name, names, or None for every topic
    the group committed offsets for) and, with one topic, ``partitions`` of it.
    ``partitions_of(names)`` is ``{topic: sorted partition ids}``."""
    if topic is None:
        topics = sorted({t for t, _ in committed})
        if not topics:
            raise errors.GroupIdNotFoundError(
                f"consumer group '{group}' has no committed offsets; name the topic(s) to "
                f"reset")
    else:
        topics = [topic] if isinstance(topic, str) else list(dict.fromkeys(topic))
    known = partitions_of(topics)
    tps: list[TopicPartition] = []
    if partitions is not None:
        if len(topics) != 1:
            raise errors.InvalidRequestError("partitions can only be given with one topic")
        have = known[topics[0]]
        for p in partitions:
            if p not in have:
                raise errors.UnknownTopicOrPartitionError(
                    f"topic '{topics[0]}' has no partition {p} (it has 0..{len(have) - 1})")
            tps.append(TopicPartition(topics[0], int(p)))
    else:
        for t in topics:
            tps += [TopicPartition(t, p) for p in known[t]]
    return tps


def plan_offsets_reset(tps: list, earliest: dict, latest: dict, committed: dict, *,
                       to_earliest: bool, to_latest: bool, to_offset: int | None,
                       shift_by: int | None) -> dict[TopicPartition, int]:
    """``{tp: new offset}``, clamped into each log's range ``[earliest, latest]`` as Kafka's
    tool does; ``committed`` is ``{(topic, partition): offset}`` (for ``shift_by``)."""
    plan: dict[TopicPartition, int] = {}
    for tp in tps:
        low, high = earliest[tp], latest[tp]
        if to_earliest:
            target = low
        elif to_latest:
            target = high
        elif to_offset is not None:
            target = int(to_offset)
        else:
            current = committed.get((tp.topic, tp.partition))
            if current is None:
                raise errors.InvalidRequestError(
                    f"cannot shift the offset of {tp}: the group has no committed offset "
                    f"there; use to_earliest, to_latest or to_offset for it")
            target = current + int(shift_by)
        plan[tp] = min(max(target, low), high)
    return plan
