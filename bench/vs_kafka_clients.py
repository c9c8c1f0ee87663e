"""The clients bench/vs_kafka.py drives, each against a bootstrap address and nothing else, so that
kafkalite and Apache Kafka 2.8.2 are measured by the very same calls.

- librdkafka 2.0.2's ``rdkafka_performance`` (built by ``bench/build_rdkafka_performance.sh``):
  produce and consume throughput, and per-record latency with ``-l -A <file>`` (the producer's
  file holds delivery latencies, the consumer's end-to-end ones, in microseconds);
- Kafka 2.8.2's own ProducerPerformance (the Java client), run from the fetched jars;
- confluent-kafka in a plain Python loop (``bench/kafka_client_bench.py``'s loops);
- kafkalite's own Python client in a plain loop (``bench/plain_loop_bench.py``'s loops).

Each function returns records per second (or latencies in ms) and raises RuntimeError with the
tool's output when it fails: a bench that silently reports nothing would hide a broken system.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(BENCH))
sys.path.insert(0, BENCH)

# "% N messages produced (B bytes), D delivered (offset O, F failed) in T ms: ..."; its exit code
# is 1 when its own count of produced records differs from the delivered one, which with several
# processes at once it sometimes miscounts by one (99999 produced, 100000 delivered), so the
# delivered and failed counts are what is checked
_PRODUCED = re.compile(r"(\d+) messages produced .*?(\d+) delivered \(offset -?\d+, (\d+) "
                       r"failed\) in (\d+)ms")
_CONSUMED = re.compile(r"(\d+) messages \(\d+ bytes\) consumed in (\d+)ms")


def rdkafka_performance() -> str:
    """The binary's path, building it on first use (bench/build_rdkafka_performance.sh)."""
    out = subprocess.run(["bash", os.path.join(BENCH, "build_rdkafka_performance.sh")],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"build_rdkafka_performance.sh failed:\n{out.stderr}")
    return out.stdout.strip().splitlines()[-1]


def _run(command: list[str], timeout_s: float, ok: tuple[int, ...] = (0,)) -> str:
    out = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                         stdin=subprocess.DEVNULL, check=False)
    if out.returncode not in ok:
        raise RuntimeError(f"{' '.join(command)} exited {out.returncode}:\n"
                           f"{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out.stdout + out.stderr


def rdk_produce(binary: str, bootstrap: str, topic: str, n: int, size: int, acks: str,
                compression: str = "none", timeout_s: float = 600) -> float:
    """rdkafka_performance -P: records/s delivered (its own clock, first send to last report).
    Records without a key go to the topic's partitions at random (``-p`` not given)."""
    command = [binary, "-P", "-t", topic, "-b", bootstrap, "-s", str(size), "-c", str(n),
               "-a", acks, "-z", compression, "-X", "linger.ms=5",
               "-X", "queue.buffering.max.messages=1000000", "-q"]
    text = _run(command, timeout_s, ok=(0, 1))
    match = _PRODUCED.search(text)
    if not match or int(match.group(2)) < n or int(match.group(3)):
        raise RuntimeError(f"rdkafka_performance -P delivered fewer than {n}:\n{text[-2000:]}")
    return int(match.group(2)) / (max(1, int(match.group(4))) / 1000)


def rdk_produce_many(binary: str, bootstrap: str, topic: str, n: int, size: int, acks: str,
                     producers: int, timeout_s: float = 600) -> float:
    """``producers`` rdkafka_performance -P processes at once, ``n`` records in all: rec/s from
    the first start to the last exit (the wall clock: their own clocks would overlap)."""
    each = max(1, n // producers)
    command = [binary, "-P", "-t", topic, "-b", bootstrap, "-s", str(size), "-c", str(each),
               "-a", acks, "-X", "linger.ms=5", "-q"]
    started = time.perf_counter()
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, text=True) for _ in range(producers)]
    delivered = 0
    for proc in procs:
        text = proc.communicate(timeout=timeout_s)[0]
        match = _PRODUCED.search(text)
        if proc.returncode not in (0, 1) or not match or int(match.group(3)):
            raise RuntimeError(f"rdkafka_performance -P (one of {producers}):\n{text[-2000:]}")
        delivered += int(match.group(2))
    elapsed = time.perf_counter() - started
    if delivered < each * producers:
        raise RuntimeError(f"{producers} producers delivered {delivered} of {each * producers}")
    return delivered / elapsed


def rdk_consume(binary: str, bootstrap: str, topic: str, n: int, partition: int = 0,
                timeout_s: float = 600) -> float:
    """rdkafka_performance -C from the beginning of one partition until ``n`` records: rec/s."""
    text = _run([binary, "-C", "-t", topic, "-p", str(partition), "-b", bootstrap, "-o",
                 "beginning", "-c", str(n), "-q"], timeout_s)
    match = _CONSUMED.search(text)
    if not match or int(match.group(1)) < n:
        raise RuntimeError(f"rdkafka_performance -C read fewer than {n}:\n{text[-2000:]}")
    return int(match.group(1)) / (max(1, int(match.group(2))) / 1000)


def percentiles(values_us: list[float]) -> dict[str, float]:
    """p50/p99/p99.9 and max, in milliseconds, of latencies given in microseconds."""
    ordered = sorted(values_us)
    if not ordered:
        raise RuntimeError("no latency samples")

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000.0
    return {"p50": at(0.50), "p99": at(0.99), "p99.9": at(0.999), "max": ordered[-1] / 1000.0}


def _samples(path: str, skip: int) -> list[float]:
    with open(path) as fh:
        values = [float(line) for line in fh if line.strip()]
    return values[skip:]


def rdk_latency(binary: str, bootstrap: str, topic: str, rate: int, seconds: float, acks: str,
                end_to_end: bool, timeout_s: float = 300) -> dict[str, float]:
    """Latency at ``rate`` records/s for ``seconds``, linger.ms 0: delivery latency from the
    producer's own reports, or end-to-end from a consumer in a process of its own, reading the
    fresh ``topic`` from its beginning (so none is missed however late it connects). The first
    second's samples are dropped (connection set-up)."""
    n = max(10, int(rate * seconds))
    with tempfile.TemporaryDirectory(prefix="vs-kafka-lat-") as tmp:
        produced, consumed = os.path.join(tmp, "dr.txt"), os.path.join(tmp, "e2e.txt")
        consumer = None
        if end_to_end:
            consumer = subprocess.Popen(
                [binary, "-C", "-t", topic, "-p", "0", "-b", bootstrap, "-o", "beginning", "-l",
                 "-A", consumed, "-c", str(n), "-q", "-X", "fetch.wait.max.ms=100"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            time.sleep(0.5)  # the consumer's connection first, so its fetches are already waiting
        try:
            _run([binary, "-P", "-t", topic, "-p", "0", "-b", bootstrap, "-s", "100", "-c",
                  str(n), "-r", str(rate), "-a", acks, "-l", "-A", produced,
                  "-X", "linger.ms=0", "-q"], timeout_s, ok=(0, 1))
            if consumer is not None:
                try:
                    consumer.wait(60)
                except subprocess.TimeoutExpired:
                    consumer.kill()
                    raise RuntimeError("the latency consumer did not read every record")
        finally:
            if consumer is not None and consumer.poll() is None:
                consumer.kill()
                consumer.wait()
        return percentiles(_samples(consumed if end_to_end else produced, min(rate, n // 2)))


def java_produce(bootstrap: str, topic: str, n: int, size: int, acks: str,
                 timeout_s: float = 600) -> float:
    """Kafka 2.8.2's ProducerPerformance (the Java producer, default settings besides acks and
    linger.ms 5 as the other clients): records/s."""
    from kafkalite.testing.apache_kafka import java_command

    command = java_command("org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                           "--num-records", str(n), "--record-size", str(size),
                           "--throughput", "-1", "--producer-props",
                           f"bootstrap.servers={bootstrap}", f"acks={acks}", "linger.ms=5",
                           heap="512m")
    command.remove("-XX:TieredStopAtLevel=1")   # a throughput run wants C2, as a broker does
    text = _run(command, timeout_s)
    # the last line is the whole run's summary (the ones before it are 5-second intervals)
    found = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", text)
    match = re.match(r"(\d+) ([\d.]+)", " ".join(found[-1])) if found else None
    if not match or int(match.group(1)) < n:
        raise RuntimeError(f"ProducerPerformance sent fewer than {n}:\n{text[-2000:]}")
    return float(match.group(2))


def confluent_produce(bootstrap: str, topic: str, n: int, size: int, acks: str) -> float:
    from kafka_client_bench import produce

    return n / produce(bootstrap, topic, n, b"x" * size, acks, "none")


def confluent_consume(bootstrap: str, topic: str, n: int) -> float:
    """A plain ``consume()`` loop from offset 0 of partition 0 until ``n`` records. Unlike
    kafka_client_bench's loop it asks for no more than are left, so the last call does not sit
    out its timeout waiting for a full batch of 10,000."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "vs-kafka-unused",
                         "enable.auto.commit": False, "log_level": 0})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    start = time.perf_counter()
    deadline = start + 300
    while got < n and time.perf_counter() < deadline:
        for message in consumer.consume(min(10000, n - got), 1.0):
            if message.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if got < n:
        raise RuntimeError(f"confluent-kafka consume: only {got} of {n} records came back")
    return n / elapsed


def kafkalite_produce(bootstrap: str, topic: str, n: int, size: int, acks: str) -> float:
    from plain_loop_bench import produce_loop

    return n / produce_loop(bootstrap, topic, n, b"x" * size, acks=int(acks))


def kafkalite_consume(bootstrap: str, topic: str, n: int) -> float:
    from plain_loop_bench import poll_loop

    return n / poll_loop(bootstrap, topic, n)


def leader_named_by(address: str, topic: str, partition: int, timeout_s: float = 2.0) -> int:
    """The leader of ``topic``-``partition`` as the broker at ``address`` (host:port) names it
    in its own Metadata (v1, encoded by kio), -1 for none. Asked of that broker alone: a client's
    metadata call may go to any broker it knows, the dying one too, whose stale answer or
    reconnect backoff then measured the client instead of the failover (0.95 s outliers)."""
    from kafkalite.protocol.kafka import codec
    from kafkalite.testing.conformance.raw import send_frame

    payload = codec.encode_request(3, 1, 1, "vs-kafka", {"topics": [{"name": topic}]})
    answer = send_frame(address, payload, timeout_s)
    if answer is None:
        raise ConnectionError(f"{address} closed the connection without answering Metadata")
    _cid, entity = codec.decode_response(3, 1, answer)
    for each in entity.topics:
        for part in each.partitions:
            if str(each.name) == topic and int(part.partition_index) == partition:
                return int(part.leader_id)
    return -1


def median(values: list[float]) -> float:
    return statistics.median(values)
