"""``/log_dir_event_notification/log_dir_event_<seq>`` (sequential): a broker's log dir failed.

Payload (Kafka's LogDirEventNotificationSequenceZNode): ``{"version":1,"broker":3,"event":1}``,
event 1 being a log dir failure, the only kind there is. A broker writes one when one of its data
dirs goes offline; the controller reads them, asks that broker (LeaderAndIsr) which of its replicas
are offline, moves their leadership and deletes the notifications.
"""

from __future__ import annotations

from dataclasses import dataclass

from zk_schema._codec import dump, int_field, load_object, segment

LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE_EVENT = 1


def log_dir_event_prefix_path() -> str:
    """The prefix to create a sequential notification with."""
    return f"{LOG_DIR_EVENT_NOTIFICATION_PATH}/{LOG_DIR_EVENT_PREFIX}"


def log_dir_event_path(child: str) -> str:
    return f"{LOG_DIR_EVENT_NOTIFICATION_PATH}/{segment(child, 'log dir event notification')}"


@dataclass(frozen=True)
class LogDirEventNotification:
    broker_id: int
    event: int = LOG_DIR_FAILURE_EVENT
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({"version": 1, "broker": self.broker_id, "event": self.event})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "LogDirEventNotification":
        what = LOG_DIR_EVENT_NOTIFICATION_PATH
        obj = load_object(data, what)
        return cls(broker_id=int_field(obj, "broker", what),
                   event=int_field(obj, "event", what, default=LOG_DIR_FAILURE_EVENT),
                   zk_version=zk_version)
