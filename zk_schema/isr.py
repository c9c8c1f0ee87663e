"""``/isr_change_notification/isr_change_<seq>`` (sequential): partitions whose ISR a leader changed.

Payload: ``{"version":1,"partitions":[{"topic":"t","partition":0}]}``. The controller reads and
deletes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from zk_schema._codec import dump, load_object, segment, topic_partition_list

ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"


def isr_change_notification_path() -> str:
    return ISR_CHANGE_NOTIFICATION_PATH


def isr_change_prefix_path() -> str:
    """The prefix to create a sequential notification with."""
    return f"{ISR_CHANGE_NOTIFICATION_PATH}/{ISR_CHANGE_PREFIX}"


def isr_change_path(child: str) -> str:
    return f"{ISR_CHANGE_NOTIFICATION_PATH}/{segment(child, 'isr change notification')}"


@dataclass(frozen=True)
class IsrChangeNotification:
    partitions: tuple[tuple[str, int], ...]
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({"version": 1, "partitions": [
            {"topic": t, "partition": p} for t, p in self.partitions
        ]})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "IsrChangeNotification":
        obj = load_object(data, ISR_CHANGE_NOTIFICATION_PATH)
        return cls(partitions=topic_partition_list(obj, ISR_CHANGE_NOTIFICATION_PATH),
                   zk_version=zk_version)
