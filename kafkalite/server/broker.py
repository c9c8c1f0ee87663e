"""BrokerService: one kafkalite broker, started in Kafka's order.

    ZooKeeper session -> logs (recovery) -> replica manager -> listener bound ->
    /brokers/ids/<id> registered (ephemeral) -> controller election -> serving

Shutdown (SIGTERM) runs the other way: a controlled shutdown first moves leadership away, then the
listener closes, the controller resigns, the ZooKeeper session closes (the ephemeral registration
goes with it) and the logs are flushed, checkpointed and marked clean.

After a ZooKeeper session expiry the broker registers again and stands for controller again; the
controller side steps down as soon as the session is lost.
"""

from __future__ import annotations

import logging
import time
from functools import partial

from twisted.application import service
from twisted.internet import defer, task

import zk_schema
from zk_schema.brokers import BrokerRegistration, format_endpoint

from kafkalite import errors
from kafkalite.config import BrokerConfig
from kafkalite.controller.channel_manager import ControllerChannelManager
from kafkalite.controller.controller import Controller
from kafkalite.coordinator.coordinator import GroupCoordinator
from kafkalite.coordinator.log_store import OffsetsLogStore
from kafkalite.coordinator.types import OFFSETS_TOPIC
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from kafkalite.protocol.channel import BrokerChannel
from kafkalite.server.broker_security import BrokerSecurity
from kafkalite.server.controller_requests import ControllerRequestGate, read_controller_identity
from kafkalite.server.dynamic_config import BrokerDynamicConfig
from kafkalite.server.feature_cache import FinalizedFeatureCache
from kafkalite.server.isr_writer import IsrWriter
from kafkalite.server.metadata_waits import MetadataWaits
from kafkalite.server.log_dir_failure import LogDirFailureHandler
from kafkalite.server.metadata_cache import MetadataCache
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.network import BrokerFactory
from kafkalite.server.quota_manager import ClientQuotas, read_quota_configs
from kafkalite.server.read_replica import replica_selector
from kafkalite.server.replica_fetcher import ReplicaFetcherManager
from kafkalite.server.replica_manager import ReplicaManager
from kafkalite.server.request_watch import CHECK_INTERVAL_S as REQUEST_WATCH_INTERVAL_S
from kafkalite.server.request_watch import RequestWatch
from kafkalite.txn.coordinator import TransactionCoordinator
from kafkalite.txn.state_store import TRANSACTION_STATE_TOPIC
from kafkalite.zk import ZkClient, ZkState
from kafkalite.zk.znode_acls import secure_persistent_paths, secure_zk_client
from kafkalite.zk.errors import ZkNodeExistsError
from kafkalite.zk.quotas import QuotaZkStore
from kafkalite.zk.twisted_bridge import TwistedZk


log = logging.getLogger(__name__)

ISR_NOTIFICATION_INTERVAL_S = 2.5  # Kafka batches ISR change notifications this often


class BrokerService(service.MultiService):
    def __init__(self, config: BrokerConfig, reactor=None):
        super().__init__()
        if reactor is None:
            from twisted.internet import reactor as global_reactor  # only at the top level
            reactor = global_reactor
        self.config = config                    # the effective config (dynamic ones applied)
        self.dynamic_config = BrokerDynamicConfig(self, config)   # KIP-226 levels
        self.quotas = ClientQuotas.from_config(config)    # client quotas, enforced
        self._quota_reloads = defer.DeferredLock()        # applied in the order read
        self.reactor = reactor
        self.broker_id = config.broker_id
        self.cluster_id: str | None = None
        self.broker_epoch = -1
        self.port: int | None = None
        self.zk: ZkClient | None = None
        self.deferred_zk: TwistedZk | None = None
        self.topic_defaults = config.topic_defaults()
        self.log_manager = LogManager.from_broker_config(config, reactor, self.clock_ms)
        self.metadata_cache = MetadataCache(self.broker_id)
        self.replica_manager = ReplicaManager(
            self.broker_id, self.log_manager, reactor, self.clock_ms,
            topic_config=self.log_manager.config_for,
            replica_lag_time_max_ms=config.replica_lag_time_max_ms,
            isr_change_callback=self._write_isr_change,
            become_follower_callback=self._become_follower,
            stop_follower_callback=self._stop_following,
            leadership_callback=self._on_leadership_change,
            partition_known=self.metadata_cache.contains_partition,
            producer_id_expiration_ms=config.transactional_id_expiration_ms,
            replica_selector=replica_selector(config.replica_selector_class),
            rack_of=self._rack_of,
            broker_alive=lambda broker_id: broker_id in self.metadata_cache.brokers)
        # the 0.9+ group coordinator, __consumer_offsets (docs/architecture.md, 9. Consumer groups)
        self.offsets_store = OffsetsLogStore(self)
        self.group_coordinator = GroupCoordinator(self.broker_id, reactor, self.offsets_store,
                                                  config)
        # the transaction coordinator, __transaction_state (KIP-98)
        self.txn_coordinator = TransactionCoordinator(self)
        # listeners' TLS/SASL, SCRAM credentials, the authorizer, inter-broker security; a
        # broken security config fails here, before anything starts
        self.security = BrokerSecurity(config)
        self.fetchers = ReplicaFetcherManager(self)
        self.controller_requests = ControllerRequestGate(
            lambda: read_controller_identity(self.deferred_zk), lambda: self.broker_epoch,
            self._registered_broker_epoch)
        # admin answers that wait for UpdateMetadata (CreateTopics, DeleteTopics, ...)
        self.metadata_waits = MetadataWaits(reactor)
        # the cluster's finalized features, from /feature (KIP-584: ApiVersions, UpdateFeatures)
        self.feature_cache = FinalizedFeatureCache()
        self.dispatcher = ApiDispatcher(self)
        self.controller: Controller | None = None
        self.log_dir_failure_handler: LogDirFailureHandler | None = None   # once logs loaded
        self._listening_ports: dict = {}
        self._loops: list[task.LoopingCall] = []
        self._pending_isr_notifications: set = set()
        self.isr_writer = IsrWriter(reactor, lambda: self.deferred_zk, self._leads,
                                    self._isr_written)
        self._registered = False
        self._session_lost = False
        self._stopping = False
        self.ready: defer.Deferred = defer.Deferred()
        self._producer_ids: list[int] = []
        self._configured_topics: set[str] = set()

    def clock_ms(self) -> int:
        return int(self.reactor.seconds() * 1000)

    # --- startup --------------------------------------------------------------------------------
    def startService(self):
        super().startService()
        d = defer.ensureDeferred(self._startup())
        d.addCallbacks(lambda _: self.ready.callback(self), self._startup_failed)
        return d

    def _startup_failed(self, failure):
        log.error("broker %d failed to start: %s", self.broker_id, failure.getErrorMessage())
        if not self.ready.called:
            self.ready.errback(failure)

    async def _startup(self):
        config = self.config
        log.info("broker %d starting: zookeeper.connect=%s, log.dirs=%s", self.broker_id,
                 config.zookeeper_connect, ",".join(config.data_dirs))
        for level, note in config.startup_notes():   # Kafka names without effect, unknown names
            log.log(level, "broker %d: %s", self.broker_id, note)
        self.zk = secure_zk_client(config.zookeeper_connect, config.zookeeper_session_timeout_ms,
                                   reactor=self.reactor,
                                   connection_timeout_s=config.zk_connection_timeout_ms / 1000.0,
                                   digest=config.zookeeper_auth_digest,
                                   set_acl=config.zookeeper_set_acl)
        self.deferred_zk = TwistedZk(self.zk, self.reactor)
        await self.deferred_zk.run(self.zk.start)
        self.zk.add_state_listener(self._on_zk_state)
        await self.deferred_zk.ensure_persistent_paths()
        await self.deferred_zk.run(secure_persistent_paths, self.zk, config.zookeeper_set_acl)
        self.cluster_id = await self.deferred_zk.get_or_create_cluster_id()
        await self.security.start(self.zk, self.deferred_zk)
        self.feature_cache.start(self.zk)     # before serving: ApiVersions reports it
        # dynamic broker configs (/config/brokers/<default>, /config/brokers/<id>) before the
        # logs load, so that their topic defaults apply from the start (Kafka's order)
        try:
            await self.dynamic_config.reload()
        except Exception as exc:  # noqa: BLE001 - a broken znode must not stop the broker
            log.error("broker %d: dynamic broker configs not applied: %s", self.broker_id, exc)
        await self._reload_quotas()
        # logs: recovery happens here, before anything is served
        self.log_manager.startService()
        self.replica_manager.start()
        self.log_dir_failure_handler = LogDirFailureHandler.for_broker(self)
        self.log_dir_failure_handler.start()
        if self.group_coordinator is not None:
            self.group_coordinator.start()
        if self.txn_coordinator is not None:
            self.txn_coordinator.start()
        self._bind_listeners()
        await self._register()
        self.controller = Controller(
            self.broker_id, self.zk, self.deferred_zk, self.reactor, self.config,
            channel_manager_factory=partial(ControllerChannelManager,
                                            connect=self.security.controller_connect))
        self.controller.start()
        # Kafka's controller runs the delegation token expiry check
        self.security.tokens.is_controller = lambda: (self.controller is not None
                                                      and self.controller.is_active)
        self._loop(self._checkpoint_high_watermarks,
                   config.replica_high_watermark_checkpoint_interval_ms / 1000.0)
        self._loop(self._flush_isr_notifications, ISR_NOTIFICATION_INTERVAL_S)
        self._loop(RequestWatch(self.dispatcher).check, REQUEST_WATCH_INTERVAL_S)
        self.zk.watch_children(zk_schema.CONFIG_CHANGES_PATH, self._on_config_change)
        log.info("broker %d started: listening on port %d, cluster id %s", self.broker_id,
                 self.port, self.cluster_id)

    def _bind_listeners(self) -> None:
        """Bind every listener (e.g. INTERNAL for the compose network, EXTERNAL for the host)."""
        for listener in self.config.listener_list:
            factory = BrokerFactory(self.dispatcher, self.config.socket_request_max_bytes,
                                    listener.name,
                                    listener_security=self.security.listeners[listener.name],
                                    scram_lookup=self.security.scram_lookup,
                                    token_lookup=self.security.token_lookup,
                                    clock=self.reactor)
            port = self.security.listen(self.reactor, listener, factory)
            self._listening_ports[listener.name] = port
        inter = self.config.inter_broker_listener
        self.port = self._listening_ports[inter].getHost().port

    def registration(self) -> BrokerRegistration:
        """Every advertised listener as an endpoint; host/port are the inter-broker one's.
        An advertised port 0 (or a listener bound to port 0) means the port actually bound."""
        advertised = self.config.advertised_listener_list
        endpoints = []
        addresses = {}
        for item in advertised:
            host = item.host or "127.0.0.1"
            port = item.port or self._listening_ports[item.name].getHost().port
            endpoints.append(format_endpoint(item.name, host, port))
            addresses[item.name] = (host, port)
        inter = addresses.get(self.config.inter_broker_listener) or next(iter(addresses.values()))
        return BrokerRegistration(
            broker_id=self.broker_id, host=inter[0],
            port=inter[1], endpoints=tuple(endpoints), rack=self.config.broker_rack,
            timestamp_ms=int(time.time() * 1000),
            listener_security_protocol_map={item.name: self.security.protocol_map[item.name]
                                            for item in advertised})

    async def _register(self):
        """Create /brokers/ids/<id>; wait while a previous session's node is still there."""
        deadline = self.reactor.seconds() + (self.config.zookeeper_session_timeout_ms / 1000.0
                                             + 10.0)
        warned = False
        while True:
            try:
                self.broker_epoch = await self.deferred_zk.register_broker(self.registration())
                self._registered = True
                log.info("broker %d registered at /brokers/ids/%d (broker epoch %d)",
                         self.broker_id, self.broker_id, self.broker_epoch)
                return
            except ZkNodeExistsError:
                if self.reactor.seconds() > deadline:
                    raise errors.ConfigError(
                        f"broker.id {self.broker_id} is registered by another live broker "
                        f"(/brokers/ids/{self.broker_id}); give this broker another broker.id")
                if not warned:
                    log.warning("/brokers/ids/%d exists (a previous session of this broker?); "
                                "waiting for it to expire", self.broker_id)
                    warned = True
                await task.deferLater(self.reactor, 0.25, lambda: None)

    def _loop(self, fn, interval_s: float) -> None:
        loop = task.LoopingCall(fn)
        loop.clock = self.reactor
        loop.start(interval_s, now=False).addErrback(
            lambda f: log.error("periodic task %s failed: %s", fn.__name__, f.getErrorMessage()))
        self._loops.append(loop)

    # --- ZooKeeper session ----------------------------------------------------------------------
    def _on_zk_state(self, state: ZkState) -> None:
        if self._stopping:
            return
        if state == ZkState.LOST:
            log.warning("broker %d: ZooKeeper session expired", self.broker_id)
            self._session_lost = True
            self._registered = False
            if self.controller is not None:
                self.controller.session_lost()
        elif state == ZkState.CONNECTED and self._session_lost:
            self._session_lost = False
            log.info("broker %d: new ZooKeeper session; registering again", self.broker_id)
            d = defer.ensureDeferred(self._register())
            d.addCallback(lambda _: self.controller and self.controller.session_reestablished())
            d.addErrback(lambda f: log.error("re-registration failed: %s", f.getErrorMessage()))

    # --- controller requests --------------------------------------------------------------------
    def _registered_broker_epoch(self) -> defer.Deferred:
        d = self.deferred_zk.get_broker(self.broker_id)
        return d.addCallback(lambda registration: registration and registration.broker_epoch)

    def apply_leader_and_isr(self, request: m.LeaderAndIsrRequest):
        topics = {s.topic for s in request.partition_states}
        unknown = [t for t in topics if t not in self._configured_topics]
        if not unknown:
            return self._become_leader_or_follower(request)
        d = defer.gatherResults([self._load_topic_config(t) for t in unknown],
                                consumeErrors=True)
        d.addCallback(lambda _: self._become_leader_or_follower(request))
        return d

    def _become_leader_or_follower(self, request: m.LeaderAndIsrRequest):
        # the data dirs of the logs this creates fsynced once for the request, not per log
        with self.log_manager.dir_syncs_batched():
            return self.replica_manager.become_leader_or_follower(request)

    @defer.inlineCallbacks
    def _load_topic_config(self, topic: str):
        overrides = yield self.deferred_zk.get_topic_config(topic)
        try:
            config = self.topic_defaults.with_overrides(overrides)
        except errors.ConfigError as exc:
            log.error("topic %s has a bad config override (%s); using the defaults", topic, exc)
            config = self.topic_defaults
        self.log_manager.update_config(topic, config)
        self._configured_topics.add(topic)

    def _on_config_change(self, children) -> None:
        """A /config/changes notification: this broker's dynamic configs first (they decide
        the topic defaults), then every hosted topic's config."""
        d = self.dynamic_config.reload()
        d.addErrback(lambda f: log.warning("dynamic broker config reload failed: %s",
                                           f.getErrorMessage()))
        d.addCallback(lambda _: self._reload_topic_configs())
        self._reload_quotas()

    def _reload_quotas(self) -> defer.Deferred:
        """Every client quota from ZooKeeper into the quota managers (Kafka's ConfigHandlers
        for users and clients; the whole set, as notifications may be missed)."""
        d = self._quota_reloads.run(self.deferred_zk.run, read_quota_configs,
                                    QuotaZkStore(self.zk))
        d.addCallback(self.quotas.update)
        d.addErrback(lambda f: log.warning("broker %d: client quotas not reloaded: %s",
                                           self.broker_id, f.getErrorMessage()))
        return d

    def _reload_topic_configs(self) -> None:
        for topic in {tp[0] for tp in self.replica_manager.partitions}:
            self._load_topic_config(topic).addErrback(
                lambda f: log.warning("config reload failed: %s", f.getErrorMessage()))

    # --- replication hooks ------------------------------------------------------------------------
    def _become_follower(self, partitions, live_leaders) -> None:
        self.fetchers.add_partitions(partitions, live_leaders)

    def _stop_following(self, tps) -> None:
        self.fetchers.remove_partitions(tps)

    def _on_leadership_change(self, tp, is_leader: bool, leader_epoch: int) -> None:
        """Kafka's onLeadershipChange: the group coordinator loads the groups of each
        __consumer_offsets partition this broker now leads and drops those it no longer does;
        the transaction coordinator does the same with __transaction_state."""
        if tp[0] == TRANSACTION_STATE_TOPIC and self.txn_coordinator is not None:
            if is_leader:
                self.txn_coordinator.on_elected(tp[1], leader_epoch)
            else:
                self.txn_coordinator.on_resigned(tp[1], leader_epoch)
            return
        if tp[0] != OFFSETS_TOPIC or self.group_coordinator is None:
            return
        if is_leader:
            self.group_coordinator.on_elected(tp[1], leader_epoch)
        else:
            self.group_coordinator.on_resigned(tp[1], leader_epoch)

    def _rack_of(self, broker_id: int) -> str | None:
        """A live broker's broker.rack, as the metadata cache has it (KIP-392's selector)."""
        found = self.metadata_cache.brokers.get(broker_id)
        return found.rack if found is not None else None

    def _write_isr_change(self, partition, new_isr) -> None:
        """The leader changes the ISR: a conditional write of the partition's state znode
        (batched, one at a time per partition: see ``isr_writer``)."""
        self.isr_writer.request(partition, new_isr)

    def _leads(self, partition) -> bool:
        return self.replica_manager.partitions.get(partition.tp) is partition and \
            partition.is_leader

    def _isr_written(self, partition, new_isr, zk_version) -> None:
        self.replica_manager.isr_changed(partition, list(new_isr), zk_version)
        self._pending_isr_notifications.add(partition.tp)

    def _flush_isr_notifications(self):
        if not self._pending_isr_notifications or self.deferred_zk is None:
            return
        tps, self._pending_isr_notifications = sorted(self._pending_isr_notifications), set()
        return self.deferred_zk.create_isr_change_notification(tps).addErrback(
            lambda f: log.warning("ISR change notification failed: %s", f.getErrorMessage()))

    def _checkpoint_high_watermarks(self) -> defer.Deferred | None:
        """The periodic write, off the reactor thread (LogManager's checkpoint writer)."""
        return self.log_manager.write_high_watermarks_in_background(
            self.replica_manager.high_watermarks())

    def allocate_producer_id(self) -> defer.Deferred:
        if self._producer_ids:
            return defer.succeed(self._producer_ids.pop(0))

        def claimed(block):
            self._producer_ids = list(range(block.block_start, block.block_end + 1))
            return self._producer_ids.pop(0)
        return self.deferred_zk.claim_producer_id_block(self.broker_id).addCallback(claimed)

    # --- shutdown -------------------------------------------------------------------------------
    def stopService(self):
        return defer.ensureDeferred(self._shutdown())

    async def _shutdown(self):
        if self._stopping:
            return
        self._stopping = True
        log.info("broker %d shutting down", self.broker_id)
        if self.config.controlled_shutdown_enable and self._registered:
            try:
                await self._controlled_shutdown()
            except Exception as exc:  # noqa: BLE001 - an unclean stop is still a stop
                log.warning("controlled shutdown failed: %s; stopping anyway", exc)
        for loop in self._loops:
            if loop.running:
                loop.stop()
        for port in self._listening_ports.values():
            await port.stopListening()
        self.security.stop()
        self.feature_cache.stop()
        for connection in list(self.dispatcher.connections):
            connection.transport.abortConnection()
        self.fetchers.shutdown()
        if self.txn_coordinator is not None:
            self.txn_coordinator.stop()
        if self.group_coordinator is not None:
            await defer.maybeDeferred(self.group_coordinator.stop)
        if self.log_dir_failure_handler is not None:
            self.log_dir_failure_handler.stop()
        self.replica_manager.stop()
        if self.controller is not None:
            await self.controller.stop()
        # the periodic writes' thread first, so the last write is this one
        self.log_manager.checkpoint_writer.stop()
        try:
            self.log_manager.write_high_watermarks(self.replica_manager.high_watermarks())
        except errors.KafkaError as exc:
            log.warning("high watermark checkpoint at shutdown failed: %s", exc)
        if self.zk is not None:
            await self.deferred_zk.run(self.zk.stop)
        await defer.maybeDeferred(self.log_manager.stopService)
        await super().stopService()
        log.info("broker %d stopped cleanly", self.broker_id)

    async def _controlled_shutdown(self):
        """Ask the controller to move leadership away (Kafka's controlled shutdown)."""
        led = [tp for tp, p in self.replica_manager.partitions.items()
               if p.is_leader and len(p.replicas) > 1]
        if not led:
            return
        for attempt in range(self.config.controlled_shutdown_max_retries + 1):
            controller_id = self.metadata_cache.controller_id
            try:
                if self.controller is not None and self.controller.is_active:
                    response = await self.controller.controlled_shutdown(self.broker_id,
                                                                         self.broker_epoch)
                else:
                    endpoint = self.metadata_cache.brokers.get(controller_id)
                    if endpoint is None:
                        raise errors.NotControllerError("controller unknown")
                    channel = BrokerChannel(self.reactor, endpoint.host, endpoint.port,
                                            client_id=f"broker-{self.broker_id}",
                                            request_timeout_s=10.0,
                                            connect=self.security.inter_broker_connect)
                    try:
                        response = await channel.request(m.ControlledShutdownRequest(
                            broker_id=self.broker_id, broker_epoch=self.broker_epoch))
                    finally:
                        channel.close()
                if response.error_code:
                    raise errors.for_code(response.error_code, response.error_message)
                if not response.remaining_partitions:
                    log.info("controlled shutdown: leadership moved away")
                    return
                log.info("controlled shutdown: %d partition(s) still led here",
                         len(response.remaining_partitions))
            except errors.KafkaError as exc:
                log.info("controlled shutdown attempt %d failed: %s", attempt + 1, exc)
            await task.deferLater(self.reactor,
                                  self.config.controlled_shutdown_retry_backoff_ms / 1000.0,
                                  lambda: None)
