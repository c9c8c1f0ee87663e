"""``/latest_producer_id_block``: the last block of producer ids a broker claimed.

Payload: ``{"version":1,"broker":B,"block_start":"0","block_end":"999"}`` (bounds as strings, as in
Kafka). Brokers claim the next block of 1000 with a conditional update on the znode's zkVersion.
The znode exists empty until the first claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from zk_schema._codec import SchemaError, as_int, dump, field, int_field, load_object

LATEST_PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
PRODUCER_ID_BLOCK_SIZE = 1000


def latest_producer_id_block_path() -> str:
    return LATEST_PRODUCER_ID_BLOCK_PATH


@dataclass(frozen=True)
class ProducerIdBlock:
    broker: int
    block_start: int
    block_end: int
    zk_version: int | None = None

    @classmethod
    def first(cls, broker: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> "ProducerIdBlock":
        return cls(broker=broker, block_start=0, block_end=size - 1)

    def next(self, broker: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> "ProducerIdBlock":
        """The block after this one, claimed by ``broker``."""
        return ProducerIdBlock(broker=broker, block_start=self.block_end + 1,
                               block_end=self.block_end + size)

    def encode(self) -> bytes:
        return dump({"version": 1, "broker": self.broker,
                     "block_start": str(self.block_start), "block_end": str(self.block_end)})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "ProducerIdBlock":
        what = LATEST_PRODUCER_ID_BLOCK_PATH
        obj = load_object(data, what)
        start = as_int(field(obj, "block_start", what), what, "block_start")
        end = as_int(field(obj, "block_end", what), what, "block_end")
        if end < start:
            raise SchemaError(f"{what}: block_end {end} is before block_start {start}")
        return cls(broker=int_field(obj, "broker", what), block_start=start, block_end=end,
                   zk_version=zk_version)
