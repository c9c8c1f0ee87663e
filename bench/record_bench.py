"""Micro-benchmark of the record batch codec: build and read throughput per compression codec.

    python bench/record_bench.py [--records 1000] [--value-size 100] [--seconds 1.0]

Batches of ``--records`` records with ``--value-size``-byte values (random-ish but compressible,
like typical JSON payloads) and 8-byte keys. For each codec it prints records/s and MB/s of record
payload (keys + values) and the batch size on the wire for:

* ``build_batch``      the producer's path: one call per batch
* ``BatchBuilder``     a plain Python ``for`` loop of ``append``, then ``build`` (the cleaner's)
* ``read_batch``       decode to Records, then a ``for`` loop touching each ``.value``
* ``iter_records``     the same through the generator
* ``decode_records``   the consumer's fast path to ConsumerRecord tuples, touching ``.value``
* ``validate``         the broker's header/CRC check (no decoding)
* ``aiokafka build`` / ``aiokafka read``: aiokafka's own builder (its compression, gzip level 9)
  and reader driven directly, as the reference for what the compiled codec costs by itself

and, for the uncompressed batch, checks the throughput targets kafkalite must not fall below.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from aiokafka.record.default_records import (  # noqa: E402
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
)

from kafkalite.client.decoder import decode_records  # noqa: E402
from kafkalite.record import (  # noqa: E402
    BatchBuilder,
    build_batch,
    compression_id,
    iter_records,
    read_batch,
    validate_batch_bytes,
)
from kafkalite.record.v2 import COMPILED  # noqa: E402

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# records/s (uncompressed, 1000 x 100 B) below which the codec has regressed
TARGETS = {"build_batch": 1_500_000, "BatchBuilder": 840_000, "read_batch": 600_000}


def make_records(n: int, value_size: int, seed: int = 7):
    rng = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"kafka", b"broker", b"offset", b"%d"]
    records = []
    now = 1_700_000_000_000
    for i in range(n):
        parts = []
        size = 0
        while size < value_size:
            word = rng.choice(words)
            if word == b"%d":
                word = str(rng.randrange(1 << 30)).encode()
            parts.append(word)
            size += len(word) + 1
        value = b" ".join(parts)[:value_size]
        records.append((now + i, b"key-%04d" % (i % 10000), value, None))
    return records


def timed(fn, seconds: float) -> float:
    """Seconds per call, best of several rounds lasting about ``seconds`` in total."""
    fn()  # warm up
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed > 0.05:
            break
        calls *= 2
    best = elapsed / calls
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def operations(records, codec: str):
    """(name, function, batch it makes or reads) for one codec."""
    batch = build_batch(records, compression=codec)
    cid = compression_id(codec)
    no_limit = sys.maxsize

    def builder_loop():
        builder = BatchBuilder(codec)
        for ts, key, value, headers in records:
            builder.append(ts, key, value, headers)
        return builder.build()

    def read():
        for record in read_batch(batch)[1]:
            record.value

    def iterate():
        for record in iter_records(batch):
            record.value

    def decode():
        for record in decode_records(batch, "t", 0, 0).records:
            record.value

    def aiokafka_build():
        builder = DefaultRecordBatchBuilder(2, cid, 0, -1, -1, -1, no_limit)
        for i, (ts, key, value, _headers) in enumerate(records):
            builder.append(i, ts, key, value, [])
        return bytes(builder.build())

    theirs = aiokafka_build()

    def aiokafka_read():
        for record in DefaultRecordBatch(theirs):
            record.value

    return [
        ("build_batch", lambda: build_batch(records, compression=codec), batch),
        ("BatchBuilder", builder_loop, batch),
        ("read_batch", read, batch),
        ("iter_records", iterate, batch),
        ("decode_records", decode, batch),
        ("validate", lambda: validate_batch_bytes(batch), batch),
        ("aiokafka build", aiokafka_build, theirs),
        ("aiokafka read", aiokafka_read, theirs),
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--codecs", default=",".join(CODECS))
    args = parser.parse_args(argv)

    records = make_records(args.records, args.value_size)
    n = len(records)
    payload = sum(len(k) + len(v) for _, k, v, _ in records)
    print(f"{n} records/batch, {args.value_size}-byte values, "
          f"{payload / n:.0f} payload bytes/record; aiokafka codec "
          f"{'compiled' if COMPILED else 'PURE PYTHON (slow)'}")
    print(f"{'codec':6} {'op':15} {'records/s':>12} {'MB/s':>8} {'us/batch':>9} "
          f"{'batch bytes':>12}")
    misses = []
    for codec in args.codecs.split(","):
        for name, fn, batch in operations(records, codec):
            per_call = timed(fn, args.seconds)
            rate = n / per_call
            print(f"{codec:6} {name:15} {rate:12,.0f} {payload / per_call / 1e6:8.1f} "
                  f"{per_call * 1e6:9.1f} {len(batch):12,}")
            target = TARGETS.get(name) if codec == "none" else None
            if target and args.records == 1000 and args.value_size == 100 and rate < target:
                misses.append(f"{name} {rate:,.0f} < {target:,} records/s")
    if misses:
        print("BELOW TARGET: " + "; ".join(misses))
    elif "none" in args.codecs.split(",") and args.records == 1000 and args.value_size == 100:
        print("targets met: " + ", ".join(f"{k} >= {v:,}" for k, v in TARGETS.items()))


if __name__ == "__main__":
    main()
