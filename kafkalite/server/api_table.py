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

Some rows still carry ``legacy_*`` adapters: handlers from before the table, which take the raw
request of each protocol. They go, family by family, as each moves onto the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka.versions import kio_range
from kafkalite.security.operations import API_CHECKS, Check

__all__ = ["ApiSpec", "CLIENT", "CONTROL", "TABLE", "spec_for", "kafka_ranges", "native_ranges",
           "kafka_version_range", "listener_may_carry"]

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
    # before the table (see the module docstring)
    legacy_native: Handler | None = None   # (broker, ctx, native request) -> native response
    legacy_kafka: Handler | None = None    # (broker, ctx, kio entity) -> dict

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
            (self.handler is not None and self.kafka is not None) or self.legacy_kafka is not None)

    @property
    def serves_native(self) -> bool:
        return self.native and (self.handler is not None or self.legacy_native is not None)


#: api key -> ApiSpec (the rows are at the end of this module)
TABLE: dict[int, ApiSpec] = {}


def spec_for(api_key: int) -> ApiSpec | None:
    return TABLE.get(api_key)


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


def kafka_version_range(api_key: int) -> tuple[int, int] | None:
    spec = TABLE.get(api_key)
    return spec.kafka_versions if spec is not None and spec.serves_kafka else None


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
    """Each protocol's ranges, from the table (Kafka's: what Kafka 2.8 advertises)."""
    ranges = native_ranges() if ctx.protocol == "native" else kafka_ranges()
    return m.ApiVersionsResponse(api_versions=[m.ApiVersionRange(key, low, high)
                                               for key, (low, high) in ranges.items()])


def _legacy_native(broker, ctx, request):
    return broker.apis.handle(ctx, request, ctx.connection)


def _legacy_kafka(broker, ctx, entity):
    return broker.kafka_apis.handle(ctx.api_key, ctx.api_version, entity, ctx.connection)


def _legacy(key, kafka_max=None, listeners=CLIENT) -> ApiSpec:
    return ApiSpec(key, kafka_max, listeners=listeners, legacy_native=_legacy_native,
                   legacy_kafka=_legacy_kafka if kafka_max is not None else None)


# Each family's rows are one block: its handlers' module and its Kafka converters' module.

def _cluster_rows():
    from kafkalite.protocol.kafka.convert import cluster as convert
    from kafkalite.server import cluster_apis as apis
    return [
        ApiSpec(ApiKey.API_VERSIONS, 3, handle_api_versions, convert.API_VERSIONS),
        ApiSpec(ApiKey.SASL_HANDSHAKE, 1, apis.handle_sasl_handshake, convert.SASL_HANDSHAKE),
        ApiSpec(ApiKey.SASL_AUTHENTICATE, 2, apis.handle_sasl_authenticate,
                convert.SASL_AUTHENTICATE),
        ApiSpec(ApiKey.DESCRIBE_CLUSTER, 0, apis.handle_describe_cluster,
                convert.DESCRIBE_CLUSTER),
    ]


def _data_rows():
    return [
        _legacy(ApiKey.PRODUCE, 9),
        _legacy(ApiKey.FETCH, 12),
    ]


def _metadata_rows():
    return [
        _legacy(ApiKey.METADATA, 11),
        _legacy(ApiKey.LIST_OFFSETS, 6),
        _legacy(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4),
        _legacy(ApiKey.INIT_PRODUCER_ID, 4),
    ]


def _controller_rows():
    # the controller's requests (brokers only), and controlled shutdown (to the controller)
    return [
        _legacy(ApiKey.LEADER_AND_ISR, listeners=CONTROL),
        _legacy(ApiKey.UPDATE_METADATA, listeners=CONTROL),
        _legacy(ApiKey.STOP_REPLICA, listeners=CONTROL),
        _legacy(ApiKey.CONTROLLED_SHUTDOWN),
    ]


def _admin_rows():
    return [
        _legacy(ApiKey.CREATE_TOPICS, 7),
        _legacy(ApiKey.DELETE_TOPICS, 6),
        _legacy(ApiKey.CREATE_PARTITIONS, 3),
        _legacy(ApiKey.DELETE_RECORDS, 2),
        _legacy(ApiKey.DESCRIBE_CONFIGS, 4),
        _legacy(ApiKey.ALTER_CONFIGS, 2),
        _legacy(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1),
    ]


def _group_rows():
    return [
        _legacy(ApiKey.FIND_COORDINATOR, 3),
        _legacy(ApiKey.JOIN_GROUP, 7),
        _legacy(ApiKey.HEARTBEAT, 4),
        _legacy(ApiKey.LEAVE_GROUP, 4),
        _legacy(ApiKey.SYNC_GROUP, 5),
        _legacy(ApiKey.DESCRIBE_GROUPS, 5),
        _legacy(ApiKey.LIST_GROUPS, 4),
        _legacy(ApiKey.OFFSET_COMMIT, 8),
        _legacy(ApiKey.OFFSET_FETCH, 7),
        _legacy(ApiKey.DELETE_GROUPS, 2),
        _legacy(ApiKey.OFFSET_DELETE, 0),
    ]


def _acl_rows():
    return [
        _legacy(ApiKey.DESCRIBE_ACLS, 2),
        _legacy(ApiKey.CREATE_ACLS, 2),
        _legacy(ApiKey.DELETE_ACLS, 2),
    ]


def _rows():
    return (_cluster_rows() + _data_rows() + _metadata_rows() + _controller_rows()
            + _admin_rows() + _group_rows() + _acl_rows())


TABLE.update((spec.key, spec) for spec in _rows())
