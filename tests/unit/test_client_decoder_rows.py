"""The consumer decodes into plain tuples (rows) and makes ConsumerRecords only as it hands them
out: CPython's collector untracks plain tuples of untracked values but never a NamedTuple, so
buffered ConsumerRecords would be walked by every collection until the application took them."""

from __future__ import annotations

import gc

from kafkalite.client.decoder import as_records, decode_records, decode_rows
from kafkalite.client.structs import ConsumerRecord
from kafkalite.record.batch import build_batch_columns


def _data() -> bytes:
    n = 50
    return build_batch_columns([1_700_000_000_000 + i for i in range(n)],
                               [None if i % 2 else b"k%d" % i for i in range(n)],
                               [b"v%d" % i for i in range(n)],
                               [[("h", b"x")] if i % 5 == 0 else None for i in range(n)])


def test_rows_are_plain_tuples_the_collector_untracks():
    rows = decode_rows(_data(), "t", 3, 0).records
    assert len(rows) == 50
    assert all(type(r) is tuple for r in rows)
    gc.collect()
    assert not any(gc.is_tracked(r) for r in rows if not r[7])
    # a row with headers nests tuples (pairs in a tuple): at worst one level per collection
    gc.collect()
    gc.collect()
    assert not any(gc.is_tracked(r) for r in rows)
    assert all(gc.is_tracked(r) for r in as_records(rows))   # why they are made late


def test_as_records_gives_the_consumer_records_decode_records_gives():
    data = _data()
    records = decode_records(data, "t", 3, 10).records
    assert all(type(r) is ConsumerRecord for r in records)
    assert records == as_records(decode_rows(data, "t", 3, 10).records)
    first = records[0]
    assert (first.topic, first.partition, first.offset, first.timestamp) == (
        "t", 3, 10, 1_700_000_000_010)
    assert first.key == b"k10" and first.value == b"v10" and first.headers == (("h", b"x"),)
    assert records[1].key is None and records[1].headers == ()
