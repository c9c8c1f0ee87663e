"""Log append/read throughput against the raw sequential-write rate of the same disk.

    /work/venv/bin/python bench/log_bench.py [--total-mb 200] [--record-size 100]
        [--batch-records 1000] [--dir DIR] [--repeat 3] [--profile]

Builds all record batches once up front (``--batch-records`` records of ``--record-size`` random
bytes each, about 109 KB per batch at the defaults, all distinct so neither side gets them from the
CPU cache for free), then measures, in the same directory and in alternating
rounds (best round reported):

* raw: plain ``os.write`` of chunks of the batch size to one file, no fsync;
* append: ``Log.append`` of the same bytes (validation, CRC, offset assignment, write; no fsync);
* read: ``Log.read`` of 1 MiB at a time from offset 0 to the end, as a consumer would.

It prints each round, the best rates, and the append/raw ratio (best against best, and the median
of the per-round ratios). The goal is append >= 70% of the raw rate. What the log adds to a raw
write is mostly the CRC32C check of every batch (about 4 us per 109 KB); the batch bodies are
written from the request buffer with ``writev`` and never copied in Python.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time

from kafkalite.config import TopicConfig
from kafkalite.log import Log
from kafkalite.record import header as hdr
from kafkalite.record.batch import build_batch


def build_batches(count: int, record_size: int, batch_records: int,
                  distinct_batches: int = 0) -> list[bytes]:
    distinct = []
    for i in range(min(count, distinct_batches or count)):
        payload = os.urandom(record_size * batch_records)
        records = [(1_700_000_000_000 + i, None, payload[j * record_size:(j + 1) * record_size],
                    None) for j in range(batch_records)]
        distinct.append(build_batch(records))
    return [distinct[i % len(distinct)] for i in range(count)]


def settle() -> None:
    """Write back dirty pages (ours and anyone's) so neither side pays for the other's."""
    if hasattr(os, "sync"):
        os.sync()


def raw_write(directory: str, batches: list[bytes]) -> float:
    settle()
    path = os.path.join(directory, "raw.bin")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    start = time.perf_counter()
    for chunk in batches:
        os.write(fd, chunk)
    elapsed = time.perf_counter() - start
    os.close(fd)
    os.unlink(path)
    return elapsed


def log_append(directory: str, batches: list[bytes], profile: bool = False) -> tuple[float, Log]:
    log_dir = os.path.join(directory, "bench-0")
    shutil.rmtree(log_dir, ignore_errors=True)
    log = Log(log_dir, TopicConfig())
    settle()
    profiler = cProfile.Profile() if profile else None
    append = log.append
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    for batch in batches:
        append(batch)
    if profiler:
        profiler.disable()
    elapsed = time.perf_counter() - start
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(15)
    return elapsed, log


def log_read(log: Log, max_bytes: int = 1 << 20) -> tuple[float, int]:
    offset, end, total = 0, log.log_end_offset, 0
    start = time.perf_counter()
    while offset < end:
        data = log.read(offset, max_bytes).records
        total += len(data)
        last = None
        pos = 0
        while pos < len(data):  # what a consumer does to find its next offset
            last = pos
            pos += hdr.peek_size(data, pos)
        offset = hdr.parse_header(data, last).next_offset
    return time.perf_counter() - start, total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-mb", type=float, default=200)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--batch-records", type=int, default=1000)
    parser.add_argument("--dir", default=None, help="directory on the disk to test "
                        "(default: a temporary directory under the current one)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--distinct", type=int, default=0, help="build only this many "
                        "distinct batches and cycle through them (default: all distinct)")
    parser.add_argument("--profile", action="store_true", help="cProfile one append round")
    args = parser.parse_args(argv)

    batch_bytes_estimate = args.record_size * args.batch_records + 61
    count = max(1, int(args.total_mb * 1e6 / batch_bytes_estimate))
    print(f"building {count} batches of {args.batch_records} x {args.record_size}-byte "
          f"records ...", flush=True)
    batches = build_batches(count, args.record_size, args.batch_records, args.distinct)
    total_bytes = sum(map(len, batches))
    total_records = count * args.batch_records
    print(f"{total_bytes / 1e6:.1f} MB in {count} batches of {len(batches[0])} bytes")

    directory = tempfile.mkdtemp(prefix="log-bench-", dir=args.dir or os.getcwd())
    try:
        # warm-up (not reported): the first writes of a run pay for page-cache allocation
        raw_write(directory, batches[:len(batches) // 2])
        log_append(directory, batches[:len(batches) // 2])[1].delete()
        raw_best = append_best = read_best = float("inf")
        ratios = []
        for round_no in range(args.repeat):
            # alternate which goes first, so background writeback hurts both alike
            if round_no % 2 == 0:
                raw = raw_write(directory, batches)
            appended, log = log_append(directory, batches,
                                       profile=args.profile and round_no == 0)
            read, read_bytes = log_read(log)
            assert read_bytes == total_bytes, (read_bytes, total_bytes)
            log.delete()
            if round_no % 2 == 1:
                raw = raw_write(directory, batches)
            ratios.append(raw / appended)
            print(f"round {round_no + 1}: raw {total_bytes / raw / 1e6:8.1f} MB/s   "
                  f"append {total_bytes / appended / 1e6:8.1f} MB/s   "
                  f"read {total_bytes / read / 1e6:8.1f} MB/s   "
                  f"append/raw {raw / appended:6.1%}", flush=True)
            raw_best, append_best = min(raw_best, raw), min(append_best, appended)
            read_best = min(read_best, read)
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    def rate(seconds: float) -> str:
        return (f"{total_bytes / seconds / 1e6:8.1f} MB/s  "
                f"{total_records / seconds:12,.0f} records/s")

    print()
    print(f"raw sequential write (no fsync): {rate(raw_best)}")
    print(f"log append           (no fsync): {rate(append_best)}")
    print(f"log read (1 MiB fetches)       : {rate(read_best)}")
    print(f"append / raw (best vs best)    : {raw_best / append_best:8.1%}")
    print(f"append / raw (median of rounds): {statistics.median(ratios):8.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
