"""The broker's answers to Kafka-protocol clients: kio request entities in, plain dicts out.

Each handler takes the decoded kio request and its version and returns a dict (or a Deferred of
one) that ``protocol.kafka.entities.build`` turns into the response entity of that version. The
data-path and topic APIs are served by the same code that serves kafkalite's native protocol
(``KafkaApis`` and the ReplicaManager): the handlers here only translate between the two shapes,
so both protocols see one broker. Record data passes through untouched in both directions.

With an authorizer, every handler asks ``server.request_authz`` about the connection's principal
first; the data-path and topic APIs are checked in the native handlers they call, with the
same code for both protocols.

Kafka-protocol connections belong to clients. Brokers replicate and the controller commands over
the native protocol, so a Kafka-protocol Fetch, ListOffsets or OffsetForLeaderEpoch is always
served as a consumer's (replica id -1), whatever replica id it carries.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.errors import KafkaError, code_of
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka.entities import millis
from kafkalite.security.acl import ResourceType
from kafkalite.security.operations import NOT_REQUESTED
from kafkalite.server import acl_apis
from kafkalite.server import kafka_admin_apis as admin
from kafkalite.server import kafka_group_apis as groups
from kafkalite.server import topic_admin
from kafkalite.server.request_authz import RequestAuthz

log = logging.getLogger(__name__)

_NO_OPERATIONS = NOT_REQUESTED   # "authorized operations not requested"
_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code


def _then(result, convert):
    """Apply ``convert`` to a native response, now or when its Deferred fires."""
    if isinstance(result, defer.Deferred):
        return result.addCallback(convert)
    return convert(result)


def _records(data) -> bytes:
    if data is None:
        return b""
    return data if type(data) is bytes else bytes(data)


class KafkaProtocolApis:
    """Dispatch of Kafka-protocol requests for one broker."""

    def __init__(self, broker, native_apis):
        self.broker = broker
        self.native = native_apis
        self.metadata = broker.metadata_cache
        self._handlers = {
            ApiKey.METADATA: self.metadata_request,
            ApiKey.PRODUCE: self.produce,
            ApiKey.FETCH: self.fetch,
            ApiKey.LIST_OFFSETS: self.list_offsets,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.offset_for_leader_epoch,
            ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.DELETE_TOPICS: self.delete_topics,
            10: self.find_coordinator,
            11: self.join_group,
            14: lambda r, v, c: groups.sync_group(self.broker, r, v, c),
            12: lambda r, v, c: groups.heartbeat(self.broker, r, v, c),
            13: lambda r, v, c: groups.leave_group(self.broker, r, v, c),
            8: lambda r, v, c: groups.offset_commit(self.broker, r, v, c),
            9: lambda r, v, c: groups.offset_fetch(self.broker, r, v, c),
            15: lambda r, v, c: groups.describe_groups(self.broker, r, v, c),
            16: lambda r, v, c: groups.list_groups(self.broker, r, v, c),
            42: lambda r, v, c: groups.delete_groups(self.broker, r, v, c),
            47: lambda r, v, c: groups.offset_delete(self.broker, r, v, c),
            37: lambda r, v, c: admin.create_partitions(self.broker, r, v, self._authz(c)),
            32: lambda r, v, c: admin.describe_configs(self.broker, r, v, self._authz(c)),
            33: lambda r, v, c: admin.alter_configs(self.broker, r, v, self._authz(c)),
            44: lambda r, v, c: admin.incremental_alter_configs(self.broker, r, v, self._authz(c)),
            21: lambda r, v, c: admin.delete_records(self.broker, r, v, self._authz(c)),
            29: lambda r, v, c: acl_apis.kafka_describe(self.broker, self._authz(c), r, v),
            30: lambda r, v, c: acl_apis.kafka_create(self.broker, self._authz(c), r, v),
            31: lambda r, v, c: acl_apis.kafka_delete(self.broker, self._authz(c), r, v),
        }

    def _authz(self, connection) -> RequestAuthz:
        return RequestAuthz.of(self.broker, connection)

    def handle(self, api_key: int, api_version: int, request, connection):
        """The response dict (or a Deferred of it) for one request; ``connection`` is the
        broker protocol it came on (its factory names the listener)."""
        return self._handlers[api_key](request, api_version, connection)

    @staticmethod
    def _listener(connection) -> str | None:
        return getattr(getattr(connection, "factory", None), "listener_name", None)

    def metadata_request(self, request, version, connection):
        topics = request.topics
        if topics is None or (version == 0 and not topics):
            names = None
        else:
            names = [t.name for t in topics if t.name is not None]
        allow = getattr(request, "allow_auto_topic_creation", True)
        authz = self._authz(connection)
        native = self.native.handle_metadata(
            m.MetadataRequest(topics=names, allow_auto_topic_creation=allow),
            self._listener(connection), authz)
        # KIP-430 (v8+; the cluster's only up to v10, where the request can ask for it):
        # refused topics keep "not requested", as Kafka answers them apart
        cluster_operations = _NO_OPERATIONS
        if getattr(request, "include_cluster_authorized_operations", False):
            cluster_operations = authz.cluster_authorized_operations()
        want_topic_operations = getattr(request, "include_topic_authorized_operations", False)

        def topic_operations(t):
            if not want_topic_operations or t.error_code == _TOPIC_DENIED:
                return _NO_OPERATIONS
            return authz.authorized_operations(ResourceType.TOPIC, t.name)
        return {
            "throttle_time": 0,
            "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                        for b in native.brokers],
            "cluster_id": native.cluster_id,
            "controller_id": native.controller_id,
            "cluster_authorized_operations": cluster_operations,
            "topics": [{
                "error_code": t.error_code, "name": t.name, "topic_id": t.topic_id,
                "is_internal": t.name.startswith("__"),
                "topic_authorized_operations": topic_operations(t),
                "partitions": [{
                    "error_code": p.error_code, "partition_index": p.partition,
                    "leader_id": p.leader, "leader_epoch": p.leader_epoch,
                    "replica_nodes": p.replicas, "isr_nodes": p.isr,
                    "offline_replicas": p.offline_replicas} for p in t.partitions],
            } for t in native.topics],
        }

    def find_coordinator(self, request, version, connection):
        return groups.find_coordinator(self.broker, request, version, connection,
                                       self._listener(connection))

    def join_group(self, request, version, connection):
        return groups.join_group(self.broker, request, version, connection,
                                 getattr(connection, "client_id", None))

    # --- data path -----------------------------------------------------------------------------
    def produce(self, request, version, connection):
        topic_data: dict[str, dict[int, bytes]] = {}
        for topic in request.topic_data:
            partitions = topic_data.setdefault(topic.name, {})
            for p in topic.partition_data:
                partitions[p.index] = _records(p.records)
        # a negative timeout means "do not wait" (Kafka expires it at once); the purgatory's
        # timer refuses negative delays, after the records are appended
        native = m.ProduceRequest(transactional_id=request.transactional_id, acks=request.acks,
                                  timeout_ms=max(0, millis(request.timeout)),
                                  topic_data=topic_data)
        return _then(self.native.handle_produce(native, self._authz(connection)),
                     _produce_response)

    def fetch(self, request, version, connection):
        if getattr(request, "session_epoch", -1) > 0:
            # kafkalite never hands out a fetch session (it answers session id 0), so a client
            # continuing one is confused: tell it to start over, as Kafka does.
            return {"throttle_time": 0, "error_code": errors.FetchSessionIdNotFoundError.code,
                    "session_id": 0, "responses": []}
        native = m.FetchRequest(
            replica_id=m.CONSUMER_REPLICA_ID,
            max_wait_ms=max(0, millis(request.max_wait)),
            min_bytes=request.min_bytes,
            max_bytes=getattr(request, "max_bytes", 0x7FFFFFFF),
            isolation_level=getattr(request, "isolation_level", 0),
            topics=[m.FetchTopic(t.topic, [
                m.FetchPartition(p.partition, p.fetch_offset, p.partition_max_bytes,
                                 getattr(p, "current_leader_epoch", -1), -1)
                for p in t.partitions]) for t in request.topics])
        return _then(self.native.handle_fetch(native, self._authz(connection)),
                     _fetch_response)

    def list_offsets(self, request, version, connection):
        native = m.ListOffsetsRequest(
            replica_id=m.CONSUMER_REPLICA_ID,
            isolation_level=getattr(request, "isolation_level", 0),
            topics=[m.ListOffsetsTopic(t.name, [
                m.ListOffsetsPartition(p.partition_index, p.timestamp,
                                       getattr(p, "current_leader_epoch", -1))
                for p in t.partitions]) for t in request.topics])
        response = self.native.handle_list_offsets(native, self._authz(connection))
        return {"throttle_time": 0, "topics": [{
            "name": t.topic,
            "partitions": [{"partition_index": p.partition, "error_code": p.error_code,
                            "timestamp": p.timestamp, "offset": p.offset,
                            "leader_epoch": p.leader_epoch} for p in t.partitions],
        } for t in response.topics]}

    def offset_for_leader_epoch(self, request, version, connection):
        native = m.OffsetForLeaderEpochRequest(
            replica_id=m.CONSUMER_REPLICA_ID,
            topics=[m.OffsetForLeaderEpochTopic(t.topic, [
                m.OffsetForLeaderEpochPartition(p.partition,
                                                getattr(p, "current_leader_epoch", -1),
                                                p.leader_epoch)
                for p in t.partitions]) for t in request.topics])
        response = self.native.handle_offset_for_leader_epoch(native, self._authz(connection))
        return {"throttle_time": 0, "topics": [{
            "topic": t.topic,
            "partitions": [{"partition": p.partition, "error_code": p.error_code,
                            "leader_epoch": p.leader_epoch, "end_offset": p.end_offset}
                           for p in t.partitions],
        } for t in response.topics]}

    def init_producer_id(self, request, version, connection):
        if request.transactional_id is not None:
            return {"throttle_time": 0, "producer_id": -1, "producer_epoch": -1,
                    "error_code": errors.InvalidRequestError.code}
        d = defer.maybeDeferred(self.native.handle_init_producer_id, m.InitProducerIdRequest(),
                                self._authz(connection))

        def answer(native):
            return {"throttle_time": 0, "error_code": native.error_code,
                    "producer_id": native.producer_id, "producer_epoch": native.producer_epoch}

        def failed(failure):
            log.warning("InitProducerId failed: %s", failure.value)
            return {"throttle_time": 0, "error_code": code_of(failure.value),
                    "producer_id": -1, "producer_epoch": -1}
        return d.addCallbacks(answer, failed)

    # --- topics --------------------------------------------------------------------------------
    def create_topics(self, request, version, connection):
        topics = [m.CreatableTopic(t.name, t.num_partitions, t.replication_factor,
                                   {a.partition_index: list(a.broker_ids) for a in t.assignments},
                                   {c.name: c.value for c in t.configs})
                  for t in request.topics]

        def answer(outcomes):
            return {"throttle_time": 0, "topics": [{
                "name": o.name, "topic_id": None, "error_code": o.error_code,
                "error_message": o.error_message,
                "topic_config_error_code": o.topic_config_error_code,
                "num_partitions": o.num_partitions, "replication_factor": o.replication_factor,
                "configs": [{"name": c.name, "value": c.value, "read_only": c.read_only,
                             "config_source": c.config_source, "is_sensitive": c.is_sensitive}
                            for c in o.configs]} for o in outcomes]}
        return topic_admin.create_topics(
            self.broker, topics, millis(request.timeout),
            getattr(request, "validate_only", False), self._authz(connection)).addCallback(answer)

    def delete_topics(self, request, version, connection):
        names = list(getattr(request, "topic_names", None) or
                     [t.name for t in getattr(request, "topics", ()) if t.name is not None])
        native = m.DeleteTopicsRequest(topic_names=names, timeout_ms=millis(request.timeout))

        def answer(response):
            return {"throttle_time": 0, "responses": [
                {"name": r.name, "topic_id": None, "error_code": r.error_code,
                 "error_message": r.error_message} for r in response.responses]}
        return defer.maybeDeferred(self.native.handle_delete_topics, native,
                                   self._authz(connection)).addCallback(answer)


def _produce_response(native: m.ProduceResponse) -> dict:
    if isinstance(native, m.RequestErrorResponse):
        raise errors.for_code(native.error_code, native.error_message)
    return {"throttle_time": 0, "responses": [{
        "name": topic,
        "partition_responses": [{
            # Kafka sends an error message only with record errors (KIP-467); kafkalite's
            # own wording of the other refusals stays on its native protocol
            "index": index, "error_code": r.error_code,
            "error_message": r.error_message if r.record_errors else None,
            "base_offset": r.base_offset, "log_append_time": r.log_append_time,
            "log_start_offset": r.log_start_offset,
            "record_errors": [{"batch_index": e.batch_index,
                               "batch_index_error_message": e.message}
                              for e in r.record_errors]}
            for index, r in partitions.items()],
    } for topic, partitions in native.responses.items()]}


def _fetch_response(native: m.FetchResponse) -> dict:
    return {"throttle_time": 0, "error_code": native.error_code, "session_id": 0,
            "responses": [{
                "topic": t.topic,
                "partitions": [{
                    "partition_index": p.partition, "error_code": p.error_code,
                    "high_watermark": p.high_watermark,
                    "last_stable_offset": (p.last_stable_offset if p.last_stable_offset >= 0
                                           else p.high_watermark),
                    "log_start_offset": p.log_start_offset,
                    "aborted_transactions": None, "preferred_read_replica": -1,
                    "records": p.records} for p in t.partitions],
            } for t in native.responses]}


__all__ = ["KafkaProtocolApis", "KafkaError"]
