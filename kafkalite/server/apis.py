"""KafkaApis: one handler method per API key, returning a response or a Deferred of one.

Every request is authorized first when the broker has an authorizer (``server.request_authz``:
the connection's principal, the operation ``security.operations`` names for the API): refused
topics answer TOPIC_AUTHORIZATION_FAILED, refused groups GROUP_AUTHORIZATION_FAILED, a refused
cluster operation CLUSTER_AUTHORIZATION_FAILED.

Data-path requests (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch) go to the ReplicaManager;
controller requests (LeaderAndIsr, UpdateMetadata, StopReplica) are obeyed only when ZooKeeper
backs the claimed controller and epoch (``server.controller_requests``). Admin requests
(CreateTopics, DeleteTopics, CreatePartitions) are served by the active controller only, as in
Kafka 2.8 (other brokers answer NOT_CONTROLLER and clients retry at the controller); they write
ZooKeeper, and answer once the controller has acted (or the request's timeout passes).
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.controller.assignment import assign_replicas
from kafkalite.errors import KafkaError, code_of
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.server import acl_apis, native_admin_apis, native_group_apis, topic_admin
from kafkalite.server import request_authz as gates
from kafkalite.server.request_authz import ALLOW_ALL, RequestAuthz
from kafkalite.server.partition_admin import create_partitions
from kafkalite.server.purgatory import DelayedOperation, Purgatory
from kafkalite.topics import validate_topic_name

log = logging.getLogger(__name__)

# obeyed only when ZooKeeper backs the claimed controller (server.controller_requests)
CONTROLLER_REQUESTS = frozenset({ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA,
                                 ApiKey.STOP_REPLICA})
# handlers that take the request's RequestAuthz as their second argument
_AUTHORIZED = frozenset({ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS,
                         ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.CREATE_TOPICS,
                         ApiKey.DELETE_TOPICS, ApiKey.INIT_PRODUCER_ID,
                         ApiKey.CREATE_PARTITIONS, ApiKey.DESCRIBE_CONFIGS,
                         ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS,
                         ApiKey.DELETE_RECORDS, ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS,
                         ApiKey.DELETE_ACLS})


class _DelayedMetadataCondition(DelayedOperation):
    """Completes when ``predicate()`` holds (checked on every UpdateMetadata) or on timeout."""

    def __init__(self, timeout_ms, predicate, on_done):
        super().__init__(timeout_ms)
        self.predicate = predicate
        self.on_done = on_done

    def try_complete(self) -> bool:
        return self.predicate()

    def on_complete(self, timed_out: bool):
        return self.on_done(timed_out)


class KafkaApis:
    def __init__(self, broker):
        self.broker = broker
        self.config = broker.config
        self.replica_manager = broker.replica_manager
        self.metadata = broker.metadata_cache
        self.metadata_waiters = Purgatory("metadata", broker.reactor)
        self.connections = set()
        self._handlers = {
            ApiKey.API_VERSIONS: self.handle_api_versions,
            ApiKey.METADATA: self.handle_metadata,
            ApiKey.PRODUCE: self.handle_produce,
            ApiKey.FETCH: self.handle_fetch,
            ApiKey.LIST_OFFSETS: self.handle_list_offsets,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch,
            ApiKey.LEADER_AND_ISR: self.handle_leader_and_isr,
            ApiKey.UPDATE_METADATA: self.handle_update_metadata,
            ApiKey.STOP_REPLICA: self.handle_stop_replica,
            ApiKey.CONTROLLED_SHUTDOWN: self.handle_controlled_shutdown,
            ApiKey.CREATE_TOPICS: self.handle_create_topics,
            ApiKey.DELETE_TOPICS: self.handle_delete_topics,
            ApiKey.INIT_PRODUCER_ID: self.handle_init_producer_id,
            ApiKey.CREATE_PARTITIONS: self.handle_create_partitions,
            ApiKey.DESCRIBE_CONFIGS: self.handle_describe_configs,
            ApiKey.ALTER_CONFIGS: self.handle_alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.handle_incremental_alter_configs,
            ApiKey.DELETE_RECORDS: self.handle_delete_records,
            ApiKey.DESCRIBE_ACLS: lambda r, authz: acl_apis.native_describe(broker, authz, r),
            ApiKey.CREATE_ACLS: lambda r, authz: acl_apis.native_create(broker, authz, r),
            ApiKey.DELETE_ACLS: lambda r, authz: acl_apis.native_delete(broker, authz, r),
        }
        self._handlers.update(native_group_apis.handlers(broker))   # the group coordinator's

    # --- connection bookkeeping (for metrics and clean shutdown) ---------------------------------
    def connection_opened(self, protocol) -> None:
        self.connections.add(protocol)

    def connection_closed(self, protocol) -> None:
        self.connections.discard(protocol)

    def handle(self, header, request, protocol):
        handler = self._handlers.get(header.api_key)
        if handler is None:
            raise errors.UnsupportedVersionError(f"api key {header.api_key} is not served")
        authz = RequestAuthz.of(self.broker, protocol)
        if header.api_key == ApiKey.METADATA:
            factory = getattr(protocol, "factory", None)
            return handler(request, getattr(factory, "listener_name", None), authz)
        if header.api_key in _AUTHORIZED:
            return handler(request, authz)
        if header.api_key in native_group_apis.GROUP_CHECKS:
            refused = native_group_apis.refusal(authz, header.api_key, request)
            if refused is not None:
                return refused
        if header.api_key in native_group_apis.WITH_CONTEXT:
            return handler(request, header, protocol)
        if header.api_key in CONTROLLER_REQUESTS or \
                header.api_key == ApiKey.CONTROLLED_SHUTDOWN:
            authz.require_cluster(header.api_key)     # ClusterAction: brokers only
        if header.api_key in CONTROLLER_REQUESTS:
            factory = getattr(protocol, "factory", None)
            return self.broker.controller_requests.admit(
                request, handler, getattr(factory, "listener_name", None))
        return handler(request)

    # --- simple ones ----------------------------------------------------------------------------
    def handle_api_versions(self, request: m.ApiVersionsRequest):
        return m.ApiVersionsResponse(api_versions=[
            m.ApiVersionRange(key, low, high) for key, low, high in m.supported_versions()
            if ApiKey(key) in self._handlers])

    def handle_produce(self, request: m.ProduceRequest, authz: RequestAuthz = ALLOW_ALL):
        if request.transactional_id is not None and not authz.may(
                ApiKey.PRODUCE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return request.error_response(
                errors.TransactionalIdAuthorizationFailedError.code,
                f"not authorized to write as transactional id {request.transactional_id}")
        return gates.gate_produce(authz, request, self.replica_manager.append_records)

    def handle_fetch(self, request: m.FetchRequest, authz: RequestAuthz = ALLOW_ALL):
        return gates.gate_fetch(authz, request, self.replica_manager.fetch)

    def handle_list_offsets(self, request: m.ListOffsetsRequest,
                            authz: RequestAuthz = ALLOW_ALL):
        return gates.gate_list_offsets(authz, request, self.replica_manager.list_offsets)

    def handle_offset_for_leader_epoch(self, request: m.OffsetForLeaderEpochRequest,
                                       authz: RequestAuthz = ALLOW_ALL):
        return gates.gate_offset_for_leader_epoch(
            authz, request, self.replica_manager.offsets_for_leader_epoch)

    # --- controller requests --------------------------------------------------------------------
    def handle_leader_and_isr(self, request: m.LeaderAndIsrRequest):
        return self.broker.apply_leader_and_isr(request)

    def handle_update_metadata(self, request: m.UpdateMetadataRequest):
        if request.controller_epoch < self.metadata.controller_epoch:
            return request.error_response(
                errors.StaleControllerEpochError.code,
                f"controller epoch {request.controller_epoch} is older than "
                f"{self.metadata.controller_epoch}")
        self.replica_manager.check_controller_epoch(request.controller_epoch)
        deleted = self.metadata.update(request)
        if deleted:
            log.info("topics deleted: %s", ", ".join(deleted))
        self.metadata_waiters.check("metadata")
        return m.UpdateMetadataResponse()

    def handle_stop_replica(self, request: m.StopReplicaRequest):
        return self.replica_manager.stop_replicas(request)

    def handle_controlled_shutdown(self, request: m.ControlledShutdownRequest):
        controller = self.broker.controller
        if controller is None or not controller.is_active:
            raise errors.NotControllerError(
                f"broker {self.broker.broker_id} is not the controller "
                f"(the controller is {self.metadata.controller_id})")
        return controller.controlled_shutdown(request.broker_id, request.broker_epoch)

    # --- metadata -------------------------------------------------------------------------------
    def handle_metadata(self, request: m.MetadataRequest, listener_name: str | None = None,
                        authz: RequestAuthz = ALLOW_ALL):
        """Answer with the brokers' addresses on the listener this client connected to, so a
        client inside a private network and one outside both get addresses they can reach.
        Topics the client may not Describe are left out (all topics) or refused (named)."""
        asked, refused, visible = gates.gate_metadata(
            authz, request.topics, self.metadata.contains, request.allow_auto_topic_creation)
        if request.topics is None:
            names = [t for t in self.metadata.topics() if visible is None or visible(t)]
        else:
            names = asked
        topics = [m.MetadataTopic(errors.TopicAuthorizationFailedError.code, name, [])
                  for name in (request.topics or []) if name in refused]
        to_create = []
        for name in names:
            try:
                validate_topic_name(name)
            except KafkaError as exc:
                topics.append(m.MetadataTopic(code_of(exc), name, []))
                continue
            if self.metadata.contains(name):
                topics.append(self.metadata.topic_metadata(name))
            elif request.allow_auto_topic_creation and self.config.auto_create_topics_enable:
                to_create.append(name)
                topics.append(m.MetadataTopic(errors.LeaderNotAvailableError.code, name, []))
            else:
                topics.append(m.MetadataTopic(errors.UnknownTopicOrPartitionError.code, name, []))
        for name in to_create:
            self._auto_create(name)
        return m.MetadataResponse(brokers=self.metadata.broker_list(listener_name),
                                  cluster_id=self.broker.cluster_id,
                                  controller_id=self.metadata.controller_id, topics=topics)

    def _auto_create(self, name: str) -> None:
        live = sorted(self.metadata.brokers)
        if not live:
            return
        rf = min(self.config.default_replication_factor, len(live))
        try:
            assignment = assign_replicas(self.config.num_partitions, rf, live)
        except KafkaError as exc:
            log.warning("cannot auto-create topic %s: %s", name, exc)
            return
        log.info("auto-creating topic %s with %d partition(s), replication factor %d", name,
                 self.config.num_partitions, rf)
        d = self.broker.tzk.create_topic(name, assignment, {})
        d.addErrback(lambda f: f.trap(errors.TopicAlreadyExistsError) and None)
        d.addErrback(lambda f: log.warning("auto-create of %s failed: %s", name, f.value))

    def _wait_for_metadata(self, timeout_ms: int, predicate, on_done) -> defer.Deferred:
        operation = _DelayedMetadataCondition(timeout_ms, predicate, on_done)
        return self.metadata_waiters.try_complete_else_watch(operation, ["metadata"])

    # --- configs --------------------------------------------------------------------------------
    def handle_describe_configs(self, request: m.DescribeConfigsRequest,
                                authz: RequestAuthz = ALLOW_ALL):
        """Topic, broker and broker-logger configs with Kafka's sources and synonyms
        (server.config_admin); topic overrides are read from ``/config/topics/<t>``."""
        return native_admin_apis.describe_configs(self.broker, request, authz)

    def handle_alter_configs(self, request: m.AlterConfigsRequest,
                             authz: RequestAuthz = ALLOW_ALL):
        return native_admin_apis.alter_configs(self.broker, request, authz)

    def handle_incremental_alter_configs(self, request: m.IncrementalAlterConfigsRequest,
                                         authz: RequestAuthz = ALLOW_ALL):
        return native_admin_apis.incremental_alter_configs(self.broker, request, authz)

    def handle_delete_records(self, request: m.DeleteRecordsRequest,
                              authz: RequestAuthz = ALLOW_ALL):
        """Move log start offsets forward on the leaders (server.delete_records)."""
        return native_admin_apis.delete_records(self.broker, request, authz)

    # --- admin ----------------------------------------------------------------------------------
    def handle_create_topics(self, request: m.CreateTopicsRequest,
                             authz: RequestAuthz = ALLOW_ALL):
        """At the controller only, as Kafka 2.8 (kafkalite.server.topic_admin)."""
        d = topic_admin.create_topics(self.broker, request.topics, request.timeout_ms,
                                      request.validate_only, authz)
        return d.addCallback(lambda outcomes: m.CreateTopicsResponse(topics=[
            m.CreatableTopicResult(o.name, o.error_code, o.error_message) for o in outcomes]))

    @defer.inlineCallbacks
    def handle_delete_topics(self, request: m.DeleteTopicsRequest,
                             authz: RequestAuthz = ALLOW_ALL):
        results: dict[str, tuple[int, str | None]] = {}
        marked = []
        if not topic_admin.is_active_controller(self.broker):   # as Kafka 2.8: no forwarding
            return m.DeleteTopicsResponse(responses=[
                m.DeletableTopicResult(name, errors.NotControllerError.code, None)
                for name in request.topic_names])
        for name in request.topic_names:
            try:
                if not authz.may(ApiKey.DELETE_TOPICS, ResourceType.TOPIC, name):
                    raise errors.TopicAuthorizationFailedError(
                        f"{authz.principal} may not delete topic {name}")
                validate_topic_name(name)
                if not self.config.delete_topic_enable:
                    raise errors.TopicDeletionDisabledError(
                        "topic deletion is disabled: set delete.topic.enable=true on the brokers")
                if not self.metadata.contains(name):
                    raise errors.UnknownTopicOrPartitionError(f"topic '{name}' does not exist")
                yield self.broker.tzk.mark_topic_for_deletion(name)
                marked.append(name)
                results[name] = (0, None)
            except KafkaError as exc:
                results[name] = (code_of(exc), exc.message)
        if marked and request.timeout_ms > 0:
            def gone():
                return not any(self.metadata.contains(name) for name in marked)

            def done(timed_out):
                for name in marked:
                    if self.metadata.contains(name):
                        results[name] = (errors.RequestTimedOutError.code,
                                         f"topic {name} is marked for deletion; the controller "
                                         f"did not finish within {request.timeout_ms} ms")
            yield self._wait_for_metadata(request.timeout_ms, gone, done)
        return m.DeleteTopicsResponse(responses=[
            m.DeletableTopicResult(name, code, message)
            for name, (code, message) in results.items()])

    @defer.inlineCallbacks
    def handle_create_partitions(self, request: m.CreatePartitionsRequest,
                                 authz: RequestAuthz = ALLOW_ALL):
        """Add partitions to existing topics (kafkalite.server.partition_admin), all at once;
        at the controller only, as Kafka 2.8."""
        if not topic_admin.is_active_controller(self.broker):
            return m.CreatePartitionsResponse(results=[
                m.CreatePartitionsTopicResult(name, errors.NotControllerError.code, None)
                for name in dict.fromkeys(t.name for t in request.topics)])
        seen: dict[str, int] = {}
        for t in request.topics:
            seen[t.name] = seen.get(t.name, 0) + 1
        calls = {}
        for t in request.topics:
            calls[t.name] = (
                defer.succeed((errors.InvalidRequestError.code, "Duplicate topic in request."))
                if seen[t.name] > 1 else
                defer.succeed((errors.TopicAuthorizationFailedError.code,
                               "The topic authorization is failed."))
                if not authz.may(ApiKey.CREATE_PARTITIONS, ResourceType.TOPIC, t.name) else
                create_partitions(self.broker, t.name, t.count, t.assignments,
                                  request.validate_only, request.timeout_ms))
        results = yield defer.gatherResults(list(calls.values()))
        return m.CreatePartitionsResponse(results=[
            m.CreatePartitionsTopicResult(name, code, message)
            for name, (code, message) in zip(calls, results)])

    def handle_init_producer_id(self, request: m.InitProducerIdRequest,
                                authz: RequestAuthz = ALLOW_ALL):
        if not authz.may_write_idempotently():
            raise errors.ClusterAuthorizationFailedError(
                f"{authz.principal} may not write idempotently: needs IdempotentWrite on the "
                "cluster or Write on a topic")
        d = self.broker.allocate_producer_id()
        d.addCallback(lambda pid: m.InitProducerIdResponse(producer_id=pid, producer_epoch=0))
        return d
