"""The one table of the APIs a kafkalite broker serves.

Each row (``ApiSpec``) says, for one API key:

* its Kafka-protocol versions: Kafka 2.8's highest (what a 2.8 broker advertises), down to the
  lowest that kio, the schema library, ships (``protocol.kafka.versions.kio_range``); none for the
  broker-only APIs, which the controller sends over the native protocol;
* its native versions: those of the ``protocol.messages`` request class, which is also the
  protocol-neutral model every handler works on (the native protocol is that model in msgpack);
* its handler, ``handler(broker, ctx, request) -> response`` (or a Deferred of one), over that
  model, for both protocols;
* its Kafka converter (``protocol/kafka/convert/``): ``request(entity, version) -> model`` and
  ``response(model, version) -> dict`` for ``entities.build``;
* which listeners may carry it: CONTROL rows (the controller's requests) only the control-plane
  listener, or the inter-broker one when there is none;
* the ACL checks it makes: ``security.operations.API_CHECKS`` (one place for that fact).

Both ApiVersions answers are generated from here, so an API missing from the table is not
advertised and not served, and adding an API is one row (see docs/architecture.md, "Adding an
API").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka.convert import acls as acl_convert
from kafkalite.protocol.kafka.convert import admin as admin_convert
from kafkalite.protocol.kafka.convert import cluster as cluster_convert
from kafkalite.protocol.kafka.convert import configs as config_convert
from kafkalite.protocol.kafka.convert import data as data_convert
from kafkalite.protocol.kafka.convert import delegation_tokens as token_convert
from kafkalite.protocol.kafka.convert import features as feature_convert
from kafkalite.protocol.kafka.convert import groups as group_convert
from kafkalite.protocol.kafka.convert import log_dirs as log_dir_convert
from kafkalite.protocol.kafka.convert import metadata as metadata_convert
from kafkalite.protocol.kafka.convert import producers as producer_convert
from kafkalite.protocol.kafka.convert import quotas as quota_convert
from kafkalite.protocol.kafka.convert import reassignment as reassignment_convert
from kafkalite.protocol.kafka.convert import scram as scram_convert
from kafkalite.protocol.kafka.convert import transactions as txn_convert
from kafkalite.protocol.kafka.versions import kio_range
from kafkalite.security.operations import API_CHECKS, Check
from kafkalite.server import reassignment_apis
from kafkalite.server import delegation_token_apis
from kafkalite.server import feature_apis
from kafkalite.server import scram_apis
from kafkalite.server.feature_cache import SUPPORTED_FEATURES, UNKNOWN_EPOCH
from kafkalite.server import log_dir_apis
from kafkalite.server import producer_apis
from kafkalite.server import quota_apis
from kafkalite.server import txn_apis
from kafkalite.server import txn_marker_apis
from kafkalite.server import txn_offset_apis
from kafkalite.server import (acl_apis, cluster_apis, config_apis, controller_apis, data_apis,
                              group_apis, group_offset_apis, metadata_apis, offset_apis,
                              producer_id_apis, topic_apis)

__all__ = ["ApiSpec", "CLIENT", "CONTROL", "TABLE", "kafka_ranges", "native_ranges",
           "listener_may_carry"]

CLIENT, CONTROL = "client", "control"

Handler = Callable[[Any, Any, Any], Any]            # (broker, ctx, model request) -> response


@dataclass(frozen=True)
class ApiSpec:
    key: int
    kafka_max: int | None = None          # Kafka 2.8's highest version; None: native only
    handler: Handler | None = None
    kafka: Any = None                     # the Kafka converter module (request/response)
    listeners: str = CLIENT
    native: bool = True                   # served on the native protocol

    @property
    def name(self) -> str:
        return ApiKey.name_of(self.key)

    @property
    def model(self) -> type[m.Request]:
        return m.REQUESTS[self.key]

    @property
    def kafka_versions(self) -> tuple[int, int] | None:
        return None if self.kafka_max is None else kio_range(self.key, self.kafka_max)

    @property
    def native_versions(self) -> tuple[int, int] | None:
        if not self.native:
            return None
        return self.model.MIN_VERSION, self.model.MAX_VERSION

    @property
    def checks(self) -> tuple[Check, ...]:
        return API_CHECKS.get(self.key, ())

    @property
    def serves_kafka(self) -> bool:
        return self.kafka_versions is not None and (
            self.handler is not None and self.kafka is not None)

    @property
    def serves_native(self) -> bool:
        return self.native and self.handler is not None


#: api key -> ApiSpec (the rows are at the end of this module)
TABLE: dict[int, ApiSpec] = {}


def kafka_ranges(table: dict[int, ApiSpec] | None = None) -> dict[int, tuple[int, int]]:
    """``{api key: (min, max)}`` that the Kafka-protocol ApiVersions answer lists."""
    rows = (TABLE if table is None else table).values()
    return {spec.key: spec.kafka_versions for spec in sorted(rows, key=_key)
            if spec.serves_kafka}


def native_ranges(table: dict[int, ApiSpec] | None = None) -> dict[int, tuple[int, int]]:
    """``{api key: (min, max)}`` that the native ApiVersions answer lists."""
    rows = (TABLE if table is None else table).values()
    return {spec.key: spec.native_versions for spec in sorted(rows, key=_key)
            if spec.serves_native}


def listener_may_carry(spec: ApiSpec, listener: str | None, config) -> bool:
    """CONTROL rows only on the control-plane listener, or the inter-broker listener when the
    cluster has none (where Kafka's controller sends them)."""
    if spec.listeners != CONTROL or listener is None:
        return True
    return listener == config.controller_listener


def _key(spec: ApiSpec) -> int:
    return spec.key


# --- handlers that belong to the table itself ----------------------------------------------------

def handle_api_versions(broker, ctx, request: m.ApiVersionsRequest) -> m.ApiVersionsResponse:
    """Each protocol's ranges, from the table (Kafka's: what Kafka 2.8 advertises), and the
    features (KIP-584): the supported ones (none in Kafka 2.8) and the finalized ones of the
    broker's ``feature_cache`` (a broker without one, in tests, knows none)."""
    ranges = native_ranges() if ctx.protocol == "native" else kafka_ranges()
    features = getattr(broker, "feature_cache", None)
    return m.ApiVersionsResponse(
        api_versions=[m.ApiVersionRange(key, low, high) for key, (low, high) in ranges.items()],
        supported_features=[m.SupportedFeature(name, low, high)
                            for name, (low, high) in sorted(SUPPORTED_FEATURES.items())],
        finalized_features_epoch=UNKNOWN_EPOCH if features is None else features.epoch,
        finalized_features=[] if features is None else [
            m.FinalizedFeature(name, low, high)
            for name, (low, high) in sorted(features.features.items())])


# Each family's rows are one block: its handlers' module and its Kafka converters' module.

def _cluster_rows():
    return [
        ApiSpec(ApiKey.API_VERSIONS, 3, handle_api_versions, cluster_convert.API_VERSIONS),
        ApiSpec(ApiKey.SASL_HANDSHAKE, 1, cluster_apis.handle_sasl_handshake, cluster_convert.SASL_HANDSHAKE),
        ApiSpec(ApiKey.SASL_AUTHENTICATE, 2, cluster_apis.handle_sasl_authenticate,
                cluster_convert.SASL_AUTHENTICATE),
        ApiSpec(ApiKey.DESCRIBE_CLUSTER, 0, cluster_apis.handle_describe_cluster,
                cluster_convert.DESCRIBE_CLUSTER),
    ]


def _data_rows():
    return [
        ApiSpec(ApiKey.PRODUCE, 9, data_apis.handle_produce, data_convert.PRODUCE),
        ApiSpec(ApiKey.FETCH, 12, data_apis.handle_fetch, data_convert.FETCH),
    ]


def _metadata_rows():
    return [
        ApiSpec(ApiKey.METADATA, 11, metadata_apis.handle_metadata, metadata_convert.METADATA),
        ApiSpec(ApiKey.LIST_OFFSETS, 6, offset_apis.handle_list_offsets, metadata_convert.LIST_OFFSETS),
        ApiSpec(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, offset_apis.handle_offset_for_leader_epoch,
                metadata_convert.OFFSET_FOR_LEADER_EPOCH),
        ApiSpec(ApiKey.INIT_PRODUCER_ID, 4, producer_id_apis.handle_init_producer_id,
                metadata_convert.INIT_PRODUCER_ID),
    ]


def _controller_rows():
    # the controller's requests (brokers only), and controlled shutdown (to the controller)
    return [
        ApiSpec(ApiKey.LEADER_AND_ISR, None, controller_apis.handle_leader_and_isr, listeners=CONTROL),
        ApiSpec(ApiKey.UPDATE_METADATA, None, controller_apis.handle_update_metadata, listeners=CONTROL),
        ApiSpec(ApiKey.STOP_REPLICA, None, controller_apis.handle_stop_replica, listeners=CONTROL),
        ApiSpec(ApiKey.CONTROLLED_SHUTDOWN, None, controller_apis.handle_controlled_shutdown),
    ]


def _admin_rows():
    return [
        ApiSpec(ApiKey.CREATE_TOPICS, 7, topic_apis.handle_create_topics, admin_convert.CREATE_TOPICS),
        ApiSpec(ApiKey.DELETE_TOPICS, 6, topic_apis.handle_delete_topics, admin_convert.DELETE_TOPICS),
        ApiSpec(ApiKey.CREATE_PARTITIONS, 3, topic_apis.handle_create_partitions,
                admin_convert.CREATE_PARTITIONS),
        ApiSpec(ApiKey.DELETE_RECORDS, 2, topic_apis.handle_delete_records,
                admin_convert.DELETE_RECORDS),
        ApiSpec(ApiKey.DESCRIBE_CONFIGS, 4, config_apis.handle_describe_configs,
                config_convert.DESCRIBE_CONFIGS),
        ApiSpec(ApiKey.ALTER_CONFIGS, 2, config_apis.handle_alter_configs,
                config_convert.ALTER_CONFIGS),
        ApiSpec(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, config_apis.handle_incremental_alter_configs,
                config_convert.INCREMENTAL_ALTER_CONFIGS),
    ]


def _group_rows():
    return [
        ApiSpec(ApiKey.FIND_COORDINATOR, 3, group_apis.handle_find_coordinator,
                group_convert.FIND_COORDINATOR),
        ApiSpec(ApiKey.JOIN_GROUP, 7, group_apis.handle_join_group, group_convert.JOIN_GROUP),
        ApiSpec(ApiKey.HEARTBEAT, 4, group_apis.handle_heartbeat, group_convert.HEARTBEAT),
        ApiSpec(ApiKey.LEAVE_GROUP, 4, group_apis.handle_leave_group, group_convert.LEAVE_GROUP),
        ApiSpec(ApiKey.SYNC_GROUP, 5, group_apis.handle_sync_group, group_convert.SYNC_GROUP),
        ApiSpec(ApiKey.DESCRIBE_GROUPS, 5, group_apis.handle_describe_groups, group_convert.DESCRIBE_GROUPS),
        ApiSpec(ApiKey.LIST_GROUPS, 4, group_apis.handle_list_groups, group_convert.LIST_GROUPS),
        ApiSpec(ApiKey.OFFSET_COMMIT, 8, group_offset_apis.handle_offset_commit, group_convert.OFFSET_COMMIT),
        ApiSpec(ApiKey.OFFSET_FETCH, 7, group_offset_apis.handle_offset_fetch, group_convert.OFFSET_FETCH),
        ApiSpec(ApiKey.DELETE_GROUPS, 2, group_apis.handle_delete_groups, group_convert.DELETE_GROUPS),
        ApiSpec(ApiKey.OFFSET_DELETE, 0, group_offset_apis.handle_offset_delete, group_convert.OFFSET_DELETE),
    ]


def _acl_rows():
    return [
        ApiSpec(ApiKey.DESCRIBE_ACLS, 2, acl_apis.handle_describe_acls, acl_convert.DESCRIBE_ACLS),
        ApiSpec(ApiKey.CREATE_ACLS, 2, acl_apis.handle_create_acls, acl_convert.CREATE_ACLS),
        ApiSpec(ApiKey.DELETE_ACLS, 2, acl_apis.handle_delete_acls, acl_convert.DELETE_ACLS),
    ]


def _log_dir_rows():
    return [
        ApiSpec(ApiKey.DESCRIBE_LOG_DIRS, 2, log_dir_apis.handle_describe_log_dirs,
                log_dir_convert.DESCRIBE_LOG_DIRS),
        ApiSpec(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, log_dir_apis.handle_alter_replica_log_dirs,
                log_dir_convert.ALTER_REPLICA_LOG_DIRS),
    ]


def _scram_and_feature_rows():
    # KIP-554's SCRAM credentials and KIP-584's finalized features through the brokers
    return [
        ApiSpec(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                scram_apis.handle_describe_user_scram_credentials,
                scram_convert.DESCRIBE_USER_SCRAM_CREDENTIALS),
        ApiSpec(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0,
                scram_apis.handle_alter_user_scram_credentials,
                scram_convert.ALTER_USER_SCRAM_CREDENTIALS),
        ApiSpec(ApiKey.UPDATE_FEATURES, 0, feature_apis.handle_update_features,
                feature_convert.UPDATE_FEATURES),
    ]


def _quota_rows():
    # KIP-546's client quotas (users, client ids, both; KIP-612's IPs) through the brokers
    return [
        ApiSpec(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, quota_apis.handle_describe_client_quotas,
                quota_convert.DESCRIBE_CLIENT_QUOTAS),
        ApiSpec(ApiKey.ALTER_CLIENT_QUOTAS, 1, quota_apis.handle_alter_client_quotas,
                quota_convert.ALTER_CLIENT_QUOTAS),
    ]


def _delegation_token_rows():
    return [
        ApiSpec(ApiKey.CREATE_DELEGATION_TOKEN, 2,
                delegation_token_apis.handle_create_delegation_token,
                token_convert.CREATE_DELEGATION_TOKEN),
        ApiSpec(ApiKey.RENEW_DELEGATION_TOKEN, 2,
                delegation_token_apis.handle_renew_delegation_token,
                token_convert.RENEW_DELEGATION_TOKEN),
        ApiSpec(ApiKey.EXPIRE_DELEGATION_TOKEN, 2,
                delegation_token_apis.handle_expire_delegation_token,
                token_convert.EXPIRE_DELEGATION_TOKEN),
        ApiSpec(ApiKey.DESCRIBE_DELEGATION_TOKEN, 2,
                delegation_token_apis.handle_describe_delegation_token,
                token_convert.DESCRIBE_DELEGATION_TOKEN),
    ]


def _reassignment_rows():
    # the controller's work, asked through the brokers (KIP-455, KIP-460)
    return [
        ApiSpec(ApiKey.ELECT_LEADERS, 2, reassignment_apis.handle_elect_leaders,
                reassignment_convert.ELECT_LEADERS),
        ApiSpec(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0,
                reassignment_apis.handle_alter_partition_reassignments,
                reassignment_convert.ALTER_PARTITION_REASSIGNMENTS),
        ApiSpec(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0,
                reassignment_apis.handle_list_partition_reassignments,
                reassignment_convert.LIST_PARTITION_REASSIGNMENTS),
    ]


def _txn_rows():
    # transactions (KIP-98, KIP-447): the coordinator's APIs, its markers to partition leaders
    return [
        ApiSpec(ApiKey.ADD_PARTITIONS_TO_TXN, 3, txn_apis.handle_add_partitions_to_txn,
                txn_convert.ADD_PARTITIONS_TO_TXN),
        ApiSpec(ApiKey.ADD_OFFSETS_TO_TXN, 3, txn_apis.handle_add_offsets_to_txn,
                txn_convert.ADD_OFFSETS_TO_TXN),
        ApiSpec(ApiKey.END_TXN, 3, txn_apis.handle_end_txn, txn_convert.END_TXN),
        ApiSpec(ApiKey.WRITE_TXN_MARKERS, 1, txn_marker_apis.handle_write_txn_markers,
                txn_convert.WRITE_TXN_MARKERS),
        ApiSpec(ApiKey.TXN_OFFSET_COMMIT, 3, txn_offset_apis.handle_txn_offset_commit,
                txn_convert.TXN_OFFSET_COMMIT),
    ]


def _producer_rows():
    # KIP-664: a partition's active producers, as its replica on this broker knows them
    return [
        ApiSpec(ApiKey.DESCRIBE_PRODUCERS, 0, producer_apis.handle_describe_producers,
                producer_convert.DESCRIBE_PRODUCERS),
    ]


def _rows():
    return (_cluster_rows() + _data_rows() + _metadata_rows() + _controller_rows()
            + _admin_rows() + _group_rows() + _acl_rows() + _reassignment_rows() + _log_dir_rows()
            + _scram_and_feature_rows()
            + _delegation_token_rows() + _quota_rows() + _txn_rows() + _producer_rows())


TABLE.update((spec.key, spec) for spec in _rows())
