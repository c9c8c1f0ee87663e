"""One declared class per request and response, and the codec between them and msgpack values.

How a message travels
---------------------
* A request or response is a ``dataclass`` (keyword-only constructor). Its *body* on the wire is a
  msgpack **map** whose keys are exactly the dataclass field names (``"acks"``, ``"topics"``, ...).
* Nested per-topic / per-partition entries are ``NamedTuple`` classes and travel as msgpack
  **arrays** in field order (``FetchPartition(partition, fetch_offset, ...)`` is
  ``[partition, fetch_offset, ...]``): compact, and fast to build and to take apart.
* Record data (``bytes``) travels as msgpack ``bin`` and is never looked into here. On encode, any
  bytes-like object (``bytes``, ``bytearray``, ``memoryview``) is accepted; decode gives ``bytes``.
* Arrays decode to ``list``; maps to ``dict``; nullable fields may be ``None``.
* ``from_body`` checks every field's type (ints also against their Kafka width: int8/16/32/64;
  ``bool`` is not an int) and requires every field to be present; extra keys are ignored. A bad
  body raises ``InvalidRequestError`` whose message names the class and the field path, e.g.
  ``FetchRequest: field 'topics[0].partitions[1].fetch_offset': expected int64, got str``.
  Semantic checks (acks in {0,1,-1}, a known topic, ...) are the broker's job, not the codec's.
* Errors in responses are an ``int16`` code from ``kafkalite.errors`` and, where the class has one,
  an optional ``error_message``.

Every class has ``API_KEY``, ``MIN_VERSION`` and ``MAX_VERSION`` (all APIs are at version 0),
``to_body(version=0)`` and ``from_body(body, version=0)``. Requests also have
``expects_response()`` (False only for Produce with acks=0, which Kafka never answers) and
``error_response(error_code, error_message=None)`` which builds the matching response with the
error in every slot (Kafka's ``getErrorResponse``).

``RequestErrorResponse`` is the one body not tied to an API: ``{"request_error": [code, message]}``.
A broker sends it when it could read a request's correlation id but not serve the request at all
(unknown API key, unsupported version, malformed body); a client turns it into the exception
``errors.for_code(code, message)``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, ClassVar, NamedTuple

from kafkalite.errors import (
    NONE,
    InvalidRequestError,
    KafkaError,
    UnsupportedVersionError,
    for_code,
)
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.topic_partition import INT32, TopicPartition

# ================================================================================================
# Field validators
#
# A validator is ``f(value) -> value``: it returns the (possibly converted) value or raises
# ``_BadField``. It carries ``.expected`` (a name for messages) and ``.identity`` (True when it
# returns its input unchanged, so containers of it need no copy). Paths to a bad field are built
# only when something is wrong: a container that sees a failure re-runs its (pure) element
# validators to find which element failed and prepends that segment.
# ================================================================================================


class _BadField(Exception):
    def __init__(self, expected: str, value: Any):
        super().__init__(expected)
        self.expected = expected
        self.got = _describe(value)
        self.path: list[str] = []   # innermost first


def _describe(value: Any) -> str:
    kind = type(value).__name__
    if type(value) is int:
        return f"int {value}"
    if isinstance(value, (list, tuple)):
        return f"{kind} of length {len(value)}"
    return kind


Validator = Callable[[Any], Any]


def _mark(fn: Validator, expected: str, identity: bool) -> Validator:
    fn.expected = expected      # type: ignore[attr-defined]
    fn.identity = identity      # type: ignore[attr-defined]
    return fn


def _int_validator(bits: int) -> Validator:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    name = f"int{bits}"

    def check(v: Any) -> Any:
        if type(v) is int and lo <= v <= hi:
            return v
        raise _BadField(name, v)

    return _mark(check, name, True)


def _type_validator(kind: type, name: str) -> Validator:
    def check(v: Any) -> Any:
        if type(v) is kind:
            return v
        raise _BadField(name, v)

    return _mark(check, name, True)


I8 = _int_validator(8)
I16 = _int_validator(16)
I32 = _int_validator(32)
I64 = _int_validator(64)
BOOL = _type_validator(bool, "bool")
STR = _type_validator(str, "str")
BYTES = _type_validator(bytes, "bytes")
FLOAT64 = _type_validator(float, "float64")

Int8 = Annotated[int, I8]
Int16 = Annotated[int, I16]
Int32 = Annotated[int, I32]
Int64 = Annotated[int, I64]


def nullable(inner: Validator) -> Validator:
    name = f"{inner.expected} or nil"

    def check(v: Any) -> Any:
        if v is None:
            return None
        try:
            return inner(v)
        except _BadField as err:
            if not err.path:
                err.expected = name
            raise

    return _mark(check, name, inner.identity)


def array(elem: Validator) -> Validator:
    name = f"array of {elem.expected}"

    def locate(v: Any, err: _BadField) -> None:
        for i, x in enumerate(v):
            try:
                elem(x)
            except _BadField:
                err.path.append(f"[{i}]")
                return

    if elem.identity:
        def check(v: Any) -> Any:
            if type(v) is not list and type(v) is not tuple:
                raise _BadField(name, v)
            try:
                for x in v:
                    elem(x)
            except _BadField as err:
                locate(v, err)
                raise
            return v
    else:
        def check(v: Any) -> Any:
            if type(v) is not list and type(v) is not tuple:
                raise _BadField(name, v)
            try:
                return [elem(x) for x in v]
            except _BadField as err:
                locate(v, err)
                raise

    return _mark(check, name, elem.identity)


def mapping(key: Validator, value: Validator) -> Validator:
    name = f"map of {key.expected} to {value.expected}"

    def locate(v: dict, err: _BadField) -> None:
        for k, x in v.items():
            try:
                key(k)
            except _BadField:
                err.path.append(f"<key {k!r}>")
                return
            try:
                value(x)
            except _BadField:
                err.path.append(f"[{k!r}]")
                return

    identity = key.identity and value.identity
    if identity:
        def check(v: Any) -> Any:
            if type(v) is not dict:
                raise _BadField(name, v)
            try:
                for k, x in v.items():
                    key(k)
                    value(x)
            except _BadField as err:
                locate(v, err)
                raise
            return v
    else:
        def check(v: Any) -> Any:
            if type(v) is not dict:
                raise _BadField(name, v)
            try:
                return {key(k): value(x) for k, x in v.items()}
            except _BadField as err:
                locate(v, err)
                raise

    return _mark(check, name, identity)


_STRUCTS: dict[type, Validator] = {}


def struct(cls: type) -> Validator:
    """Validator turning an array ``[f1, f2, ...]`` into the NamedTuple ``cls``."""
    cached = _STRUCTS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls, include_extras=True)
    names = cls._fields
    fields = tuple(_validator_for(hints[n], f"{cls.__name__}.{n}") for n in names)
    n_fields = len(names)
    name = f"{cls.__name__} (array of {n_fields})"
    new = tuple.__new__

    def check(v: Any) -> Any:
        if (type(v) is not list and not isinstance(v, tuple)) or len(v) != n_fields:
            raise _BadField(name, v)
        try:
            return new(cls, [f(x) for f, x in zip(fields, v)])
        except _BadField as err:
            for fname, f, x in zip(names, fields, v):
                try:
                    f(x)
                except _BadField:
                    err.path.append("." + fname)
                    break
            raise

    _mark(check, name, False)
    _STRUCTS[cls] = check
    return check


def _validator_for(hint: Any, where: str) -> Validator:
    """The validator for a type hint (ints must say their width: Int8/Int16/Int32/Int64)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Annotated:
        meta = hint.__metadata__[0]
        return I32 if meta == INT32 else meta     # TopicPartition's partition says "int32"
    if hint is str:
        return STR
    if hint is bytes:
        return BYTES
    if hint is bool:
        return BOOL
    if hint is float:
        return FLOAT64
    if origin in (typing.Union, types.UnionType):
        others = [a for a in args if a is not type(None)]
        if len(others) == 1 and len(args) == 2:
            return nullable(_validator_for(others[0], where))
    if origin is list and len(args) == 1:
        return array(_validator_for(args[0], where))
    if origin is dict and len(args) == 2:
        return mapping(_validator_for(args[0], where), _validator_for(args[1], where))
    if isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields"):
        return struct(hint)
    raise TypeError(f"{where}: no wire type for {hint!r} (ints need Int8/Int16/Int32/Int64)")


# ================================================================================================
# Message base
# ================================================================================================


class Message:
    """Base of every request and response class."""

    __slots__ = ()
    API_KEY: ClassVar[int]
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0
    _SCHEMA: ClassVar[tuple[tuple[str, Validator], ...]] = ()
    _NAMES: ClassVar[tuple[str, ...]] = ()

    def to_body(self, version: int = 0) -> dict[str, Any]:
        """The msgpack-ready body: a dict keyed by field name (nested entries stay tuples)."""
        return {name: getattr(self, name) for name in self._NAMES}

    @classmethod
    def from_body(cls, body: Any, version: int = 0):
        """Build from a decoded body, checking every field; raises InvalidRequestError."""
        if type(body) is not dict:
            raise InvalidRequestError(
                f"{cls.__name__}: body must be a map, got {_describe(body)}")
        values = {}
        for name, check in cls._SCHEMA:
            try:
                raw = body[name]
            except KeyError:
                raise InvalidRequestError(f"{cls.__name__}: missing field '{name}'") from None
            try:
                values[name] = check(raw)
            except _BadField as err:
                path = name + "".join(reversed(err.path))
                raise InvalidRequestError(
                    f"{cls.__name__}: field '{path}': expected {err.expected}, got {err.got}"
                ) from None
        return cls(**values)


class Request(Message):
    __slots__ = ()

    def expects_response(self) -> bool:
        """False when the broker sends no response at all (Produce with acks=0)."""
        return True

    def error_response(self, error_code: int, error_message: str | None = None) -> Response:
        raise NotImplementedError


class Response(Message):
    __slots__ = ()


def _message(api_key: ApiKey):
    """Class decorator: make a keyword-only slotted dataclass and derive its wire schema."""

    def wrap(cls):
        repr_flag = "__repr__" not in cls.__dict__
        cls = dataclass(slots=True, kw_only=True, repr=repr_flag)(cls)
        cls.API_KEY = api_key
        hints = typing.get_type_hints(cls, include_extras=True)
        schema = tuple((f.name, _validator_for(hints[f.name], f"{cls.__name__}.{f.name}"))
                       for f in dataclasses.fields(cls))
        cls._SCHEMA = schema
        cls._NAMES = tuple(name for name, _ in schema)
        return cls

    return wrap


def _bytes_summary(data: Any) -> str:
    return f"<{len(data)} bytes>"


# ================================================================================================
# Shared nested entries
# ================================================================================================


class PartitionError(NamedTuple):
    topic: str
    partition: Int32
    error_code: Int16


# ================================================================================================
# ApiVersions (18)
# ================================================================================================


class ApiVersionRange(NamedTuple):
    api_key: Int16
    min_version: Int16
    max_version: Int16


@_message(ApiKey.API_VERSIONS)
class ApiVersionsRequest(Request):
    def error_response(self, error_code, error_message=None):
        return ApiVersionsResponse(error_code=error_code, error_message=error_message,
                                   api_versions=supported_versions())


class SupportedFeature(NamedTuple):
    name: str
    min_version: Int16
    max_version: Int16


class FinalizedFeature(NamedTuple):
    name: str
    min_version_level: Int16
    max_version_level: Int16


@_message(ApiKey.API_VERSIONS)
class ApiVersionsResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    api_versions: list[ApiVersionRange] = field(default_factory=list)
    throttle_time_ms: Int32 = 0
    # KIP-584: the broker's supported features and the cluster's finalized ones (from
    # ``/feature``); the epoch is that znode's version, -1 when unknown
    supported_features: list[SupportedFeature] = field(default_factory=list)
    finalized_features_epoch: Int64 = -1
    finalized_features: list[FinalizedFeature] = field(default_factory=list)


# ================================================================================================
# Metadata (3)
# ================================================================================================


class MetadataBroker(NamedTuple):
    node_id: Int32
    host: str
    port: Int32
    rack: str | None = None


class MetadataPartition(NamedTuple):
    error_code: Int16
    partition: Int32
    leader: Int32                    # -1 when there is no leader
    leader_epoch: Int32
    replicas: list[Int32]
    isr: list[Int32]
    offline_replicas: list[Int32]


class MetadataTopic(NamedTuple):
    error_code: Int16
    name: str
    partitions: list[MetadataPartition]
    topic_id: str | None = None      # base64url, as in /brokers/topics/<t>; None if unknown
    is_internal: bool = False        # __consumer_offsets, __transaction_state
    topic_authorized_operations: Int32 = -(1 << 31)    # KIP-430; Int.MinValue: not requested


@_message(ApiKey.METADATA)
class MetadataRequest(Request):
    topics: list[str] | None = None          # None = every topic; [] = none (brokers only)
    allow_auto_topic_creation: bool = True
    include_cluster_authorized_operations: bool = False     # KIP-430 (Kafka v8-v10)
    include_topic_authorized_operations: bool = False       # KIP-430 (Kafka v8+)

    def error_response(self, error_code, error_message=None):
        return MetadataResponse(topics=[MetadataTopic(error_code, t, []) for t in self.topics or ()])


@_message(ApiKey.METADATA)
class MetadataResponse(Response):
    throttle_time_ms: Int32 = 0
    brokers: list[MetadataBroker] = field(default_factory=list)
    cluster_id: str | None = None
    controller_id: Int32 = -1
    topics: list[MetadataTopic] = field(default_factory=list)
    cluster_authorized_operations: Int32 = -(1 << 31)    # KIP-430; Int.MinValue: not requested


# ================================================================================================
# Produce (0)
# ================================================================================================


class ProduceRecordError(NamedTuple):
    """KIP-467: one record a refused batch was refused for (its index in the batch)."""
    batch_index: Int32
    message: str | None = None


class ProducePartitionResponse(NamedTuple):
    error_code: Int16
    error_message: str | None = None
    base_offset: Int64 = -1
    log_append_time: Int64 = -1      # -1 = CreateTime topics
    log_start_offset: Int64 = -1
    record_errors: list[ProduceRecordError] = []    # never mutated: a shared default is safe


@_message(ApiKey.PRODUCE)
class ProduceRequest(Request):
    transactional_id: str | None = None
    acks: Int16 = 1                  # 0, 1 or -1 (all); the broker checks the value
    timeout_ms: Int32 = 30000
    topic_data: dict[str, dict[Int32, bytes]] = field(default_factory=dict)
    """``{topic: {partition: record batch bytes}}``; the bytes are never decoded by the codec."""

    def __repr__(self) -> str:
        parts = {t: {p: _bytes_summary(b) for p, b in ps.items()}
                 for t, ps in self.topic_data.items()}
        return (f"ProduceRequest(transactional_id={self.transactional_id!r}, acks={self.acks}, "
                f"timeout_ms={self.timeout_ms}, topic_data={parts})")

    def expects_response(self) -> bool:
        return self.acks != 0

    def error_response(self, error_code, error_message=None):
        return ProduceResponse(responses={
            t: {p: ProducePartitionResponse(error_code, error_message) for p in ps}
            for t, ps in self.topic_data.items()})


@_message(ApiKey.PRODUCE)
class ProduceResponse(Response):
    responses: dict[str, dict[Int32, ProducePartitionResponse]] = field(default_factory=dict)
    throttle_time_ms: Int32 = 0


# ================================================================================================
# Fetch (1)
# ================================================================================================

CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


class FetchPartition(NamedTuple):
    partition: Int32
    fetch_offset: Int64
    partition_max_bytes: Int32
    current_leader_epoch: Int32 = -1     # -1 = unknown, skip the fencing check
    log_start_offset: Int64 = -1         # followers only


class FetchTopic(NamedTuple):
    topic: str
    partitions: list[FetchPartition]


class FetchAbortedTransaction(NamedTuple):
    """An aborted transaction overlapping a read_committed fetch: the consumer drops its
    producer's batches from ``first_offset`` up to the ABORT marker."""
    producer_id: Int64
    first_offset: Int64


class FetchPartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16
    high_watermark: Int64 = -1
    last_stable_offset: Int64 = -1
    log_start_offset: Int64 = -1
    records: bytes = b""                 # stored record batches, as they are on disk
    # None (Kafka's null) for read_uncommitted; for read_committed the aborted transactions
    # overlapping the returned range (possibly none)
    aborted_transactions: list[FetchAbortedTransaction] | None = None

    def __repr__(self) -> str:
        return (f"FetchPartitionResponse(partition={self.partition}, "
                f"error_code={self.error_code}, high_watermark={self.high_watermark}, "
                f"last_stable_offset={self.last_stable_offset}, "
                f"log_start_offset={self.log_start_offset}, "
                f"records={_bytes_summary(self.records)}, "
                f"aborted_transactions={self.aborted_transactions!r})")


class FetchTopicResponse(NamedTuple):
    topic: str
    partitions: list[FetchPartitionResponse]


@_message(ApiKey.FETCH)
class FetchRequest(Request):
    replica_id: Int32 = CONSUMER_REPLICA_ID   # broker id for a follower, -1 for consumers
    max_wait_ms: Int32 = 500
    min_bytes: Int32 = 1
    max_bytes: Int32 = 52428800
    isolation_level: Int8 = READ_UNCOMMITTED
    topics: list[FetchTopic] = field(default_factory=list)
    # KIP-227 fetch sessions (Kafka's protocol, v7+): kafkalite never opens one (it answers
    # session id 0), so a request continuing one (epoch > 0) is told to start over
    session_id: Int32 = 0
    session_epoch: Int32 = -1                 # -1: no session (a full fetch)

    def error_response(self, error_code, error_message=None):
        return FetchResponse(error_code=error_code, error_message=error_message, responses=[
            FetchTopicResponse(t.topic, [FetchPartitionResponse(p.partition, error_code)
                                         for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.FETCH)
class FetchResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    responses: list[FetchTopicResponse] = field(default_factory=list)


# ================================================================================================
# ListOffsets (2)
# ================================================================================================

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


class ListOffsetsPartition(NamedTuple):
    partition: Int32
    timestamp: Int64                     # -2 earliest, -1 latest, else ms since the epoch
    current_leader_epoch: Int32 = -1


class ListOffsetsTopic(NamedTuple):
    topic: str
    partitions: list[ListOffsetsPartition]


class ListOffsetsPartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16
    timestamp: Int64 = -1
    offset: Int64 = -1
    leader_epoch: Int32 = -1


class ListOffsetsTopicResponse(NamedTuple):
    topic: str
    partitions: list[ListOffsetsPartitionResponse]


@_message(ApiKey.LIST_OFFSETS)
class ListOffsetsRequest(Request):
    replica_id: Int32 = CONSUMER_REPLICA_ID
    isolation_level: Int8 = READ_UNCOMMITTED
    topics: list[ListOffsetsTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return ListOffsetsResponse(topics=[
            ListOffsetsTopicResponse(t.topic, [ListOffsetsPartitionResponse(p.partition, error_code)
                                               for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.LIST_OFFSETS)
class ListOffsetsResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[ListOffsetsTopicResponse] = field(default_factory=list)


# ================================================================================================
# LeaderAndIsr (4)
# ================================================================================================


class LeaderAndIsrPartitionState(NamedTuple):
    topic: str
    partition: Int32
    controller_epoch: Int32
    leader: Int32
    leader_epoch: Int32
    isr: list[Int32]
    zk_version: Int32
    replicas: list[Int32]
    is_new: bool = False


class LeaderAndIsrLiveLeader(NamedTuple):
    broker_id: Int32
    host: str
    port: Int32


@_message(ApiKey.LEADER_AND_ISR)
class LeaderAndIsrRequest(Request):
    controller_id: Int32
    controller_epoch: Int32
    broker_epoch: Int64 = -1
    partition_states: list[LeaderAndIsrPartitionState] = field(default_factory=list)
    live_leaders: list[LeaderAndIsrLiveLeader] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return LeaderAndIsrResponse(
            error_code=error_code, error_message=error_message,
            partition_errors=[PartitionError(s.topic, s.partition, error_code)
                              for s in self.partition_states])


@_message(ApiKey.LEADER_AND_ISR)
class LeaderAndIsrResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    partition_errors: list[PartitionError] = field(default_factory=list)


# ================================================================================================
# StopReplica (5)
# ================================================================================================


@_message(ApiKey.STOP_REPLICA)
class StopReplicaRequest(Request):
    controller_id: Int32
    controller_epoch: Int32
    broker_epoch: Int64 = -1
    delete_partitions: bool = False
    partitions: list[TopicPartition] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return StopReplicaResponse(
            error_code=error_code, error_message=error_message,
            partition_errors=[PartitionError(tp.topic, tp.partition, error_code)
                              for tp in self.partitions])


@_message(ApiKey.STOP_REPLICA)
class StopReplicaResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    partition_errors: list[PartitionError] = field(default_factory=list)


# ================================================================================================
# UpdateMetadata (6)
# ================================================================================================


class UpdateMetadataPartitionState(NamedTuple):
    topic: str
    partition: Int32
    controller_epoch: Int32
    leader: Int32
    leader_epoch: Int32
    isr: list[Int32]
    zk_version: Int32
    replicas: list[Int32]
    offline_replicas: list[Int32]
    topic_id: str | None = None      # the topic's id (/brokers/topics/<t>), served in Metadata


class UpdateMetadataBroker(NamedTuple):
    id: Int32
    host: str                        # the inter-broker listener's address
    port: Int32
    rack: str | None = None
    endpoints: list[str] = []        # every advertised listener, "NAME://host:port"


@_message(ApiKey.UPDATE_METADATA)
class UpdateMetadataRequest(Request):
    controller_id: Int32
    controller_epoch: Int32
    broker_epoch: Int64 = -1
    partition_states: list[UpdateMetadataPartitionState] = field(default_factory=list)
    live_brokers: list[UpdateMetadataBroker] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return UpdateMetadataResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.UPDATE_METADATA)
class UpdateMetadataResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None


# ================================================================================================
# ControlledShutdown (7)
# ================================================================================================


@_message(ApiKey.CONTROLLED_SHUTDOWN)
class ControlledShutdownRequest(Request):
    broker_id: Int32
    broker_epoch: Int64 = -1

    def error_response(self, error_code, error_message=None):
        return ControlledShutdownResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.CONTROLLED_SHUTDOWN)
class ControlledShutdownResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    remaining_partitions: list[TopicPartition] = field(default_factory=list)


# ================================================================================================
# CreateTopics (19)
# ================================================================================================


class CreatableTopic(NamedTuple):
    name: str
    num_partitions: Int32                      # -1 when assignments are given
    replication_factor: Int16                  # -1 when assignments are given
    assignments: dict[Int32, list[Int32]]      # {partition: [broker ids]}, {} = let the broker choose
    configs: dict[str, str | None]             # topic-level config overrides


class CreatableTopicConfig(NamedTuple):
    """One config of a created topic, as DescribeConfigs renders it (CreateTopics v5+)."""
    name: str
    value: str | None
    read_only: bool
    config_source: Int8                        # Kafka's ConfigSource (DescribeConfigsEntry's)
    is_sensitive: bool


class CreatableTopicResult(NamedTuple):
    name: str
    error_code: Int16
    error_message: str | None = None
    # KIP-525 (CreateTopics v5+): what was created, or -1, -1, [] for a refused topic
    num_partitions: Int32 = -1
    replication_factor: Int16 = -1
    configs: list[CreatableTopicConfig] = []
    topic_config_error_code: Int16 = 0         # TOPIC_AUTHORIZATION_FAILED: no DescribeConfigs


@_message(ApiKey.CREATE_TOPICS)
class CreateTopicsRequest(Request):
    topics: list[CreatableTopic] = field(default_factory=list)
    timeout_ms: Int32 = 30000
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        return CreateTopicsResponse(topics=[CreatableTopicResult(t.name, error_code, error_message)
                                            for t in self.topics])


@_message(ApiKey.CREATE_TOPICS)
class CreateTopicsResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[CreatableTopicResult] = field(default_factory=list)


# ================================================================================================
# DeleteTopics (20)
# ================================================================================================


class DeletableTopicResult(NamedTuple):
    name: str | None                           # None: a topic id the client may not Describe
    error_code: Int16
    error_message: str | None = None
    topic_id: str | None = None                # as asked (DeleteTopics v6 by id), base64url


@_message(ApiKey.DELETE_TOPICS)
class DeleteTopicsRequest(Request):
    topic_names: list[str] = field(default_factory=list)
    timeout_ms: Int32 = 30000
    topic_ids: list[str] = field(default_factory=list)   # v6: topics named by id (base64url)

    def error_response(self, error_code, error_message=None):
        return DeleteTopicsResponse(responses=[
            *(DeletableTopicResult(n, error_code, error_message) for n in self.topic_names),
            *(DeletableTopicResult(None, error_code, error_message, i) for i in self.topic_ids)])


@_message(ApiKey.DELETE_TOPICS)
class DeleteTopicsResponse(Response):
    throttle_time_ms: Int32 = 0
    responses: list[DeletableTopicResult] = field(default_factory=list)


# ================================================================================================
# InitProducerId (22)
# ================================================================================================


@_message(ApiKey.INIT_PRODUCER_ID)
class InitProducerIdRequest(Request):
    transactional_id: str | None = None
    transaction_timeout_ms: Int32 = 60000
    # KIP-360 (Kafka v3+): the id and epoch the producer had, both -1 or neither
    producer_id: Int64 = -1
    producer_epoch: Int16 = -1

    def error_response(self, error_code, error_message=None):
        return InitProducerIdResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.INIT_PRODUCER_ID)
class InitProducerIdResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    producer_id: Int64 = -1
    producer_epoch: Int16 = -1


# ================================================================================================
# OffsetForLeaderEpoch (23)
# ================================================================================================


class OffsetForLeaderEpochPartition(NamedTuple):
    partition: Int32
    current_leader_epoch: Int32          # -1 = unknown, skip the fencing check
    leader_epoch: Int32                  # the epoch whose end offset is wanted


class OffsetForLeaderEpochTopic(NamedTuple):
    topic: str
    partitions: list[OffsetForLeaderEpochPartition]


class OffsetForLeaderEpochPartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16
    leader_epoch: Int32 = -1
    end_offset: Int64 = -1


class OffsetForLeaderEpochTopicResponse(NamedTuple):
    topic: str
    partitions: list[OffsetForLeaderEpochPartitionResponse]


@_message(ApiKey.OFFSET_FOR_LEADER_EPOCH)
class OffsetForLeaderEpochRequest(Request):
    replica_id: Int32 = CONSUMER_REPLICA_ID
    topics: list[OffsetForLeaderEpochTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return OffsetForLeaderEpochResponse(topics=[
            OffsetForLeaderEpochTopicResponse(
                t.topic, [OffsetForLeaderEpochPartitionResponse(p.partition, error_code)
                          for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.OFFSET_FOR_LEADER_EPOCH)
class OffsetForLeaderEpochResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[OffsetForLeaderEpochTopicResponse] = field(default_factory=list)


# ================================================================================================
# DescribeConfigs (32)
# ================================================================================================

CONFIG_RESOURCE_TOPIC = 2            # Kafka's ConfigResource.Type codes
CONFIG_RESOURCE_BROKER = 4


class DescribeConfigsResource(NamedTuple):
    resource_type: Int8
    resource_name: str
    config_names: list[str] | None = None     # None = every config of the resource


class DescribeConfigsSynonym(NamedTuple):
    name: str
    value: str | None
    source: Int8                               # Kafka's ConfigSource, as config_source


class DescribeConfigsEntry(NamedTuple):
    name: str
    value: str | None
    read_only: bool = False
    is_default: bool = False                   # config_source == 5 (DEFAULT_CONFIG)
    is_sensitive: bool = False
    config_source: Int8 = -1                   # Kafka's ConfigSource: 1 topic override,
                                               # 4 server.properties, 5 default, 6 logger
    synonyms: list[DescribeConfigsSynonym] = []   # with include_synonyms, most specific first
    config_type: Int8 = 0                      # Kafka's ConfigType: 1 boolean .. 9 password
    documentation: str | None = None           # with include_documentation


class DescribeConfigsResult(NamedTuple):
    error_code: Int16
    error_message: str | None
    resource_type: Int8
    resource_name: str
    configs: list[DescribeConfigsEntry]


@_message(ApiKey.DESCRIBE_CONFIGS)
class DescribeConfigsRequest(Request):
    resources: list[DescribeConfigsResource] = field(default_factory=list)
    include_synonyms: bool = False
    include_documentation: bool = False

    def error_response(self, error_code, error_message=None):
        return DescribeConfigsResponse(results=[
            DescribeConfigsResult(error_code, error_message, r.resource_type, r.resource_name, [])
            for r in self.resources])


@_message(ApiKey.DESCRIBE_CONFIGS)
class DescribeConfigsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[DescribeConfigsResult] = field(default_factory=list)


# ================================================================================================
# CreatePartitions (37)
# ================================================================================================


class CreatePartitionsTopic(NamedTuple):
    name: str
    count: Int32                               # the new total number of partitions
    assignments: list[list[Int32]] | None      # one broker-id list per added partition; None =
                                               # let the broker choose


class CreatePartitionsTopicResult(NamedTuple):
    name: str
    error_code: Int16
    error_message: str | None = None


@_message(ApiKey.CREATE_PARTITIONS)
class CreatePartitionsRequest(Request):
    topics: list[CreatePartitionsTopic] = field(default_factory=list)
    timeout_ms: Int32 = 30000
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        return CreatePartitionsResponse(results=[
            CreatePartitionsTopicResult(t.name, error_code, error_message) for t in self.topics])


@_message(ApiKey.CREATE_PARTITIONS)
class CreatePartitionsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[CreatePartitionsTopicResult] = field(default_factory=list)


# ================================================================================================
# AlterConfigs (33) and IncrementalAlterConfigs (44)
# ================================================================================================

CONFIG_RESOURCE_BROKER_LOGGER = 8
CONFIG_OP_SET = 0                    # Kafka's AlterConfigOp.OpType
CONFIG_OP_DELETE = 1
CONFIG_OP_APPEND = 2
CONFIG_OP_SUBTRACT = 3


class AlterableConfig(NamedTuple):
    name: str
    value: str | None


class AlterConfigsResource(NamedTuple):
    resource_type: Int8
    resource_name: str
    configs: list[AlterableConfig]             # a topic's complete new set of overrides


class AlterConfigsResourceResponse(NamedTuple):
    error_code: Int16
    error_message: str | None
    resource_type: Int8
    resource_name: str


@_message(ApiKey.ALTER_CONFIGS)
class AlterConfigsRequest(Request):
    resources: list[AlterConfigsResource] = field(default_factory=list)
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        return AlterConfigsResponse(responses=[
            AlterConfigsResourceResponse(error_code, error_message, r.resource_type,
                                         r.resource_name) for r in self.resources])


@_message(ApiKey.ALTER_CONFIGS)
class AlterConfigsResponse(Response):
    throttle_time_ms: Int32 = 0
    responses: list[AlterConfigsResourceResponse] = field(default_factory=list)


class AlterableConfigOp(NamedTuple):
    name: str
    config_operation: Int8                     # CONFIG_OP_SET / _DELETE / _APPEND / _SUBTRACT
    value: str | None


class IncrementalAlterConfigsResource(NamedTuple):
    resource_type: Int8
    resource_name: str
    configs: list[AlterableConfigOp]


@_message(ApiKey.INCREMENTAL_ALTER_CONFIGS)
class IncrementalAlterConfigsRequest(Request):
    resources: list[IncrementalAlterConfigsResource] = field(default_factory=list)
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        return IncrementalAlterConfigsResponse(responses=[
            AlterConfigsResourceResponse(error_code, error_message, r.resource_type,
                                         r.resource_name) for r in self.resources])


@_message(ApiKey.INCREMENTAL_ALTER_CONFIGS)
class IncrementalAlterConfigsResponse(Response):
    throttle_time_ms: Int32 = 0
    responses: list[AlterConfigsResourceResponse] = field(default_factory=list)


# ================================================================================================
# DeleteRecords (21)
# ================================================================================================


class DeleteRecordsPartition(NamedTuple):
    partition: Int32
    offset: Int64                              # delete everything below; -1 = the high watermark


class DeleteRecordsTopic(NamedTuple):
    topic: str
    partitions: list[DeleteRecordsPartition]


class DeleteRecordsPartitionResult(NamedTuple):
    partition: Int32
    low_watermark: Int64                       # -1 with an error
    error_code: Int16


class DeleteRecordsTopicResult(NamedTuple):
    topic: str
    partitions: list[DeleteRecordsPartitionResult]


@_message(ApiKey.DELETE_RECORDS)
class DeleteRecordsRequest(Request):
    topics: list[DeleteRecordsTopic] = field(default_factory=list)
    timeout_ms: Int32 = 30000

    def error_response(self, error_code, error_message=None):
        return DeleteRecordsResponse(topics=[
            DeleteRecordsTopicResult(t.topic, [DeleteRecordsPartitionResult(p.partition, -1,
                                                                            error_code)
                                               for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.DELETE_RECORDS)
class DeleteRecordsResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[DeleteRecordsTopicResult] = field(default_factory=list)


# ================================================================================================
# Consumer groups, the 0.9+ broker-side coordinator (docs/architecture.md, 9. Consumer groups):
# FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
# DescribeGroups (15), ListGroups (16), OffsetCommit (8), OffsetFetch (9), DeleteGroups (42),
# OffsetDelete (47).
# Fields are those of Kafka 2.8's newest versions (per-topic entries say ``topic``/``partition``
# as the other native messages do); protocol metadata and assignments are opaque bytes (for
# consumers, Kafka's ConsumerProtocol: ``kafkalite.client.consumer_protocol``).
# ================================================================================================

COORDINATOR_KEY_GROUP = 0            # FindCoordinator key types (Kafka's CoordinatorType)
COORDINATOR_KEY_TRANSACTION = 1


@_message(ApiKey.FIND_COORDINATOR)
class FindCoordinatorRequest(Request):
    key: str
    key_type: Int8 = COORDINATOR_KEY_GROUP

    def error_response(self, error_code, error_message=None):
        return FindCoordinatorResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.FIND_COORDINATOR)
class FindCoordinatorResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    node_id: Int32 = -1
    host: str = ""
    port: Int32 = -1


class JoinGroupProtocol(NamedTuple):
    name: str                            # e.g. "range"
    metadata: bytes                      # for consumers: a ConsumerProtocolSubscription


class JoinGroupMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@_message(ApiKey.JOIN_GROUP)
class JoinGroupRequest(Request):
    group_id: str
    session_timeout_ms: Int32 = 10000
    rebalance_timeout_ms: Int32 = 300000
    member_id: str = ""                  # "" on a first join: the coordinator answers
                                         # MEMBER_ID_REQUIRED with one to join again with
    group_instance_id: str | None = None  # static membership (KIP-345)
    protocol_type: str = "consumer"
    protocols: list[JoinGroupProtocol] = field(default_factory=list)
    # a first join ("" member id) is answered MEMBER_ID_REQUIRED with an id to join again with
    # (KIP-394); Kafka-protocol clients before JoinGroup v4 do not know that answer
    require_known_member_id: bool = True

    def error_response(self, error_code, error_message=None):
        return JoinGroupResponse(error_code=error_code)


@_message(ApiKey.JOIN_GROUP)
class JoinGroupResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    generation_id: Int32 = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[JoinGroupMember] = field(default_factory=list)   # the leader's answer only


@_message(ApiKey.HEARTBEAT)
class HeartbeatRequest(Request):
    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None

    def error_response(self, error_code, error_message=None):
        return HeartbeatResponse(error_code=error_code)


@_message(ApiKey.HEARTBEAT)
class HeartbeatResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE


class LeaveGroupMember(NamedTuple):
    member_id: str
    group_instance_id: str | None = None


class LeaveGroupMemberResponse(NamedTuple):
    member_id: str
    group_instance_id: str | None
    error_code: Int16


@_message(ApiKey.LEAVE_GROUP)
class LeaveGroupRequest(Request):
    group_id: str
    members: list[LeaveGroupMember] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return LeaveGroupResponse(error_code=error_code)


@_message(ApiKey.LEAVE_GROUP)
class LeaveGroupResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    members: list[LeaveGroupMemberResponse] = field(default_factory=list)


class SyncGroupAssignment(NamedTuple):
    member_id: str
    assignment: bytes                    # for consumers: a ConsumerProtocolAssignment


@_message(ApiKey.SYNC_GROUP)
class SyncGroupRequest(Request):
    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: list[SyncGroupAssignment] = field(default_factory=list)  # the leader's only

    def error_response(self, error_code, error_message=None):
        return SyncGroupResponse(error_code=error_code)


@_message(ApiKey.SYNC_GROUP)
class SyncGroupResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class DescribedGroupMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class DescribedGroup(NamedTuple):
    error_code: Int16
    group_id: str
    group_state: str                     # Empty, PreparingRebalance, CompletingRebalance,
                                         # Stable, Dead
    protocol_type: str
    protocol_data: str                   # the chosen protocol (assignor), "" when none
    members: list[DescribedGroupMember]
    authorized_operations: Int32 = -(1 << 31)


@_message(ApiKey.DESCRIBE_GROUPS)
class DescribeGroupsRequest(Request):
    groups: list[str] = field(default_factory=list)
    include_authorized_operations: bool = False

    def error_response(self, error_code, error_message=None):
        return DescribeGroupsResponse(groups=[DescribedGroup(error_code, g, "", "", "", [])
                                              for g in self.groups])


@_message(ApiKey.DESCRIBE_GROUPS)
class DescribeGroupsResponse(Response):
    throttle_time_ms: Int32 = 0
    groups: list[DescribedGroup] = field(default_factory=list)


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str
    group_state: str


@_message(ApiKey.LIST_GROUPS)
class ListGroupsRequest(Request):
    states_filter: list[str] = field(default_factory=list)   # [] = every state

    def error_response(self, error_code, error_message=None):
        return ListGroupsResponse(error_code=error_code)


@_message(ApiKey.LIST_GROUPS)
class ListGroupsResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    groups: list[ListedGroup] = field(default_factory=list)


class OffsetCommitPartition(NamedTuple):
    partition: Int32
    committed_offset: Int64
    committed_leader_epoch: Int32 = -1
    committed_metadata: str | None = None


class OffsetCommitTopic(NamedTuple):
    topic: str
    partitions: list[OffsetCommitPartition]


class OffsetCommitPartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16


class OffsetCommitTopicResponse(NamedTuple):
    topic: str
    partitions: list[OffsetCommitPartitionResponse]


@_message(ApiKey.OFFSET_COMMIT)
class OffsetCommitRequest(Request):
    group_id: str
    generation_id: Int32 = -1            # -1 with member_id "": an admin's commit for a group
    member_id: str = ""                  # without members
    group_instance_id: str | None = None
    retention_time_ms: Int64 = -1        # -1: the broker's offsets.retention.minutes
    topics: list[OffsetCommitTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return OffsetCommitResponse(topics=[
            OffsetCommitTopicResponse(t.topic, [OffsetCommitPartitionResponse(p.partition,
                                                                              error_code)
                                                for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.OFFSET_COMMIT)
class OffsetCommitResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[OffsetCommitTopicResponse] = field(default_factory=list)


class OffsetFetchTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class OffsetFetchPartitionResponse(NamedTuple):
    partition: Int32
    committed_offset: Int64              # -1 when nothing is committed
    committed_leader_epoch: Int32 = -1
    metadata: str | None = None
    error_code: Int16 = NONE


class OffsetFetchTopicResponse(NamedTuple):
    topic: str
    partitions: list[OffsetFetchPartitionResponse]


@_message(ApiKey.OFFSET_FETCH)
class OffsetFetchRequest(Request):
    group_id: str
    topics: list[OffsetFetchTopic] | None = None    # None = every partition with an offset
    require_stable: bool = False

    def error_response(self, error_code, error_message=None):
        return OffsetFetchResponse(error_code=error_code, topics=[
            OffsetFetchTopicResponse(t.topic, [OffsetFetchPartitionResponse(p, -1, -1, None,
                                                                            error_code)
                                               for p in t.partitions])
            for t in self.topics or ()])


@_message(ApiKey.OFFSET_FETCH)
class OffsetFetchResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[OffsetFetchTopicResponse] = field(default_factory=list)
    error_code: Int16 = NONE


class DeletableGroupResult(NamedTuple):
    group_id: str
    error_code: Int16


@_message(ApiKey.DELETE_GROUPS)
class DeleteGroupsRequest(Request):
    groups_names: list[str] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return DeleteGroupsResponse(results=[DeletableGroupResult(g, error_code)
                                             for g in self.groups_names])


@_message(ApiKey.DELETE_GROUPS)
class DeleteGroupsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[DeletableGroupResult] = field(default_factory=list)


class OffsetDeleteTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class OffsetDeletePartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16


class OffsetDeleteTopicResponse(NamedTuple):
    topic: str
    partitions: list[OffsetDeletePartitionResponse]


@_message(ApiKey.OFFSET_DELETE)
class OffsetDeleteRequest(Request):
    group_id: str
    topics: list[OffsetDeleteTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return OffsetDeleteResponse(error_code=error_code)


@_message(ApiKey.OFFSET_DELETE)
class OffsetDeleteResponse(Response):
    error_code: Int16 = NONE
    throttle_time_ms: Int32 = 0
    topics: list[OffsetDeleteTopicResponse] = field(default_factory=list)


# ================================================================================================
# SaslHandshake (17), SaslAuthenticate (36): the exchange before anything else on a SASL listener
# ================================================================================================


@_message(ApiKey.SASL_HANDSHAKE)
class SaslHandshakeRequest(Request):
    mechanism: str

    def error_response(self, error_code, error_message=None):
        return SaslHandshakeResponse(error_code=error_code)


@_message(ApiKey.SASL_HANDSHAKE)
class SaslHandshakeResponse(Response):
    error_code: Int16 = NONE
    mechanisms: list[str] = field(default_factory=list)


@_message(ApiKey.SASL_AUTHENTICATE)
class SaslAuthenticateRequest(Request):
    auth_bytes: bytes = b""

    def __repr__(self) -> str:       # tokens carry passwords (PLAIN): never in a log line
        return f"SaslAuthenticateRequest(auth_bytes={_bytes_summary(self.auth_bytes)})"

    def error_response(self, error_code, error_message=None):
        return SaslAuthenticateResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.SASL_AUTHENTICATE)
class SaslAuthenticateResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    auth_bytes: bytes = b""
    session_lifetime_ms: Int64 = 0


# ================================================================================================
# DescribeAcls (29), CreateAcls (30), DeleteAcls (31): Kafka's codes for types and operations
# (kafkalite.security.acl)
# ================================================================================================


class AclDescription(NamedTuple):
    principal: str
    host: str
    operation: Int8
    permission_type: Int8


class AclResource(NamedTuple):
    resource_type: Int8
    resource_name: str
    pattern_type: Int8
    acls: list[AclDescription]


class AclCreation(NamedTuple):
    resource_type: Int8
    resource_name: str
    pattern_type: Int8
    principal: str
    host: str
    operation: Int8
    permission_type: Int8


class AclCreationResult(NamedTuple):
    error_code: Int16
    error_message: str | None


class AclFilter(NamedTuple):
    """None for a name, principal or host matches any; ANY (1) for the codes."""
    resource_type: Int8
    resource_name: str | None
    pattern_type: Int8
    principal: str | None
    host: str | None
    operation: Int8
    permission_type: Int8


class DeleteAclsMatchingAcl(NamedTuple):
    error_code: Int16
    error_message: str | None
    resource_type: Int8
    resource_name: str
    pattern_type: Int8
    principal: str
    host: str
    operation: Int8
    permission_type: Int8


class DeleteAclsFilterResult(NamedTuple):
    error_code: Int16
    error_message: str | None
    matching_acls: list[DeleteAclsMatchingAcl]


@_message(ApiKey.DESCRIBE_ACLS)
class DescribeAclsRequest(Request):
    filter: AclFilter

    def error_response(self, error_code, error_message=None):
        return DescribeAclsResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.DESCRIBE_ACLS)
class DescribeAclsResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    resources: list[AclResource] = field(default_factory=list)


@_message(ApiKey.CREATE_ACLS)
class CreateAclsRequest(Request):
    creations: list[AclCreation] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return CreateAclsResponse(results=[AclCreationResult(error_code, error_message)
                                           for _ in self.creations])


@_message(ApiKey.CREATE_ACLS)
class CreateAclsResponse(Response):
    results: list[AclCreationResult] = field(default_factory=list)


@_message(ApiKey.DELETE_ACLS)
class DeleteAclsRequest(Request):
    filters: list[AclFilter] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return DeleteAclsResponse(filter_results=[
            DeleteAclsFilterResult(error_code, error_message, []) for _ in self.filters])


@_message(ApiKey.DELETE_ACLS)
class DeleteAclsResponse(Response):
    filter_results: list[DeleteAclsFilterResult] = field(default_factory=list)


# ================================================================================================
# The request-level error body (not tied to an API)
# ================================================================================================

REQUEST_ERROR_KEY = "request_error"


@dataclass(slots=True, kw_only=True)
class RequestErrorResponse:
    """A response saying the whole request failed: ``{"request_error": [code, message]}``."""

    error_code: Int16
    error_message: str | None = None

    def to_body(self, version: int = 0) -> dict[str, Any]:
        return {REQUEST_ERROR_KEY: [self.error_code, self.error_message]}

    @classmethod
    def from_body(cls, body: Any, version: int = 0) -> RequestErrorResponse:
        value = body.get(REQUEST_ERROR_KEY) if type(body) is dict else None
        if ((type(value) is not list and type(value) is not tuple) or len(value) != 2
                or type(value[0]) is not int or not -32768 <= value[0] <= 32767
                or not (value[1] is None or type(value[1]) is str)):
            raise InvalidRequestError(
                "RequestErrorResponse: field 'request_error': expected [int16, str or nil]")
        return cls(error_code=value[0], error_message=value[1])

    @staticmethod
    def is_request_error(body: Any) -> bool:
        return type(body) is dict and REQUEST_ERROR_KEY in body

    def exception(self) -> KafkaError:
        """The exception this error stands for (``errors.for_code``)."""
        return for_code(self.error_code, self.error_message)


# ================================================================================================
# DescribeCluster (60): KIP-700, the admin client's view of the cluster
# ================================================================================================


class DescribeClusterBroker(NamedTuple):
    broker_id: Int32
    host: str
    port: Int32
    rack: str | None = None


@_message(ApiKey.DESCRIBE_CLUSTER)
class DescribeClusterRequest(Request):
    include_cluster_authorized_operations: bool = False

    def error_response(self, error_code, error_message=None):
        return DescribeClusterResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.DESCRIBE_CLUSTER)
class DescribeClusterResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    cluster_id: str = ""
    controller_id: Int32 = -1
    brokers: list[DescribeClusterBroker] = field(default_factory=list)
    cluster_authorized_operations: Int32 = -(1 << 31)


# ================================================================================================
# Log dirs (KIP-113): DescribeLogDirs (35), a broker's data directories and the replicas in them;
# AlterReplicaLogDirs (34), moving replicas between them
# ================================================================================================


class DescribeLogDirsTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class DescribeLogDirsPartition(NamedTuple):
    partition: Int32
    size: Int64                                # bytes of the log's segments
    offset_lag: Int64                          # current: max(HW - LEO, 0); future: LEO behind
    is_future: bool                            # a future log (AlterReplicaLogDirs' copy)


class DescribeLogDirsTopicResult(NamedTuple):
    topic: str
    partitions: list[DescribeLogDirsPartition]


class DescribeLogDirsResult(NamedTuple):
    error_code: Int16                          # KAFKA_STORAGE_ERROR for an offline dir
    log_dir: str                               # absolute path
    topics: list[DescribeLogDirsTopicResult]


@_message(ApiKey.DESCRIBE_LOG_DIRS)
class DescribeLogDirsRequest(Request):
    topics: list[DescribeLogDirsTopic] | None = None     # None = every partition

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: no results at all (the response has no error field)
        return DescribeLogDirsResponse()


@_message(ApiKey.DESCRIBE_LOG_DIRS)
class DescribeLogDirsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[DescribeLogDirsResult] = field(default_factory=list)


class AlterReplicaLogDirTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class AlterReplicaLogDir(NamedTuple):
    path: str                                  # absolute, one of the broker's log.dirs
    topics: list[AlterReplicaLogDirTopic]


class AlterReplicaLogDirPartitionResult(NamedTuple):
    partition: Int32
    error_code: Int16


class AlterReplicaLogDirTopicResult(NamedTuple):
    topic: str
    partitions: list[AlterReplicaLogDirPartitionResult]


@_message(ApiKey.ALTER_REPLICA_LOG_DIRS)
class AlterReplicaLogDirsRequest(Request):
    dirs: list[AlterReplicaLogDir] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: one topic entry per topic of each dir, every partition
        return AlterReplicaLogDirsResponse(results=[
            AlterReplicaLogDirTopicResult(t.topic, [AlterReplicaLogDirPartitionResult(p, error_code)
                                                    for p in t.partitions])
            for d in self.dirs for t in d.topics])


@_message(ApiKey.ALTER_REPLICA_LOG_DIRS)
class AlterReplicaLogDirsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[AlterReplicaLogDirTopicResult] = field(default_factory=list)


# ================================================================================================
# SCRAM credentials through the brokers (KIP-554): DescribeUserScramCredentials (50) and
# AlterUserScramCredentials (51); finalized features (KIP-584): UpdateFeatures (57). Mechanisms are
# Kafka's ScramMechanism types: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
# ================================================================================================


class ScramCredentialInfo(NamedTuple):
    mechanism: Int8
    iterations: Int32


class DescribeUserScramCredentialsResult(NamedTuple):
    user: str
    error_code: Int16
    error_message: str | None
    credential_infos: list[ScramCredentialInfo]


@_message(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
class DescribeUserScramCredentialsRequest(Request):
    users: list[str] | None = None             # None or empty: every user with a credential

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: the top-level error only
        return DescribeUserScramCredentialsResponse(error_code=error_code,
                                                    error_message=error_message)


@_message(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
class DescribeUserScramCredentialsResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    results: list[DescribeUserScramCredentialsResult] = field(default_factory=list)


class ScramCredentialDeletion(NamedTuple):
    name: str
    mechanism: Int8


class ScramCredentialUpsertion(NamedTuple):
    name: str
    mechanism: Int8
    iterations: Int32
    salt: bytes
    salted_password: bytes                     # Hi(password, salt, iterations): never the password


class AlterUserScramCredentialsResult(NamedTuple):
    user: str
    error_code: Int16
    error_message: str | None


@_message(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
class AlterUserScramCredentialsRequest(Request):
    deletions: list[ScramCredentialDeletion] = field(default_factory=list)
    upsertions: list[ScramCredentialUpsertion] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: each user named, once, sorted, with the error
        users = sorted({d.name for d in self.deletions} | {u.name for u in self.upsertions})
        return AlterUserScramCredentialsResponse(results=[
            AlterUserScramCredentialsResult(user, error_code, error_message) for user in users])


@_message(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
class AlterUserScramCredentialsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[AlterUserScramCredentialsResult] = field(default_factory=list)


class FeatureUpdate(NamedTuple):
    feature: str
    max_version_level: Int16                   # < 1 with allow_downgrade: delete the feature
    allow_downgrade: bool


class UpdatableFeatureResult(NamedTuple):
    feature: str
    error_code: Int16
    error_message: str | None


@_message(ApiKey.UPDATE_FEATURES)
class UpdateFeaturesRequest(Request):
    timeout_ms: Int32 = 60000
    feature_updates: list[FeatureUpdate] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: the top-level error and no results
        return UpdateFeaturesResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.UPDATE_FEATURES)
class UpdateFeaturesResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    results: list[UpdatableFeatureResult] = field(default_factory=list)


# ================================================================================================
# CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken (40),
# DescribeDelegationToken (41): KIP-48 (server.delegation_token_apis)
# ================================================================================================


class TokenPrincipal(NamedTuple):
    """A principal as the token APIs carry it: type ("User") and name apart."""

    principal_type: str
    principal_name: str


class DescribedToken(NamedTuple):
    principal_type: str                   # the owner
    principal_name: str
    issue_timestamp_ms: Int64
    expiry_timestamp_ms: Int64
    max_timestamp_ms: Int64
    token_id: str
    hmac: bytes
    renewers: list[TokenPrincipal]


@_message(ApiKey.CREATE_DELEGATION_TOKEN)
class CreateDelegationTokenRequest(Request):
    renewers: list[TokenPrincipal] = field(default_factory=list)
    max_lifetime_ms: Int64 = -1           # <= 0: the broker's delegation.token.max.lifetime.ms

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse names the anonymous principal
        return CreateDelegationTokenResponse(error_code=error_code)


@_message(ApiKey.CREATE_DELEGATION_TOKEN)
class CreateDelegationTokenResponse(Response):
    error_code: Int16 = NONE
    principal_type: str = "User"          # the owner: the requesting principal
    principal_name: str = "ANONYMOUS"
    issue_timestamp_ms: Int64 = -1
    expiry_timestamp_ms: Int64 = -1
    max_timestamp_ms: Int64 = -1
    token_id: str = ""
    hmac: bytes = b""


@_message(ApiKey.RENEW_DELEGATION_TOKEN)
class RenewDelegationTokenRequest(Request):
    hmac: bytes = b""
    renew_period_ms: Int64 = -1           # < 0: the broker's delegation.token.expiry.time.ms

    def error_response(self, error_code, error_message=None):
        return RenewDelegationTokenResponse(error_code=error_code)


@_message(ApiKey.RENEW_DELEGATION_TOKEN)
class RenewDelegationTokenResponse(Response):
    error_code: Int16 = NONE
    expiry_timestamp_ms: Int64 = -1


@_message(ApiKey.EXPIRE_DELEGATION_TOKEN)
class ExpireDelegationTokenRequest(Request):
    hmac: bytes = b""
    expiry_time_period_ms: Int64 = -1     # < 0: expire now

    def error_response(self, error_code, error_message=None):
        return ExpireDelegationTokenResponse(error_code=error_code)


@_message(ApiKey.EXPIRE_DELEGATION_TOKEN)
class ExpireDelegationTokenResponse(Response):
    error_code: Int16 = NONE
    expiry_timestamp_ms: Int64 = -1


@_message(ApiKey.DESCRIBE_DELEGATION_TOKEN)
class DescribeDelegationTokenRequest(Request):
    owners: list[TokenPrincipal] | None = None     # None: every owner; []: none

    def error_response(self, error_code, error_message=None):
        return DescribeDelegationTokenResponse(error_code=error_code)


@_message(ApiKey.DESCRIBE_DELEGATION_TOKEN)
class DescribeDelegationTokenResponse(Response):
    error_code: Int16 = NONE
    tokens: list[DescribedToken] = field(default_factory=list)


# ================================================================================================
# Reassignment and election through the brokers (issue 23): ElectLeaders (43, KIP-460),
# AlterPartitionReassignments (45) and ListPartitionReassignments (46) (KIP-455). All three are
# served by the active controller; the per-partition errors are Kafka 2.8's.
# ================================================================================================

ELECTION_PREFERRED = 0               # Kafka's ElectionType
ELECTION_UNCLEAN = 1


class ElectLeadersTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class ElectLeadersPartitionResult(NamedTuple):
    partition: Int32
    error_code: Int16
    error_message: str | None = None


class ElectLeadersTopicResult(NamedTuple):
    topic: str
    partitions: list[ElectLeadersPartitionResult]


@_message(ApiKey.ELECT_LEADERS)
class ElectLeadersRequest(Request):
    election_type: Int8 = ELECTION_PREFERRED
    topic_partitions: list[ElectLeadersTopic] | None = None   # None: every partition
    timeout_ms: Int32 = 60000

    def error_response(self, error_code, error_message=None):
        return ElectLeadersResponse(error_code=error_code, results=[
            ElectLeadersTopicResult(t.topic, [
                ElectLeadersPartitionResult(p, error_code, error_message) for p in t.partitions])
            for t in self.topic_partitions or ()])


@_message(ApiKey.ELECT_LEADERS)
class ElectLeadersResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    results: list[ElectLeadersTopicResult] = field(default_factory=list)


class ReassignablePartition(NamedTuple):
    partition: Int32
    replicas: list[Int32] | None             # the target; None cancels a reassignment


class ReassignableTopic(NamedTuple):
    topic: str
    partitions: list[ReassignablePartition]


class ReassignablePartitionResult(NamedTuple):
    partition: Int32
    error_code: Int16
    error_message: str | None = None


class ReassignableTopicResult(NamedTuple):
    topic: str
    partitions: list[ReassignablePartitionResult]


@_message(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
class AlterPartitionReassignmentsRequest(Request):
    topics: list[ReassignableTopic] = field(default_factory=list)
    timeout_ms: Int32 = 60000

    def error_response(self, error_code, error_message=None):
        return AlterPartitionReassignmentsResponse(
            error_code=error_code, error_message=error_message, results=[
                ReassignableTopicResult(t.topic, [
                    ReassignablePartitionResult(p.partition, error_code, error_message)
                    for p in t.partitions]) for t in self.topics])


@_message(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
class AlterPartitionReassignmentsResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    results: list[ReassignableTopicResult] = field(default_factory=list)


class ListReassignmentsTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class OngoingPartitionReassignment(NamedTuple):
    partition: Int32
    replicas: list[Int32]                    # target first, then the replicas leaving
    adding_replicas: list[Int32]
    removing_replicas: list[Int32]


class OngoingTopicReassignment(NamedTuple):
    topic: str
    partitions: list[OngoingPartitionReassignment]


@_message(ApiKey.LIST_PARTITION_REASSIGNMENTS)
class ListPartitionReassignmentsRequest(Request):
    topics: list[ListReassignmentsTopic] | None = None       # None: every reassignment
    timeout_ms: Int32 = 60000

    def error_response(self, error_code, error_message=None):
        return ListPartitionReassignmentsResponse(
            error_code=error_code, error_message=error_message, topics=[
                OngoingTopicReassignment(t.topic, [
                    OngoingPartitionReassignment(p, [], [], []) for p in t.partitions])
                for t in self.topics or ()])


@_message(ApiKey.LIST_PARTITION_REASSIGNMENTS)
class ListPartitionReassignmentsResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    topics: list[OngoingTopicReassignment] = field(default_factory=list)


# ================================================================================================
# DescribeClientQuotas (48), AlterClientQuotas (49): KIP-546 (server.quota_apis)
# ================================================================================================

QUOTA_MATCH_EXACT, QUOTA_MATCH_DEFAULT, QUOTA_MATCH_ANY = 0, 1, 2


class QuotaEntityPart(NamedTuple):
    entity_type: str                           # "user", "client-id" or "ip"
    entity_name: str | None                    # None: the default entity of that type


class QuotaFilterComponent(NamedTuple):
    entity_type: str
    match_type: Int8                           # QUOTA_MATCH_EXACT / _DEFAULT / _ANY
    match: str | None                          # the name, for an exact match


class QuotaValue(NamedTuple):
    key: str
    value: float


class QuotaEntry(NamedTuple):
    entity: list[QuotaEntityPart]
    values: list[QuotaValue]


@_message(ApiKey.DESCRIBE_CLIENT_QUOTAS)
class DescribeClientQuotasRequest(Request):
    components: list[QuotaFilterComponent] = field(default_factory=list)
    strict: bool = False                       # only entities with no other entity types

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: the top-level error, no entries (null)
        return DescribeClientQuotasResponse(error_code=error_code, error_message=error_message,
                                            entries=None)


@_message(ApiKey.DESCRIBE_CLIENT_QUOTAS)
class DescribeClientQuotasResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    entries: list[QuotaEntry] | None = field(default_factory=list)


class QuotaOp(NamedTuple):
    key: str
    value: float
    remove: bool                               # True: delete the key (value ignored)


class QuotaAlteration(NamedTuple):
    entity: list[QuotaEntityPart]
    ops: list[QuotaOp]


class QuotaAlterationResult(NamedTuple):
    error_code: Int16
    error_message: str | None
    entity: list[QuotaEntityPart]


#: Kafka's Errors.message of the errors a whole AlterClientQuotas may fail with: its
#: getErrorResponse answers that message, whatever the exception said
_KAFKA_ERROR_MESSAGES = {
    -1: "The server experienced an unexpected error when processing the request.",
    31: "Cluster authorization failed.",
    35: "The version of API is not supported.",
    42: "This most likely occurs because of a request being malformed by the client library or "
        "the message was sent to an incompatible broker. See the broker logs for more details.",
}


@_message(ApiKey.ALTER_CLIENT_QUOTAS)
class AlterClientQuotasRequest(Request):
    entries: list[QuotaAlteration] = field(default_factory=list)
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        message = _KAFKA_ERROR_MESSAGES.get(error_code, error_message)
        return AlterClientQuotasResponse(entries=[
            QuotaAlterationResult(error_code, message, list(e.entity)) for e in self.entries])


@_message(ApiKey.ALTER_CLIENT_QUOTAS)
class AlterClientQuotasResponse(Response):
    throttle_time_ms: Int32 = 0
    entries: list[QuotaAlterationResult] = field(default_factory=list)


# ================================================================================================
# Transactions (KIP-98, KIP-447): AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
# WriteTxnMarkers (27), TxnOffsetCommit (28). Field names are Kafka 2.8's JSON schema names.
# ================================================================================================


class AddPartitionsToTxnTopic(NamedTuple):
    name: str
    partitions: list[Int32]


class AddPartitionsToTxnPartitionResult(NamedTuple):
    partition_index: Int32
    error_code: Int16


class AddPartitionsToTxnTopicResult(NamedTuple):
    name: str
    results: list[AddPartitionsToTxnPartitionResult]


@_message(ApiKey.ADD_PARTITIONS_TO_TXN)
class AddPartitionsToTxnRequest(Request):
    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    topics: list[AddPartitionsToTxnTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse answers each distinct partition once, a topic named twice
        # in one entry
        by_topic: dict[str, dict[int, None]] = {}
        for t in self.topics:
            by_topic.setdefault(t.name, {}).update(dict.fromkeys(t.partitions))
        return AddPartitionsToTxnResponse(results=[
            AddPartitionsToTxnTopicResult(name, [AddPartitionsToTxnPartitionResult(p, error_code)
                                                 for p in partitions])
            for name, partitions in by_topic.items()])


@_message(ApiKey.ADD_PARTITIONS_TO_TXN)
class AddPartitionsToTxnResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[AddPartitionsToTxnTopicResult] = field(default_factory=list)


@_message(ApiKey.ADD_OFFSETS_TO_TXN)
class AddOffsetsToTxnRequest(Request):
    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    group_id: str

    def error_response(self, error_code, error_message=None):
        return AddOffsetsToTxnResponse(error_code=error_code)


@_message(ApiKey.ADD_OFFSETS_TO_TXN)
class AddOffsetsToTxnResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE


@_message(ApiKey.END_TXN)
class EndTxnRequest(Request):
    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    committed: bool                      # True: commit, False: abort

    def error_response(self, error_code, error_message=None):
        return EndTxnResponse(error_code=error_code)


@_message(ApiKey.END_TXN)
class EndTxnResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE


class WritableTxnMarkerTopic(NamedTuple):
    name: str
    partition_indexes: list[Int32]


class WritableTxnMarker(NamedTuple):
    producer_id: Int64
    producer_epoch: Int16
    transaction_result: bool             # True: COMMIT, False: ABORT
    topics: list[WritableTxnMarkerTopic]
    coordinator_epoch: Int32


class WritableTxnMarkerPartitionResult(NamedTuple):
    partition_index: Int32
    error_code: Int16


class WritableTxnMarkerTopicResult(NamedTuple):
    name: str
    partitions: list[WritableTxnMarkerPartitionResult]


class WritableTxnMarkerResult(NamedTuple):
    producer_id: Int64
    topics: list[WritableTxnMarkerTopicResult]


@_message(ApiKey.WRITE_TXN_MARKERS)
class WriteTxnMarkersRequest(Request):
    """Sent by a transaction coordinator to each partition leader of a finishing transaction."""
    markers: list[WritableTxnMarker] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return WriteTxnMarkersResponse(markers=[
            WritableTxnMarkerResult(marker.producer_id, [
                WritableTxnMarkerTopicResult(t.name, [
                    WritableTxnMarkerPartitionResult(p, error_code)
                    for p in t.partition_indexes])
                for t in marker.topics])
            for marker in self.markers])


@_message(ApiKey.WRITE_TXN_MARKERS)
class WriteTxnMarkersResponse(Response):
    markers: list[WritableTxnMarkerResult] = field(default_factory=list)


class TxnOffsetCommitRequestPartition(NamedTuple):
    partition_index: Int32
    committed_offset: Int64
    committed_leader_epoch: Int32 = -1
    committed_metadata: str | None = None


class TxnOffsetCommitRequestTopic(NamedTuple):
    name: str
    partitions: list[TxnOffsetCommitRequestPartition]


class TxnOffsetCommitResponsePartition(NamedTuple):
    partition_index: Int32
    error_code: Int16


class TxnOffsetCommitResponseTopic(NamedTuple):
    name: str
    partitions: list[TxnOffsetCommitResponsePartition]


@_message(ApiKey.TXN_OFFSET_COMMIT)
class TxnOffsetCommitRequest(Request):
    transactional_id: str
    group_id: str
    producer_id: Int64
    producer_epoch: Int16
    # KIP-447 (Kafka v3+): the consumer's group generation, fenced like OffsetCommit's
    generation_id: Int32 = -1
    member_id: str = ""
    group_instance_id: str | None = None
    topics: list[TxnOffsetCommitRequestTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return TxnOffsetCommitResponse(topics=[
            TxnOffsetCommitResponseTopic(t.name, [
                TxnOffsetCommitResponsePartition(p.partition_index, error_code)
                for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.TXN_OFFSET_COMMIT)
class TxnOffsetCommitResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[TxnOffsetCommitResponseTopic] = field(default_factory=list)


# ================================================================================================
# DescribeProducers (61, KIP-664): a partition's active producers, as its replica knows them.
# Field names are Kafka 2.8's JSON schema names.
# ================================================================================================


class DescribeProducersTopic(NamedTuple):
    name: str
    partition_indexes: list[Int32]


class ProducerState(NamedTuple):
    """One producer of a partition (Kafka's DescribeProducersResponseData.ProducerState)."""
    producer_id: Int64
    producer_epoch: Int32
    last_sequence: Int32                 # -1: no batch of this epoch kept
    last_timestamp: Int64                # -1: none
    coordinator_epoch: Int32             # of its last transaction marker, -1 for none
    current_txn_start_offset: Int64      # -1: no open transaction


class DescribeProducersPartitionResponse(NamedTuple):
    partition_index: Int32
    error_code: Int16
    error_message: str | None = None
    active_producers: list[ProducerState] = []


class DescribeProducersTopicResponse(NamedTuple):
    name: str
    partitions: list[DescribeProducersPartitionResponse]


@_message(ApiKey.DESCRIBE_PRODUCERS)
class DescribeProducersRequest(Request):
    topics: list[DescribeProducersTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse sets the code only, no message
        return DescribeProducersResponse(topics=[
            DescribeProducersTopicResponse(t.name, [
                DescribeProducersPartitionResponse(p, error_code)
                for p in t.partition_indexes])
            for t in self.topics])


@_message(ApiKey.DESCRIBE_PRODUCERS)
class DescribeProducersResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[DescribeProducersTopicResponse] = field(default_factory=list)


# ================================================================================================
# Registry
# ================================================================================================

_PAIRS: tuple[tuple[type[Request], type[Response]], ...] = (
    (ProduceRequest, ProduceResponse),
    (FetchRequest, FetchResponse),
    (ListOffsetsRequest, ListOffsetsResponse),
    (MetadataRequest, MetadataResponse),
    (LeaderAndIsrRequest, LeaderAndIsrResponse),
    (StopReplicaRequest, StopReplicaResponse),
    (UpdateMetadataRequest, UpdateMetadataResponse),
    (ControlledShutdownRequest, ControlledShutdownResponse),
    (ApiVersionsRequest, ApiVersionsResponse),
    (CreateTopicsRequest, CreateTopicsResponse),
    (DeleteTopicsRequest, DeleteTopicsResponse),
    (InitProducerIdRequest, InitProducerIdResponse),
    (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    (DescribeConfigsRequest, DescribeConfigsResponse),
    (CreatePartitionsRequest, CreatePartitionsResponse),
    (AlterConfigsRequest, AlterConfigsResponse),
    (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    (DeleteRecordsRequest, DeleteRecordsResponse),
    (FindCoordinatorRequest, FindCoordinatorResponse),
    (JoinGroupRequest, JoinGroupResponse),
    (HeartbeatRequest, HeartbeatResponse),
    (LeaveGroupRequest, LeaveGroupResponse),
    (SyncGroupRequest, SyncGroupResponse),
    (DescribeGroupsRequest, DescribeGroupsResponse),
    (ListGroupsRequest, ListGroupsResponse),
    (OffsetCommitRequest, OffsetCommitResponse),
    (OffsetFetchRequest, OffsetFetchResponse),
    (DeleteGroupsRequest, DeleteGroupsResponse),
    (OffsetDeleteRequest, OffsetDeleteResponse),
    (SaslHandshakeRequest, SaslHandshakeResponse),
    (SaslAuthenticateRequest, SaslAuthenticateResponse),
    (DescribeAclsRequest, DescribeAclsResponse),
    (CreateAclsRequest, CreateAclsResponse),
    (DeleteAclsRequest, DeleteAclsResponse),
    (DescribeClusterRequest, DescribeClusterResponse),
    (ElectLeadersRequest, ElectLeadersResponse),
    (AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse),
    (ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse),
    (CreateDelegationTokenRequest, CreateDelegationTokenResponse),
    (RenewDelegationTokenRequest, RenewDelegationTokenResponse),
    (ExpireDelegationTokenRequest, ExpireDelegationTokenResponse),
    (DescribeDelegationTokenRequest, DescribeDelegationTokenResponse),
    (DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse),
    (AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse),
    (UpdateFeaturesRequest, UpdateFeaturesResponse),
    (DescribeClientQuotasRequest, DescribeClientQuotasResponse),
    (AlterClientQuotasRequest, AlterClientQuotasResponse),
    (DescribeLogDirsRequest, DescribeLogDirsResponse),
    (AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse),
    (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    (EndTxnRequest, EndTxnResponse),
    (WriteTxnMarkersRequest, WriteTxnMarkersResponse),
    (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    (DescribeProducersRequest, DescribeProducersResponse),
)

REQUESTS: dict[int, type[Request]] = {req.API_KEY: req for req, _ in _PAIRS}
RESPONSES: dict[int, type[Response]] = {resp.API_KEY: resp for _, resp in _PAIRS}

for _req, _resp in _PAIRS:
    assert _req.API_KEY == _resp.API_KEY, (_req, _resp)
    assert (_req.MIN_VERSION, _req.MAX_VERSION) == (_resp.MIN_VERSION, _resp.MAX_VERSION)
assert set(REQUESTS) == set(ApiKey)
del _req, _resp


def _class_for(table: dict[int, type], api_key: int, api_version: int | None) -> type:
    cls = table.get(api_key)
    if cls is None:
        raise UnsupportedVersionError(f"unknown API key {api_key}")
    if api_version is not None and not cls.MIN_VERSION <= api_version <= cls.MAX_VERSION:
        raise UnsupportedVersionError(
            f"{ApiKey(api_key).name} version {api_version} is not supported "
            f"(supported: {cls.MIN_VERSION}..{cls.MAX_VERSION})")
    return cls


def request_class_for(api_key: int, api_version: int | None = None) -> type[Request]:
    """The request class; UnsupportedVersionError for an unknown key or a version out of range."""
    return _class_for(REQUESTS, api_key, api_version)


def response_class_for(api_key: int, api_version: int | None = None) -> type[Response]:
    """The response class; UnsupportedVersionError for an unknown key or a version out of range."""
    return _class_for(RESPONSES, api_key, api_version)


def supported_versions() -> list[ApiVersionRange]:
    """What an ApiVersions response lists, sorted by API key."""
    return [ApiVersionRange(int(k), cls.MIN_VERSION, cls.MAX_VERSION)
            for k, cls in sorted(REQUESTS.items())]
