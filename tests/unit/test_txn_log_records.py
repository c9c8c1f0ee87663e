"""The ``__transaction_state`` codec (kafkalite.txn.log_records) against Kafka 2.8's
TransactionLogKey/TransactionLogValue v0: bytes worked out by hand from the JSON schemas, round
trips, Kafka's null partitions for Empty, and corrupt or truncated input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.errors import CorruptRecordError
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn import log_records
from kafkalite.txn.log_records import TxnLogEntry
from kafkalite.txn.metadata import TransactionMetadata, TxnState

ONGOING = TxnLogEntry(producer_id=4000, producer_epoch=3, transaction_timeout_ms=60000,
                      state=TxnState.ONGOING,
                      partitions={("orders", 2), ("audit", 0), ("orders", 0)},
                      last_update_ms=1_700_000_000_123, start_ms=1_700_000_000_000)


def test_key_bytes_by_hand():
    # version int16 0 | transactional_id: int16 length 5, "tx-01"
    assert log_records.key("tx-01") == bytes.fromhex("0000" "0005") + b"tx-01"


def test_value_bytes_by_hand():
    expected = b"".join([
        bytes.fromhex("0000"),                    # version 0
        bytes.fromhex("0000000000000fa0"),        # producer_id 4000
        bytes.fromhex("0003"),                    # producer_epoch 3
        bytes.fromhex("0000ea60"),                # transaction_timeout_ms 60000
        bytes.fromhex("01"),                      # transaction_status Ongoing
        bytes.fromhex("00000002"),                # transaction_partitions: 2 topics
        bytes.fromhex("0005") + b"audit",         # topic "audit"
        bytes.fromhex("00000001" "00000000"),     # partition_ids [0]
        bytes.fromhex("0006") + b"orders",        # topic "orders"
        bytes.fromhex("00000002" "00000000" "00000002"),   # partition_ids [0, 2]
        bytes.fromhex("0000018bcfe5687b"),        # last update 1_700_000_000_123
        bytes.fromhex("0000018bcfe56800"),        # start 1_700_000_000_000
    ])
    assert log_records.value(ONGOING) == expected


def test_empty_state_writes_null_partitions():
    entry = TxnLogEntry(7, 0, 1000, TxnState.EMPTY, frozenset(), 5, -1)
    data = log_records.value(entry)
    # version, producer id, epoch, timeout, status 0, then the null array (count -1)
    assert data[:2 + 8 + 2 + 4] == struct.pack(">hqhi", 0, 7, 0, 1000)
    assert data[16:17] == b"\x00"
    assert data[17:21] == struct.pack(">i", -1)
    assert data[21:] == struct.pack(">qq", 5, -1)
    assert log_records.parse(log_records.key("t"), data) == ("t", entry)


@pytest.mark.parametrize("state", [TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT])
def test_complete_states_write_an_empty_array(state):
    data = log_records.value(TxnLogEntry(7, 0, 1000, state, frozenset(), 5, 4))
    assert data[17:21] == struct.pack(">i", 0)


def test_empty_state_with_partitions_is_refused():
    with pytest.raises(ValueError, match="not expected to have any partitions"):
        log_records.value(TxnLogEntry(7, 0, 1000, TxnState.EMPTY, {("t", 0)}, 5, -1))


def test_empty_state_partitions_are_ignored_when_read():
    # Kafka reads an Empty state's partitions as none, whatever is written
    written = log_records.value(TxnLogEntry(7, 0, 1000, TxnState.ONGOING, {("t", 0)}, 5, 4))
    as_empty = written[:16] + bytes([TxnState.EMPTY]) + written[17:]
    _, entry = log_records.parse(log_records.key("x"), as_empty)
    assert entry.state == TxnState.EMPTY and entry.partitions == frozenset()


def test_tombstone():
    assert log_records.parse(log_records.key("gone"), None) == ("gone", None)


def test_from_transit_and_to_metadata():
    md = TransactionMetadata.new("tx", 9, 2, 30000, now_ms=100)
    transit = md.prepare_add_partitions({TopicPartition("a", 1)}, now_ms=150)
    entry = TxnLogEntry.from_transit(transit)
    assert entry == TxnLogEntry(9, 2, 30000, TxnState.ONGOING, {("a", 1)}, 150, 150)
    loaded = log_records.parse(log_records.key("tx"), log_records.value(entry))[1].to_metadata("tx")
    assert (loaded.transactional_id, loaded.producer_id, loaded.producer_epoch,
            loaded.last_producer_id, loaded.last_producer_epoch, loaded.txn_timeout_ms,
            loaded.state, loaded.topic_partitions, loaded.txn_start_ms,
            loaded.txn_last_update_ms, loaded.pending_state) == (
        "tx", 9, 2, -1, -1, 30000, TxnState.ONGOING, {TopicPartition("a", 1)}, 150, 150, None)


def test_partitions_by_topic_sorted():
    assert ONGOING.partitions_by_topic() == {"audit": [0], "orders": [0, 2]}


# --- round trips ----------------------------------------------------------------------------

_ids = st.text(min_size=0, max_size=40)
_int = lambda bits: st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)   # noqa: E731
_partitions = st.frozensets(st.tuples(st.text(max_size=20), _int(32)), max_size=12)


@st.composite
def _entries(draw):
    state = draw(st.sampled_from(list(TxnState)))
    partitions = frozenset() if state == TxnState.EMPTY else draw(_partitions)
    return TxnLogEntry(draw(_int(64)), draw(_int(16)), draw(_int(32)), state, partitions,
                       draw(_int(64)), draw(_int(64)))


@settings(max_examples=300, deadline=None)
@given(_ids, _entries())
def test_round_trip(transactional_id, entry):
    key, value = log_records.key(transactional_id), log_records.value(entry)
    assert log_records.parse(key, value) == (transactional_id, entry)
    # trailing bytes are ignored, as Kafka's generated (non-flexible) readers ignore them
    assert log_records.parse(key + b"\x01", value + b"\x02\x03") == (transactional_id, entry)


@settings(max_examples=200, deadline=None)
@given(_entries(), st.data())
def test_every_truncation_is_corrupt(entry, data):
    value = log_records.value(entry)
    cut = data.draw(st.integers(0, len(value) - 1))
    with pytest.raises(CorruptRecordError):
        log_records.parse(log_records.key("t"), value[:cut])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=80), st.binary(max_size=120))
def test_arbitrary_bytes_decode_or_are_corrupt(key, value):
    try:
        log_records.parse(key, value)
    except CorruptRecordError:
        pass


# --- corrupt input ----------------------------------------------------------------------------

def _corrupt(key, value, field):
    with pytest.raises(CorruptRecordError, match=field):
        log_records.parse(key, value)


def test_corrupt_keys():
    good_value = log_records.value(ONGOING)
    _corrupt(None, good_value, "no key")
    _corrupt(b"\x00", good_value, "version")
    _corrupt(bytes.fromhex("0001") + bytes.fromhex("0001") + b"x", good_value, "unknown version 1")
    _corrupt(bytes.fromhex("0000ffff"), good_value, "transactional_id has length -1")
    _corrupt(bytes.fromhex("00000005") + b"ab", good_value, "truncated transactional_id")
    _corrupt(bytes.fromhex("00000002") + b"\xff\xfe", good_value, "transactional_id is not valid")


def test_corrupt_values():
    key = log_records.key("t")
    good = log_records.value(ONGOING)
    _corrupt(key, bytes.fromhex("0001") + good[2:], "TransactionLogValue: unknown version 1")
    _corrupt(key, good[:9], "truncated producer_id")
    _corrupt(key, good[:11], "truncated producer_epoch")
    _corrupt(key, good[:15], "truncated transaction_timeout_ms")
    _corrupt(key, good[:16], "truncated transaction_status")
    _corrupt(key, good[:16] + b"\x08" + good[17:], "transaction_status 8")
    _corrupt(key, good[:17] + struct.pack(">i", -1) + good[-16:], "transaction_partitions is null")
    _corrupt(key, good[:17] + struct.pack(">i", -2) + good[21:], "transaction_partitions has -2")
    _corrupt(key, good[:17] + struct.pack(">i", 1 << 20) + good[21:], "claims 1048576")
    # the first topic's partition_ids count made -1 (not nullable)
    at = 17 + 4 + 2 + len("audit")
    _corrupt(key, good[:at] + struct.pack(">i", -1) + good[at + 4:], "partition_ids has -1")
    _corrupt(key, good[:-1], "truncated transaction_start_timestamp_ms")
    _corrupt(key, good[:-9], "truncated transaction_last_update_timestamp_ms")
    _corrupt(key, "not bytes", "expected bytes")


def test_writer_refuses_out_of_range_fields():
    with pytest.raises(ValueError, match="producer_epoch"):
        log_records.value(TxnLogEntry(1, 1 << 15, 1, TxnState.ONGOING, (), 0, 0))
    with pytest.raises(ValueError, match="transaction_timeout_ms"):
        log_records.value(TxnLogEntry(1, 1, 1 << 31, TxnState.ONGOING, (), 0, 0))
    with pytest.raises(ValueError, match="transactional_id"):
        log_records.key("x" * 40000)
