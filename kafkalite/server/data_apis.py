"""Produce and Fetch: one handler each, over the model, for both wire protocols.

Each authorizes per resource as Kafka 2.8's KafkaApis does, hands the allowed partitions to the
ReplicaManager as plain values (``server.data_values``) and builds the model response from its
per-partition results, the refused partitions after the served ones (Kafka's order):

* Produce: transactional batches need a transactional id and Write on it (else every partition
  answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED); each topic needs
  Write (else its partitions answer TOPIC_AUTHORIZATION_FAILED).
* Fetch: a follower (replica id >= 0) needs ClusterAction on the cluster, a consumer Read on each
  topic; what is refused answers TOPIC_AUTHORIZATION_FAILED per partition.

The request is never changed: the allowed part is a new mapping.
"""

from __future__ import annotations

from functools import partial

from twisted.internet import defer

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.record.header import ATTRIBUTES_POS, I16, TRANSACTIONAL_BIT
from kafkalite.security.acl import ResourceType
from kafkalite.security.operations import CONSUMER, FOLLOWER
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.fetch_down_conversion import client_magic, down_converted

__all__ = ["handle_produce", "handle_fetch"]

_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
_NO_TOPICS: frozenset = frozenset()


def _then(result, convert):
    """``convert`` applied to the ReplicaManager's answer, now or when its Deferred fires."""
    if isinstance(result, defer.Deferred):
        return result.addCallback(convert)
    return convert(result)


# --- Produce ------------------------------------------------------------------------------------

def handle_produce(broker, ctx, request: m.ProduceRequest):
    authz = ctx.authz
    # Kafka's handleProduceRequest asks about the transactional id only for transactional
    # records: those need an id and Write on it; a transactional id beside plain records is
    # not checked
    if _has_transactional_records(request.topic_data):
        if request.transactional_id is None:
            return request.error_response(
                errors.TransactionalIdAuthorizationFailedError.code,
                "transactional records without a transactional id")
        if not authz.may(ApiKey.PRODUCE, ResourceType.TRANSACTIONAL_ID,
                         request.transactional_id):
            return request.error_response(
                errors.TransactionalIdAuthorizationFailedError.code,
                f"not authorized to write as transactional id {request.transactional_id}")
    topic_data = request.topic_data
    refused = _NO_TOPICS
    if authz.enabled:
        _allowed, refused = authz.split(ApiKey.PRODUCE, ResourceType.TOPIC, topic_data)
    entries = {(topic, partition): records
               for topic, partitions in topic_data.items() if topic not in refused
               for partition, records in partitions.items()}
    denied = {topic: {p: m.ProducePartitionResponse(_TOPIC_DENIED) for p in topic_data[topic]}
              for topic in refused}
    if not entries:
        return m.ProduceResponse(responses=denied)
    results = broker.replica_manager.append_records(request.timeout_ms, request.acks, False,
                                                    entries)
    quota = getattr(ctx, "quota", None)
    if quota is not None:             # producer_byte_rate: the bytes of the request's batches
        quota.produce_throttle_ms(sum(len(records or b"") for records in entries.values()))
    if not request.expects_response():
        return None                       # acks=0: nobody reads an answer
    return _then(results, lambda answered: _produce_response(answered, denied))


def _has_transactional_records(topic_data: dict) -> bool:
    """Whether a partition's (first) batch is transactional (Kafka's
    RequestUtils.hasTransactionalRecords)."""
    for partitions in topic_data.values():
        for records in partitions.values():
            if (records is not None and len(records) > ATTRIBUTES_POS + 1
                    and I16.unpack_from(records, ATTRIBUTES_POS)[0] & TRANSACTIONAL_BIT):
                return True
    return False


def _produce_response(results: dict, denied: dict) -> m.ProduceResponse:
    responses: dict[str, dict[int, m.ProducePartitionResponse]] = {}
    for (topic, partition), r in results.items():
        partitions = responses.get(topic)
        if partitions is None:
            partitions = responses[topic] = {}
        partitions[partition] = m.ProducePartitionResponse(
            r.error_code, r.error_message, r.base_offset, r.log_append_time,
            r.log_start_offset,
            [m.ProduceRecordError(index, text) for index, text in r.record_errors]
            if r.record_errors else [])
    responses.update(denied)
    return m.ProduceResponse(responses=responses)


# --- Fetch --------------------------------------------------------------------------------------

def handle_fetch(broker, ctx, request: m.FetchRequest):
    magic = client_magic(ctx)
    if magic is not None:  # Fetch v0-v3 reads only magic 0/1: Kafka down-converts its records
        return _then(_handle_fetch(broker, ctx, request),
                     partial(down_converted, request, magic, broker.log_manager.config_for))
    return _handle_fetch(broker, ctx, request)


def _handle_fetch(broker, ctx, request: m.FetchRequest):
    if request.session_epoch > 0:
        # kafkalite never hands out a fetch session (it answers session id 0), so a client
        # continuing one is confused: tell it to start over, as Kafka does
        return m.FetchResponse(error_code=errors.FetchSessionIdNotFoundError.code)
    refused = _refused_fetch_topics(ctx.authz, request)
    fetch_infos = {(t.topic, p.partition): PartitionData(p.fetch_offset, p.log_start_offset,
                                                          p.partition_max_bytes,
                                                          p.current_leader_epoch)
                   for t in request.topics if t.topic not in refused for p in t.partitions}
    denied = [m.FetchTopicResponse(t.topic, [m.FetchPartitionResponse(p.partition, _TOPIC_DENIED)
                                             for p in t.partitions])
              for t in request.topics if t.topic in refused]
    if not fetch_infos:
        return m.FetchResponse(responses=denied)
    max_bytes, quota = request.max_bytes, getattr(ctx, "quota", None)
    if quota is not None:             # no more than the client's fetch quota lets through
        max_bytes = quota.fetch_max_bytes(max_bytes)
    params = FetchParams(request.replica_id, request.max_wait_ms, request.min_bytes,
                         max_bytes, request.isolation_level,
                         request.rack_id if request.replica_id < 0 else None)
    return _then(broker.replica_manager.fetch(params, fetch_infos),
                 lambda results: _fetch_response(request, refused, results, denied, quota))


def _refused_fetch_topics(authz, request: m.FetchRequest):
    if not authz.enabled:
        return _NO_TOPICS
    if request.replica_id >= 0:
        if authz.may(ApiKey.FETCH, ResourceType.CLUSTER, role=FOLLOWER):
            return _NO_TOPICS
        return {t.topic for t in request.topics}
    _allowed, refused = authz.split(ApiKey.FETCH, ResourceType.TOPIC,
                                    (t.topic for t in request.topics), CONSUMER)
    return refused


def _fetch_response(request: m.FetchRequest, refused, results: dict,
                    denied: list, quota=None) -> m.FetchResponse:
    if quota is not None:
        # consumer_byte_rate (and the request quota): a throttled fetch answers no data, as
        # Kafka's getThrottledResponse
        throttle = quota.fetch_throttle_ms(sum(len(r.records or b"") for r in results.values()))
        if throttle > 0:
            return m.FetchResponse(throttle_time_ms=throttle)
    # FetchResult's fields follow FetchPartitionResponse's partition field: (partition, *r)
    served = [m.FetchTopicResponse(t.topic, [
        _partition_response(p.partition, results[(t.topic, p.partition)])
        for p in t.partitions]) for t in request.topics if t.topic not in refused]
    if denied:
        served.extend(denied)
    return m.FetchResponse(responses=served)


def _partition_response(partition: int, result) -> m.FetchPartitionResponse:
    aborted = result.aborted_transactions
    if aborted:       # the data layer's (producer id, first offset) pairs, as the model's
        result = result._replace(aborted_transactions=[
            m.FetchAbortedTransaction(pid, first) for pid, first in aborted])
    return m.FetchPartitionResponse(partition, *result)
