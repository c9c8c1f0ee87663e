"""kafkalite's ``__transaction_state`` codec (kafkalite.txn.log_records) read by Kafka 2.8.2's
own ``TransactionLog.readTxnRecordKey``/``readTxnRecordValue`` -- the code a Kafka coordinator
loads its partitions with -- in a Java program (TxnLogCodec.java): every state, partitions or
none, tombstones, edge values and random entries decode to the same metadata; bytes Kafka
refuses, kafkalite refuses too."""

from __future__ import annotations

import random

import pytest
from jvm_apps import jvm_classes, run_java  # noqa: F401

from kafkalite.errors import CorruptRecordError
from kafkalite.txn import log_records
from kafkalite.txn.log_records import TxnLogEntry
from kafkalite.txn.metadata import TxnState

pytestmark = [pytest.mark.integration]


def _entries() -> list[tuple[str, TxnLogEntry | None]]:
    rng = random.Random(22)
    samples: list[tuple[str, TxnLogEntry | None]] = [
        ("", TxnLogEntry(0, 0, 1, TxnState.EMPTY, (), 0, -1)),
        ("ünïcødé-id ✓", TxnLogEntry((1 << 63) - 1, (1 << 15) - 1, (1 << 31) - 1,
                                      TxnState.ONGOING, {("t", (1 << 31) - 1)}, -1, -(1 << 63))),
        ("tombstone", None),
    ]
    for state in TxnState:
        partitions = set() if state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                        TxnState.COMPLETE_ABORT) else {("a", 0), ("b.c", 7)}
        samples.append((f"state-{int(state)}", TxnLogEntry(
            1000 + int(state), int(state), 60000, state, partitions, 1_700_000_000_000, 1_699)))
    for i in range(40):
        state = rng.choice(list(TxnState))
        partitions = set() if state == TxnState.EMPTY else {
            (rng.choice(["orders", "audit", "__consumer_offsets", "x" * 200]), rng.randrange(1000))
            for _ in range(rng.randrange(30))}
        samples.append((f"random-{i}-{rng.random()}", TxnLogEntry(
            rng.randrange(1 << 40), rng.randrange(1 << 15), rng.randrange(1 << 31), state,
            partitions, rng.randrange(1 << 45), rng.choice([-1, rng.randrange(1 << 45)]))))
    return samples


def _arg(key: bytes, value: bytes | None) -> str:
    return f"{key.hex()}:{'-' if value is None else value.hex()}"


def test_kafka_reads_what_kafkalite_writes(jvm_classes):
    samples = _entries()
    args = [_arg(log_records.key(tid), None if e is None else log_records.value(e))
            for tid, e in samples]
    lines = run_java(jvm_classes, "TxnLogCodec", *args)
    assert len(lines) == len(samples)
    for (tid, entry), line in zip(samples, lines):
        if entry is None:
            assert line == {"id": tid, "tombstone": True}
            continue
        assert line == {
            "id": tid, "producer_id": entry.producer_id, "producer_epoch": entry.producer_epoch,
            "timeout_ms": entry.transaction_timeout_ms, "state": entry.state.kafka_name,
            "partitions": sorted(f"{tp.topic}-{tp.partition}" for tp in entry.partitions),
            "last_update_ms": entry.last_update_ms, "start_ms": entry.start_ms}, tid


def test_what_kafka_refuses_kafkalite_refuses(jvm_classes):
    key = log_records.key("t")
    good = log_records.value(TxnLogEntry(5, 1, 1000, TxnState.ONGOING, {("a", 1)}, 2, 1))
    bad = [
        (key, good[:-3]),                                   # truncated
        (key, b"\x00\x01" + good[2:]),                      # unknown value version
        (b"\x00\x01" + key[2:], good),                      # unknown key version
        (key, good[:16] + b"\x09" + good[17:]),             # no such state byte
        (key, good[:17] + b"\xff\xff\xff\xff" + good[-16:]),  # null partitions, not Empty
    ]
    lines = run_java(jvm_classes, "TxnLogCodec", *(_arg(k, v) for k, v in bad))
    assert len(lines) == len(bad)
    for (k, v), line in zip(bad, lines):
        assert "error" in line, line
        with pytest.raises(CorruptRecordError):
            log_records.parse(k, v)
