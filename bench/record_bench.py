"""Micro-benchmark of the record batch codec: build and read throughput per compression codec.

    python bench/record_bench.py [--records 1000] [--value-size 100] [--seconds 1.0]

Batches of ``--records`` records with ``--value-size``-byte values (random-ish but compressible,
like typical JSON payloads) and 8-byte keys. Prints records/s and MB/s of record payload (keys +
values) for ``build_batch``, ``BatchBuilder`` and ``read_batch``, plus the batch size on the wire.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkalite.record import (  # noqa: E402
    BatchBuilder,
    build_batch,
    read_batch,
    validate_batch_bytes,
)

CODECS = ("none", "gzip", "lz4", "zstd")


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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args(argv)

    records = make_records(args.records, args.value_size)
    n = len(records)
    payload = sum(len(k) + len(v) for _, k, v, _ in records)
    print(f"{n} records/batch, {args.value_size}-byte values, "
          f"{payload / n:.0f} payload bytes/record")
    print(f"{'codec':6} {'op':14} {'records/s':>12} {'MB/s':>8} {'us/batch':>9} "
          f"{'batch bytes':>12}")

    def line(codec: str, op: str, per_call: float, size: int) -> None:
        print(f"{codec:6} {op:14} {n / per_call:12,.0f} {payload / per_call / 1e6:8.1f} "
              f"{per_call * 1e6:9.1f} {size:12,}")

    for codec in CODECS:
        batch = build_batch(records, compression=codec)

        def builder_build(codec=codec):
            builder = BatchBuilder(codec)
            for ts, key, value, headers in records:
                builder.append(ts, key, value, headers)
            return builder.build()

        line(codec, "build_batch", timed(lambda: build_batch(records, compression=codec),
                                          args.seconds), len(batch))
        line(codec, "BatchBuilder", timed(builder_build, args.seconds), len(batch))
        line(codec, "read_batch", timed(lambda: read_batch(batch), args.seconds), len(batch))
        line(codec, "validate", timed(lambda: validate_batch_bytes(batch), args.seconds),
             len(batch))


if __name__ == "__main__":
    main()
