"""ElectLeaders (KIP-460), AlterPartitionReassignments and ListPartitionReassignments (KIP-455),
one handler each for both protocols, as Kafka 2.8's KafkaApis serves them.

The work is the active controller's (``controller.admin_elections``, ``controller.reassignment``),
run as events on its queue; any other broker answers NOT_CONTROLLER (Alter and List at the top
level, ElectLeaders per partition, as Kafka's). Authorization: Alter on the cluster for
ElectLeaders (refused: CLUSTER_AUTHORIZATION_FAILED at the top and for every partition) and
AlterPartitionReassignments, Describe on the cluster for ListPartitionReassignments (refused: the
request's error response).

ElectLeaders answers once this broker's metadata shows each elected partition's new leader, or
REQUEST_TIMED_OUT for those it does not show within the request's timeout (Kafka's
DelayedElectLeader); with ``topic_partitions`` null it elects every partition this broker knows
and leaves out of the answer those that needed no election.
"""

from __future__ import annotations

from twisted.internet import defer

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType

__all__ = ["handle_elect_leaders", "handle_alter_partition_reassignments",
           "handle_list_partition_reassignments"]

_NOT_CONTROLLER = errors.NotControllerError.code
#: Kafka's Errors.NOT_CONTROLLER message, which a top-level NOT_CONTROLLER carries
NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."


def _controller(broker):
    """This broker's controller when it is the active one, else None."""
    controller = getattr(broker, "controller", None)
    return controller if controller is not None and controller.is_active else None


def _by_topic(results: dict, entry):
    """``{tp: value}`` -> ``[(topic, [entry(partition, value)])]`` in first-seen order."""
    topics: dict[str, list] = {}
    for (topic, partition), value in results.items():
        topics.setdefault(topic, []).append(entry(partition, value))
    return list(topics.items())


# --- ElectLeaders (43) ---------------------------------------------------------------------------

def handle_elect_leaders(broker, ctx, request: m.ElectLeadersRequest) -> defer.Deferred:
    return defer.ensureDeferred(_elect_leaders(broker, ctx, request))


async def _elect_leaders(broker, ctx, request: m.ElectLeadersRequest) -> m.ElectLeadersResponse:
    if request.election_type not in (m.ELECTION_PREFERRED, m.ELECTION_UNCLEAN):
        raise errors.InvalidRequestError(f"unknown election type {request.election_type}")
    if not ctx.authz.may(ApiKey.ELECT_LEADERS, ResourceType.CLUSTER):
        return request.error_response(errors.ClusterAuthorizationFailedError.code, None)
    everything = request.topic_partitions is None
    if everything:
        cache = broker.metadata_cache
        tps = [(t, p) for t in sorted(cache.partitions) for p in sorted(cache.partitions[t])]
    else:
        tps = list(dict.fromkeys((t.topic, p) for t in request.topic_partitions
                                 for p in t.partitions))
    controller = _controller(broker)
    outcomes: dict = {}
    if controller is None:
        outcomes = {tp: (_NOT_CONTROLLER, None) for tp in tps}
    else:
        try:
            outcomes = await controller.elect_leaders(tps, request.election_type)
        except errors.NotControllerError:
            outcomes = {tp: (_NOT_CONTROLLER, None) for tp in tps}
    elected = {tp: leader for tp, leader in outcomes.items() if isinstance(leader, int)}
    results = {tp: outcome for tp, outcome in outcomes.items() if not isinstance(outcome, int)}
    if elected:
        cache = broker.metadata_cache

        def shown():
            return all(cache.leader_of(*tp) == leader for tp, leader in elected.items())

        await broker.metadata_waits.wait(request.timeout_ms, shown, lambda timed_out: None)
        for tp, leader in elected.items():
            results[tp] = ((errors.NONE, None) if cache.leader_of(*tp) == leader
                           else (errors.RequestTimedOutError.code, None))
    if everything:
        results = {tp: r for tp, r in results.items()
                   if r[0] != errors.ElectionNotNeededError.code}
    ordered = {tp: results[tp] for tp in tps if tp in results}
    return m.ElectLeadersResponse(results=[
        m.ElectLeadersTopicResult(topic, partitions)
        for topic, partitions in _by_topic(
            ordered, lambda p, r: m.ElectLeadersPartitionResult(p, r[0], r[1]))])


# --- AlterPartitionReassignments (45) ------------------------------------------------------------

def handle_alter_partition_reassignments(broker, ctx, request: m.AlterPartitionReassignmentsRequest
                                         ) -> defer.Deferred:
    return defer.ensureDeferred(_alter_partition_reassignments(broker, ctx, request))


async def _alter_partition_reassignments(broker, ctx, request):
    ctx.authz.require_cluster(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
    reassignments = {(t.topic, p.partition): (None if p.replicas is None else list(p.replicas))
                     for t in request.topics for p in t.partitions}
    controller = _controller(broker)
    try:
        if controller is None:
            raise errors.NotControllerError(NOT_CONTROLLER_MESSAGE)
        results = await controller.alter_partition_reassignments(reassignments)
    except errors.NotControllerError:
        return m.AlterPartitionReassignmentsResponse(error_code=_NOT_CONTROLLER,
                                                     error_message=NOT_CONTROLLER_MESSAGE)
    ordered = {tp: results[tp] for tp in reassignments}
    # a served request's top-level message is "", not null: the schema's default, as Kafka's
    return m.AlterPartitionReassignmentsResponse(error_message="", results=[
        m.ReassignableTopicResult(topic, partitions)
        for topic, partitions in _by_topic(
            ordered, lambda p, r: m.ReassignablePartitionResult(p, r[0], r[1]))])


# --- ListPartitionReassignments (46) -------------------------------------------------------------

def handle_list_partition_reassignments(broker, ctx, request: m.ListPartitionReassignmentsRequest
                                        ) -> defer.Deferred:
    return defer.ensureDeferred(_list_partition_reassignments(broker, ctx, request))


async def _list_partition_reassignments(broker, ctx, request):
    ctx.authz.require_cluster(ApiKey.LIST_PARTITION_REASSIGNMENTS)
    tps = None if request.topics is None else list(dict.fromkeys(
        (t.topic, p) for t in request.topics for p in t.partitions))
    controller = _controller(broker)
    try:
        if controller is None:
            raise errors.NotControllerError(NOT_CONTROLLER_MESSAGE)
        ongoing = await controller.list_partition_reassignments(tps)
    except errors.NotControllerError:
        return m.ListPartitionReassignmentsResponse(error_code=_NOT_CONTROLLER,
                                                    error_message=NOT_CONTROLLER_MESSAGE)
    return m.ListPartitionReassignmentsResponse(error_message="", topics=[
        m.OngoingTopicReassignment(topic, partitions)
        for topic, partitions in _by_topic(
            dict(sorted(ongoing.items())),
            lambda p, a: m.OngoingPartitionReassignment(p, list(a.replicas), list(a.adding),
                                                        list(a.removing)))])
