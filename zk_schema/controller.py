"""``/controller`` (ephemeral: who is the controller) and ``/controller_epoch`` (the epoch as text).

``/controller``: ``{"version":1,"brokerid":1,"timestamp":"1700000000000"}``.
``/controller_epoch``: e.g. ``b"3"``. Kafka creates it with the initial epoch 0; the first elected
controller moves it to 1. Every controller write checks its zkVersion (fencing).
"""

from __future__ import annotations

from dataclasses import dataclass

from zk_schema._codec import as_int, dump, int_field, load_int_text, load_object

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
INITIAL_CONTROLLER_EPOCH = 0


def controller_path() -> str:
    return CONTROLLER_PATH


def controller_epoch_path() -> str:
    return CONTROLLER_EPOCH_PATH


@dataclass(frozen=True)
class ControllerRegistration:
    broker_id: int
    timestamp_ms: int = 0
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({"version": 1, "brokerid": self.broker_id, "timestamp": str(self.timestamp_ms)})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "ControllerRegistration":
        obj = load_object(data, CONTROLLER_PATH)
        ts = obj.get("timestamp", 0)
        return cls(
            broker_id=int_field(obj, "brokerid", CONTROLLER_PATH),
            timestamp_ms=as_int(ts, CONTROLLER_PATH, "timestamp") if ts is not None else 0,
            zk_version=zk_version,
        )


@dataclass(frozen=True)
class ControllerEpoch:
    """The controller epoch and the zkVersion of ``/controller_epoch`` (what fenced writes check)."""

    epoch: int
    zk_version: int | None = None

    def encode(self) -> bytes:
        return str(int(self.epoch)).encode("ascii")

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "ControllerEpoch":
        return cls(epoch=load_int_text(data, CONTROLLER_EPOCH_PATH), zk_version=zk_version)

