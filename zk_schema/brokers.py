"""``/brokers/ids/<id>`` (ephemeral broker registrations) and ``/brokers/seqid``.

Registration payload, version 5 (Kafka's BrokerIdZNode)::

    {"version":5,"host":"h","port":9092,"endpoints":["PLAINTEXT://h:9092"],"rack":"r",
     "jmx_port":-1,"timestamp":"1700000000000","features":{},
     "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"}}

``rack`` is left out when the broker has none (as Kafka does). The znode's czxid is the broker epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zk_schema._codec import (
    SchemaError, as_int, dict_field, dump, field as get_field, int_field, load_object, str_field,
)

BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
BROKER_SEQID_PATH = "/brokers/seqid"

REGISTRATION_VERSION = 5


def broker_ids_path() -> str:
    return BROKER_IDS_PATH


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{int(broker_id)}"


def broker_seqid_path() -> str:
    return BROKER_SEQID_PATH


def parse_broker_id(child: str) -> int:
    """The broker id from a child name of /brokers/ids (or a full path)."""
    name = child.rstrip("/").rsplit("/", 1)[-1]
    try:
        return int(name)
    except ValueError:
        raise SchemaError(f"{BROKER_IDS_PATH}: {name!r} is not a broker id") from None


def format_endpoint(listener: str, host: str, port: int) -> str:
    return f"{listener}://{host}:{int(port)}"


def parse_endpoint(endpoint: str) -> tuple[str, str, int]:
    """``"PLAINTEXT://h:9092"`` -> ``("PLAINTEXT", "h", 9092)`` (IPv6 hosts in brackets are kept)."""
    listener, sep, rest = endpoint.partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or not colon or not listener:
        raise SchemaError(f"bad endpoint {endpoint!r}: expected LISTENER://host:port")
    try:
        return listener, host, int(port)
    except ValueError:
        raise SchemaError(f"bad endpoint {endpoint!r}: port is not a number") from None


@dataclass(frozen=True)
class BrokerRegistration:
    """One broker's registration. ``broker_epoch`` is the znode's czxid (known after a read)."""

    broker_id: int
    host: str
    port: int
    endpoints: tuple[str, ...] = ()
    rack: str | None = None
    timestamp_ms: int = 0
    jmx_port: int = -1
    features: dict[str, Any] = field(default_factory=dict)
    listener_security_protocol_map: dict[str, str] = field(default_factory=dict)
    broker_epoch: int | None = None
    zk_version: int | None = None

    @classmethod
    def plaintext(cls, broker_id: int, host: str, port: int, *, rack: str | None = None,
                  timestamp_ms: int = 0) -> "BrokerRegistration":
        """A registration with one PLAINTEXT listener (the usual case)."""
        return cls(broker_id=broker_id, host=host, port=port,
                   endpoints=(format_endpoint("PLAINTEXT", host, port),), rack=rack,
                   timestamp_ms=timestamp_ms,
                   listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"})

    def endpoint(self, listener: str = "PLAINTEXT") -> tuple[str, int] | None:
        """(host, port) of the named listener, or None."""
        for ep in self.endpoints:
            name, host, port = parse_endpoint(ep)
            if name == listener:
                return host, port
        return None

    def encode(self) -> bytes:
        obj: dict[str, Any] = {
            "version": REGISTRATION_VERSION,
            "host": self.host,
            "port": self.port,
            "endpoints": list(self.endpoints),
            "jmx_port": self.jmx_port,
            "timestamp": str(self.timestamp_ms),
            "features": dict(self.features),
            "listener_security_protocol_map": dict(self.listener_security_protocol_map),
        }
        if self.rack is not None:
            obj["rack"] = self.rack
        return dump(obj)

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None, *, broker_id: int = -1,
               broker_epoch: int | None = None) -> "BrokerRegistration":
        what = f"{BROKER_IDS_PATH}/{broker_id}"
        obj = load_object(data, what)
        int_field(obj, "version", what)
        endpoints = get_field(obj, "endpoints", what) if "endpoints" in obj else []
        if not isinstance(endpoints, list) or not all(isinstance(e, str) for e in endpoints):
            raise SchemaError(f"{what}: field 'endpoints' must be a list of strings")
        for ep in endpoints:
            parse_endpoint(ep)
        host = str_field(obj, "host", what, default=None, nullable=True)
        port = int_field(obj, "port", what, default=-1)
        if host is None and endpoints:  # Kafka writes host null when there is no PLAINTEXT listener
            _, host, port = parse_endpoint(endpoints[0])
        if host is None:
            raise SchemaError(f"{what}: neither 'host' nor 'endpoints' given")
        timestamp = obj.get("timestamp", 0)
        lspm = dict_field(obj, "listener_security_protocol_map", what, default={})
        return cls(
            broker_id=broker_id,
            host=host,
            port=port,
            endpoints=tuple(endpoints),
            rack=str_field(obj, "rack", what, default=None, nullable=True),
            timestamp_ms=as_int(timestamp, what, "timestamp") if timestamp is not None else 0,
            jmx_port=int_field(obj, "jmx_port", what, default=-1),
            features=dict(dict_field(obj, "features", what, default={})),
            listener_security_protocol_map={str(k): str(v) for k, v in lspm.items()},
            broker_epoch=broker_epoch,
            zk_version=zk_version,
        )
