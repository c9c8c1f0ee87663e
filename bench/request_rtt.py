"""One request at a time against one broker, kafkalite beside Apache Kafka 2.8.2: what a broker
spends per request, with no client library in the way (issue 26's delivery-latency rows).

    .venv/bin/python bench/request_rtt.py [--seconds 15] [--warm-up 10] [--fetch] [--json F]
                                          [--systems kafkalite kafka]

One TCP connection (TCP_NODELAY) with one request in flight: a Produce v8 of one 100-byte record,
acks=1, encoded by kio, sent again and again; with ``--fetch`` every produce is followed by a
Fetch v11 of the record it wrote (the consumer's half of an end-to-end record). Each system gets a
1-broker cluster of its own (``bench_cluster.own_cluster``), a warm-up of ``--warm-up`` seconds
(Kafka's JIT needs ~10), then ``--seconds`` of measurement. Printed per system: requests, the
round trip's p50 and p99 (encoding happens before the clock starts; the answer is read whole, not
decoded), and the broker's CPU per request, user and system apart, from ``/proc``. The ratio row is
kafkalite / Kafka. Run it on a quiet machine: both the client and the broker are timed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import time
import uuid

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.dirname(BENCH))

from bench_cluster import own_cluster  # noqa: E402
from vs_kafka_clients import percentiles  # noqa: E402

SYSTEMS = ("kafkalite", "kafka")


def broker_cpu(pids: list[int]) -> tuple[float, float]:
    """User and system CPU seconds the processes used so far (/proc/<pid>/stat 14 and 15)."""
    user = system = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        user += int(fields[11])
        system += int(fields[12])
    tick = os.sysconf("SC_CLK_TCK")
    return user / tick, system / tick


class Connection:
    """One socket, one request in flight; frames encoded by kafkalite's kio codec."""

    def __init__(self, address: str, topic: str):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.topic = topic
        self.correlation_id = 0
        from kafkalite.record.batch import build_batch_columns
        self.batch = build_batch_columns([int(time.time() * 1000)], None, [b"x" * 100], None)

    def produce(self) -> bytes:
        from kafkalite.protocol.kafka import codec
        self.correlation_id += 1
        return codec.encode_request(0, 8, self.correlation_id, "request-rtt", {
            "transactional_id": None, "acks": 1, "timeout": 30000, "topic_data": [
                {"name": self.topic, "partition_data": [{"index": 0, "records": self.batch}]}]})

    def fetch(self, offset: int) -> bytes:
        from kafkalite.protocol.kafka import codec
        self.correlation_id += 1
        return codec.encode_request(1, 11, self.correlation_id, "request-rtt", {
            "replica_id": -1, "max_wait": 500, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "forgotten_topics_data": [], "topics": [{"topic": self.topic, "partitions": [{
                "partition": 0, "fetch_offset": offset, "current_leader_epoch": -1,
                "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]})

    def round_trip(self, payload: bytes) -> float:
        """Send one frame, read its answer whole; the seconds between."""
        started = time.perf_counter()
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._read(4))[0]
        self.answer = self._read(size)
        return time.perf_counter() - started

    def produced_offset(self) -> int:
        """The base offset in the last answer, a Produce v8 one (decoded by kio); raises when
        the broker refused the record, so that no figure is measured on error answers."""
        from kafkalite.protocol.kafka import codec
        _cid, entity = codec.decode_response(0, 8, self.answer)
        [part] = [p for t in entity.responses for p in t.partition_responses]
        if part.error_code:
            raise RuntimeError(f"Produce answered error {part.error_code} ({part.error_message})")
        return int(part.base_offset)

    def _read(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            chunk = self.sock.recv(n - got)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)


def run(conn: Connection, seconds: float, fetch: bool, offset: int) -> tuple[list[float], int]:
    """Produce (and fetch) for ``seconds``: produce round trips in seconds, requests sent."""
    samples, requests = [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        samples.append(conn.round_trip(conn.produce()))
        requests += 1
        if fetch:
            conn.round_trip(conn.fetch(offset))
            requests += 1
        offset += 1
    return samples, requests


def measure(system: str, seconds: float, warm_up: float, fetch: bool) -> dict:
    from confluent_kafka.admin import AdminClient, NewTopic

    with own_cluster(1, system) as cluster:
        topic = f"rtt-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
        pids = [b.process.pid for b in cluster.brokers.values()]
        conn = Connection(cluster.bootstrap_servers.split(",")[0], topic)
        deadline = time.monotonic() + 60
        while True:        # the leader may need a moment after CreateTopics answered
            try:
                conn.round_trip(conn.produce())
                conn.produced_offset()
                break
            except (OSError, RuntimeError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
                conn.sock.close()
                conn = Connection(cluster.bootstrap_servers.split(",")[0], topic)
        _samples, sent = run(conn, warm_up, fetch, 1)
        cpu0 = broker_cpu(pids)
        samples, requests = run(conn, seconds, fetch, 1 + sent // (2 if fetch else 1))
        cpu1 = broker_cpu(pids)
        if not fetch:      # the last answer is a produce's: every record landed where expected
            last = conn.produced_offset()
            if last != sent + requests:
                raise RuntimeError(f"the last record landed at offset {last}, not "
                                   f"{sent + requests}")
        conn.sock.close()
    ms = percentiles([s * 1e6 for s in samples])     # microseconds in, milliseconds out
    return {"system": system, "fetch": fetch, "requests": requests,
            "p50_us": ms["p50"] * 1000, "p99_us": ms["p99"] * 1000,
            "user_us": (cpu1[0] - cpu0[0]) / requests * 1e6,
            "system_us": (cpu1[1] - cpu0[1]) / requests * 1e6,
            "load1": os.getloadavg()[0]}


def table(rows: list[dict]) -> str:
    lines = ["| system | requests | produce round trip p50 | p99 | broker CPU per request, user "
             "| system | load |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['system']} | {r['requests']:,} | {r['p50_us']:.1f} µs | "
                     f"{r['p99_us']:.1f} µs | {r['user_us']:.1f} µs | {r['system_us']:.1f} µs | "
                     f"{r['load1']:.1f} |")
    by = {r["system"]: r for r in rows}
    if len(by) == 2:
        kl, ak = by["kafkalite"], by["kafka"]
        lines.append("| kafkalite / Kafka | | " + " | ".join(
            f"×{kl[k] / ak[k]:.2f}" if ak[k] else "-"
            for k in ("p50_us", "p99_us", "user_us", "system_us")) + " | |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--warm-up", type=float, default=10.0)
    parser.add_argument("--fetch", action="store_true", help="a Fetch after every Produce")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--json", help="write one JSON line per system to this file")
    args = parser.parse_args(argv)
    rows = []
    for system in args.systems:
        row = measure(system, args.seconds, args.warm_up, args.fetch)
        print(f"  {system:<9} {row['requests']:>9,} requests  p50 {row['p50_us']:.1f} µs  "
              f"p99 {row['p99_us']:.1f} µs  broker CPU/request {row['user_us']:.1f} µs user "
              f"{row['system_us']:.1f} µs system", flush=True)
        rows.append(row)
    print()
    print(table(rows))
    if args.json:
        with open(args.json, "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
