"""Fetch v0 to v3, the versions of clients that read only message formats v0 and v1, as kio
schema classes (kio, which follows Kafka 4.0, dropped them: KIP-896).

The classes are what kio's generator makes of Kafka 2.8's ``FetchRequest.json`` and
``FetchResponse.json`` at these versions (request: v3 adds ``max_bytes``; response: v1 adds
``throttle_time``), built here with ``dataclasses.make_dataclass`` in kio's shape (field
metadata ``kafka_type``, the ClassVars its readers and writers look at), so kio's own readers
and writers encode and decode them. ``codec.request_class`` / ``response_class`` fall back to
them; the broker down-converts the records of such a fetch (``server.down_convert``).
"""

from __future__ import annotations

from dataclasses import field, make_dataclass

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.types import BrokerId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64

__all__ = ["VERSIONS", "request_schema", "response_schema"]

VERSIONS = range(0, 4)
_FETCH = i16(1)


def _typed(kafka_type: str, **kw):
    return field(metadata={"kafka_type": kafka_type}, **kw)


def _entity(name: str, version: int, kind, header, fields: list):
    namespace = {"__type__": kind, "__version__": i16(version), "__flexible__": False,
                 "__api_key__": _FETCH, "__header_schema__": header,
                 "__module__": __name__}
    return make_dataclass(name, fields, namespace=namespace, frozen=True, slots=True,
                          kw_only=True)


def _request(version: int) -> type:
    nested = EntityType.nested
    partition = _entity("FetchPartition", version, nested, RequestHeader, [
        ("partition", i32, _typed("int32")),
        ("fetch_offset", i64, _typed("int64")),
        ("partition_max_bytes", i32, _typed("int32"))])
    topic = _entity("FetchTopic", version, nested, RequestHeader, [
        ("topic", TopicName, _typed("string")),
        ("partitions", tuple[partition, ...])])
    fields = [("replica_id", BrokerId, _typed("int32")),
              ("max_wait", i32Timedelta, _typed("timedelta_i32")),
              ("min_bytes", i32, _typed("int32"))]
    if version >= 3:
        fields.append(("max_bytes", i32, _typed("int32")))
    fields.append(("topics", tuple[topic, ...]))
    return _entity("FetchRequest", version, EntityType.request, RequestHeader, fields)


def _response(version: int) -> type:
    nested = EntityType.nested
    partition = _entity("PartitionData", version, nested, ResponseHeader, [
        ("partition_index", i32, _typed("int32")),
        ("error_code", ErrorCode, _typed("error_code")),
        ("high_watermark", i64, _typed("int64")),
        ("records", Records | None, _typed("records"))])
    topic = _entity("FetchableTopicResponse", version, nested, ResponseHeader, [
        ("topic", TopicName, _typed("string")),
        ("partitions", tuple[partition, ...])])
    fields = [("throttle_time", i32Timedelta, _typed("timedelta_i32"))] if version >= 1 else []
    fields.append(("responses", tuple[topic, ...]))
    return _entity("FetchResponse", version, EntityType.response, ResponseHeader, fields)


_REQUESTS = {v: _request(v) for v in VERSIONS}
_RESPONSES = {v: _response(v) for v in VERSIONS}


def request_schema(version: int) -> type:
    return _REQUESTS[version]


def response_schema(version: int) -> type:
    return _RESPONSES[version]
