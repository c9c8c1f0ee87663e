"""Micro-benchmark of the wire protocol codecs (prints numbers, asserts nothing).

    /work/venv/bin/python bench/protocol_bench.py [--seconds 1.0]

* Produce request carrying one 64 KiB batch: encode (frame bytes) + decode (payload → object)
* Produce request carrying 5 topics x 10 partitions x 1 KiB (per-partition overhead)
* Fetch response carrying 4 partitions × 64 KiB of stored batch bytes: encode + decode
* Framing: FrameDecoder throughput on a stream of 64 KiB frames fed in 64 KiB and 1500-byte chunks
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkalite.protocol import (  # noqa: E402
    ApiKey,
    FetchPartitionResponse,
    FetchResponse,
    FetchTopicResponse,
    FrameDecoder,
    ProduceRequest,
    decode_request,
    decode_response,
    encode_frame,
    encode_request,
    encode_response,
)

BATCH = os.urandom(64 * 1024)


def timed(fn, seconds):
    fn()                       # warm-up
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        fn()
        n += 1
        now = time.perf_counter()
        if now >= deadline:
            return n, now - start


def bench_produce(seconds):
    req = ProduceRequest(acks=-1, timeout_ms=30000, topic_data={"events": {3: BATCH}})

    def roundtrip():
        frame = encode_request(req, 0, 1, "bench")
        decode_request(frame[4:])

    n, elapsed = timed(roundtrip, seconds)
    rate = n / elapsed
    print(f"produce request (1 x 64 KiB batch)  encode+decode: {rate:10,.0f} req/s  "
          f"{rate * len(BATCH) / 1e6:8,.0f} MB/s of batch data")


def bench_produce_many(seconds):
    small = BATCH[:1024]
    req = ProduceRequest(acks=1, topic_data={f"t{t}": {p: small for p in range(10)} for t in range(5)})

    def roundtrip():
        decode_request(encode_request(req, 0, 1, "bench")[4:])

    n, elapsed = timed(roundtrip, seconds)
    print(f"produce request (50 x 1 KiB batches) encode+decode: {n / elapsed:9,.0f} req/s")


def bench_fetch(seconds):
    resp = FetchResponse(responses=[FetchTopicResponse("events", [
        FetchPartitionResponse(p, 0, 1000, 1000, 0, BATCH) for p in range(4)])])

    def roundtrip():
        frame = encode_response(1, resp)
        decode_response(frame[4:], ApiKey.FETCH)

    n, elapsed = timed(roundtrip, seconds)
    rate = n / elapsed
    print(f"fetch response (4 x 64 KiB batches) encode+decode: {rate:10,.0f} resp/s "
          f"{rate * 4 * len(BATCH) / 1e6:8,.0f} MB/s of batch data")


def bench_framing(seconds, chunk):
    stream = encode_frame(BATCH) * 64          # ~4 MiB
    chunks = [stream[i:i + chunk] for i in range(0, len(stream), chunk)]

    def run():
        dec = FrameDecoder()
        count = 0
        for c in chunks:
            count += len(dec.feed(c))
        assert count == 64

    n, elapsed = timed(run, seconds)
    print(f"framing, 64 KiB frames in {chunk:>6}-byte chunks: "
          f"{n * len(stream) / elapsed / 1e6:8,.0f} MB/s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}")
    bench_produce(args.seconds)
    bench_produce_many(args.seconds)
    bench_fetch(args.seconds)
    for chunk in (65536, 16384, 1500):
        bench_framing(args.seconds, chunk)


if __name__ == "__main__":
    main()
