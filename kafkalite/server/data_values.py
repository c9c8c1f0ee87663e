"""The plain values the ReplicaManager's produce and fetch paths take and give back, as Kafka's
ReplicaManager does (``FetchParams``, ``FetchRequest.PartitionData``, ``PartitionResponse``,
``FetchPartitionData``): no request or response class of either wire protocol reaches the data
layer. The handlers (``server.data_apis``) build these from the model request and the model
response from them.

A partition is a ``TopicPartition`` or a plain ``(topic, partition)`` tuple (they compare
equal), the key the ReplicaManager's ``partitions`` and purgatories already use. Record data is
the batch bytes as received or as stored: never copied or decoded on the way through.
"""

from __future__ import annotations

from typing import NamedTuple


__all__ = ["FetchParams", "PartitionData", "FetchResult", "ProduceResult"]

CONSUMER_REPLICA_ID = -1


class FetchParams(NamedTuple):
    """What a fetch asks for as a whole (Kafka's FetchParams)."""
    replica_id: int = CONSUMER_REPLICA_ID     # a follower's broker id, -1 for consumers
    max_wait_ms: int = 0
    min_bytes: int = 1
    max_bytes: int = 0x7FFFFFFF
    isolation_level: int = 0                  # 0 read uncommitted, 1 read committed
    # KIP-392: the consumer's rack (Fetch v11+, "" for none); None: no client metadata (older
    # Fetch, followers), which reads from the leader only
    client_rack: str | None = None


class PartitionData(NamedTuple):
    """What a fetch asks of one partition (Kafka's FetchRequest.PartitionData)."""
    fetch_offset: int
    log_start_offset: int = -1                # a follower's; -1 from consumers
    max_bytes: int = 1 << 20
    current_leader_epoch: int = -1            # -1: unknown, no fencing check


class FetchResult(NamedTuple):
    """One partition's fetch answer. The field order is the model's ``FetchPartitionResponse``
    after its partition, so the handler builds that with ``(partition, *result)``."""
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    # None for read_uncommitted; read_committed: ((producer id, first offset), ...) of the aborted
    # transactions overlapping the returned records
    aborted_transactions: tuple | list | None = None
    preferred_read_replica: int = -1          # KIP-392: the leader names another replica


class ProduceResult(NamedTuple):
    """One partition's append answer (Kafka's PartitionResponse)."""
    error_code: int
    error_message: str | None = None
    base_offset: int = -1
    log_append_time: int = -1                 # -1 on CreateTime topics
    log_start_offset: int = -1
    record_errors: tuple[tuple[int, str | None], ...] = ()   # KIP-467: (batch index, message)
