"""The keys and values of ``__transaction_state``, byte for byte Kafka 2.8's ``TransactionLog``,
so Kafka's tools (``kafka-console-consumer --formatter
kafka.coordinator.transaction.TransactionLog$TransactionLogMessageFormatter``) read what kafkalite
writes, and a kafkalite coordinator loads what Kafka wrote.

Pure codec, no I/O, on kafkalite.struct_codec (kio ships neither schema). Kafka's message JSONs
(core/src/main/resources/common/message/TransactionLogKey.json, TransactionLogValue.json) have one
version each, 0, not flexible; both are version-prefixed (``MessageUtil.toVersionPrefixedBytes``)::

    TransactionLogKey    v0: version int16 | transactional_id string
    TransactionLogValue  v0: version int16 | producer_id int64 | producer_epoch int16
                             | transaction_timeout_ms int32 | transaction_status int8
                             | transaction_partitions nullable [topic string | [partition int32]]
                             | last_update_timestamp_ms int64 | start_timestamp_ms int64

The status is the state's byte id (kafkalite.txn.metadata.TxnState). As Kafka's ``valueToBytes``:
an Empty state writes null partitions (and may not have any); every other state writes its
partitions grouped by topic -- an empty array for CompleteCommit/CompleteAbort, which have none.
Kafka groups them in its Scala hash-set order; kafkalite writes topics and partitions sorted,
which readers (Kafka's included) treat alike. A null value is a tombstone (an expired id).

Reading follows Kafka's ``readTxnRecordKey``/``readTxnRecordValue``: a version other than 0
fails (Kafka 2.8 throws IllegalStateException, failing the partition's load), the partitions of
an Empty state are ignored, bytes after the last field are ignored as Kafka's generated readers
ignore them. Anything that does not decode -- truncation, a null where the schema has no null,
bad UTF-8, an unknown state byte, null partitions for a state that is not Empty (Kafka's load
would fail on it) -- raises CorruptRecordError naming the field.
"""

from __future__ import annotations

import dataclasses

from kafkalite.errors import CorruptRecordError
from kafkalite.struct_codec import Reader, Writer
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TxnState,
    TxnTransitMetadata,
)

__all__ = ["TxnLogEntry", "key", "value", "parse", "KEY_VERSION", "VALUE_VERSION"]

#: the only versions Kafka 2.8 has (written and read)
KEY_VERSION = 0
VALUE_VERSION = 0

# smallest PartitionsSchema element: an empty topic (int16 length) and an empty array (int32)
_MIN_PARTITIONS_SCHEMA_SIZE = 2 + 4
_INT32_SIZE = 4


@dataclasses.dataclass(frozen=True)
class TxnLogEntry:
    """One ``__transaction_state`` value: a transactional id's metadata as last written."""

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    last_update_ms: int
    start_ms: int

    def __post_init__(self):
        # accept any iterable of (topic, partition) pairs; keep one hashable, comparable type
        object.__setattr__(self, "partitions",
                           frozenset(TopicPartition(*tp) for tp in self.partitions))
        object.__setattr__(self, "state", TxnState(self.state))

    @classmethod
    def from_transit(cls, transit: TxnTransitMetadata) -> TxnLogEntry:
        """What Kafka writes for a prepared transition (``valueToBytes(txnMetadata)``)."""
        return cls(transit.producer_id, transit.producer_epoch, transit.txn_timeout_ms,
                   transit.state, transit.topic_partitions, transit.txn_last_update_ms,
                   transit.txn_start_ms)

    def partitions_by_topic(self) -> dict[str, list[int]]:
        """The partitions per topic, topics and partitions sorted."""
        grouped: dict[str, list[int]] = {}
        for tp in sorted(self.partitions):
            grouped.setdefault(tp.topic, []).append(tp.partition)
        return grouped

    def to_metadata(self, transactional_id: str) -> TransactionMetadata:
        """The coordinator's metadata loaded from this entry, as Kafka's ``readTxnRecordValue``:
        the last producer id and epoch are not in the log (-1), no pending state."""
        return TransactionMetadata(
            transactional_id, self.producer_id, NO_PRODUCER_ID, self.producer_epoch,
            NO_PRODUCER_EPOCH, self.transaction_timeout_ms, self.state, set(self.partitions),
            self.start_ms, self.last_update_ms)


def key(transactional_id: str) -> bytes:
    """TransactionLogKey v0."""
    w = Writer(KEY_VERSION)
    w.string("transactional_id", transactional_id)
    return w.done()


def value(entry: TxnLogEntry) -> bytes:
    """TransactionLogValue v0. ValueError for an Empty state with partitions (Kafka's
    IllegalStateException) or a field out of its type's range."""
    state = TxnState(entry.state)
    if state == TxnState.EMPTY and entry.partitions:
        raise ValueError(f"Transaction is not expected to have any partitions since its state "
                         f"is {state}: {entry}")
    w = Writer(VALUE_VERSION)
    w.int64("producer_id", entry.producer_id)
    w.int16("producer_epoch", entry.producer_epoch)
    w.int32("transaction_timeout_ms", entry.transaction_timeout_ms)
    w.int8("transaction_status", int(state))
    if state == TxnState.EMPTY:
        w.count("transaction_partitions", None, nullable=True)
    else:
        grouped = entry.partitions_by_topic()
        w.count("transaction_partitions", len(grouped))
        for topic, partitions in grouped.items():
            w.string("topic", topic)
            w.count("partition_ids", len(partitions))
            for partition in partitions:
                w.int32("partition_id", partition)
    w.int64("transaction_last_update_timestamp_ms", entry.last_update_ms)
    w.int64("transaction_start_timestamp_ms", entry.start_ms)
    return w.done()


def _read_key(data) -> str:
    if data is None:
        raise CorruptRecordError("a __transaction_state record has no key")
    r = Reader(data, "TransactionLogKey")
    version = r.int16("version")
    if version != KEY_VERSION:
        r.fail(f"unknown version {version}")
    return r.string("transactional_id")


def _read_value(data) -> TxnLogEntry:
    r = Reader(data, "TransactionLogValue")
    version = r.int16("version")
    if version != VALUE_VERSION:
        r.fail(f"unknown version {version}")
    producer_id = r.int64("producer_id")
    producer_epoch = r.int16("producer_epoch")
    timeout_ms = r.int32("transaction_timeout_ms")
    status = r.int8("transaction_status")
    try:
        state = TxnState(status)
    except ValueError:
        r.fail(f"transaction_status {status} is no transaction state")
    partitions: set[TopicPartition] = set()
    n_topics = r.count("transaction_partitions", _MIN_PARTITIONS_SCHEMA_SIZE, nullable=True)
    if n_topics is None and state != TxnState.EMPTY:
        r.fail(f"transaction_partitions is null for state {state}")
    for _ in range(n_topics or 0):
        topic = r.string("topic")
        for _ in range(r.count("partition_ids", _INT32_SIZE)):
            partitions.add(TopicPartition(topic, r.int32("partition_id")))
    last_update_ms = r.int64("transaction_last_update_timestamp_ms")
    start_ms = r.int64("transaction_start_timestamp_ms")
    if state == TxnState.EMPTY:
        partitions = set()      # Kafka ignores an Empty state's partitions
    return TxnLogEntry(producer_id, producer_epoch, timeout_ms, state, frozenset(partitions),
                       last_update_ms, start_ms)


def parse(key, value) -> tuple[str, TxnLogEntry | None]:
    """Decode one ``__transaction_state`` record: ``(transactional_id, entry)``, the entry None
    for a tombstone. CorruptRecordError for undecodable bytes (a null key included)."""
    transactional_id = _read_key(key)
    return transactional_id, None if value is None else _read_value(value)
