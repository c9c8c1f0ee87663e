"""``TopicPartition``: the one (topic, partition) type of the whole package.

A NamedTuple, so it is cheap, hashable, unpacks like a tuple and compares equal to a plain
``(topic, partition)`` tuple: the log, the controller, the coordinator and ZooKeeper code may key
their maps with either, and the clients hand it to users under kafka-python's name. The
partition's annotation carries its wire width (a 32-bit integer) for kafkalite's msgpack
protocol, which checks every field it reads (kafkalite.protocol.messages).
"""

from __future__ import annotations

from typing import Annotated, NamedTuple

INT32 = "int32"      # read by kafkalite.protocol.messages as its Int32 validator


class TopicPartition(NamedTuple):
    topic: str
    partition: Annotated[int, INT32]

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
