"""Kafka Streams 2.8.2 against both systems: one application (StreamsApp.java) with a word count
(groupBy the word: a repartition topic; count: the "counts" store and its compacted changelog)
and per-key sums over 10-second tumbling windows (the "window-sums" window store and its
changelog), input produced and output read back with confluent-kafka (librdkafka).

The final count of every word and the sum of every (key, window) must equal a plain Python
computation of the same input, and the internal topics Streams created must be there with Kafka's
configs and hold what Streams wrote (the changelog's latest counts are the counts). With
``exactly_once_beta`` (transactions, KIP-447) the same holds on both systems.
"""

from __future__ import annotations

import collections
import random
import struct
import subprocess
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from jvm_apps import command, create_topic, jvm_classes, parse_lines, unique  # noqa: F401

from kafkalite.testing.independent_read import read_to_end

pytestmark = [pytest.mark.integration]

WORDS = ("kafka", "lite", "stream", "table", "window", "broker", "zookeeper", "log", "offset")
WINDOW_MS = 10_000
INIT_TXN_TIMEOUT = "Timeout exception caught trying to initialize transactions"


def _input(seed: int):
    rnd = random.Random(seed)
    lines = [" ".join(rnd.choice(WORDS).upper() if rnd.random() < 0.2 else rnd.choice(WORDS)
                      for _ in range(rnd.randint(1, 8))) + rnd.choice(("", ".", "!"))
             for _ in range(60)]
    base = (int(time.time() * 1000) - 300_000) // WINDOW_MS * WINDOW_MS
    amounts = [(f"user{rnd.randint(0, 3)}", rnd.randint(-50, 100), base + i * 900)
               for i in range(50)]
    return lines, amounts


def _expected(lines, amounts):
    counts = collections.Counter(w.lower() for line in lines for w in line.replace(".", " ")
                                 .replace("!", " ").split())
    sums: dict[str, int] = collections.defaultdict(int)
    for key, amount, ts in amounts:
        sums[f"{key}@{ts // WINDOW_MS * WINDOW_MS}"] += amount
    return dict(counts), dict(sums)


def _until(condition, timeout_s: float, what) -> None:
    """Call ``condition`` (which waits a little itself) until it is true; its assertion errors
    end the wait at once (wait_until would retry them)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what()}"


def _run(system, classes, tmp_path, guarantee: str) -> None:
    bootstrap = system.bootstrap_servers
    app = unique("jvm-streams")
    text_in, counts_out, amounts_in, sums_out = (f"{app}-{t}" for t in
                                                 ("text", "counts", "amounts", "sums"))
    for topic in (text_in, counts_out, amounts_in, sums_out):
        create_topic(bootstrap, topic, 2)
    lines, amounts = _input(seed=25)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i, line in enumerate(lines):
        producer.produce(text_in, key=str(i).encode(), value=line.encode())
    for key, amount, ts in amounts:
        producer.produce(amounts_in, key=key.encode(), value=struct.pack(">q", amount),
                         timestamp=ts)
    assert producer.flush(30) == 0
    expected_counts, expected_sums = _expected(lines, amounts)

    out_path = tmp_path / "streams.out"
    err_path = tmp_path / "streams.err"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(command(classes, "StreamsApp", bootstrap, app,
                                        str(tmp_path / "state"), guarantee, text_in, counts_out,
                                        amounts_in, sums_out),
                                stdin=subprocess.PIPE, stdout=out, stderr=err)

    def report() -> str:
        return (f"StreamsApp ({guarantee}) stdout:\n{out_path.read_text()[-5000:]}\n"
                f"stderr:\n{err_path.read_text()[-8000:]}")

    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("jvm-streams-reader"),
                       "enable.auto.commit": False, "isolation.level": "read_committed"})
    counts: dict[str, int] = {}
    sums: dict[str, int] = {}
    try:
        reader.assign([TopicPartition(t, p, OFFSET_BEGINNING)
                       for t in (counts_out, sums_out) for p in (0, 1)])

        def complete() -> bool:
            for msg in reader.consume(1000, timeout=0.2):
                assert msg.error() is None, msg.error()
                value = struct.unpack(">q", msg.value())[0]
                (counts if msg.topic() == counts_out else sums)[msg.key().decode()] = value
            if counts == expected_counts and sums == expected_sums:
                return True
            assert proc.poll() is None, f"exited {proc.returncode}\n{report()}"
            assert not [e for e in parse_lines(out_path.read_text())
                        if e["event"] == "uncaught" or e.get("state") == "ERROR"], report()
            # Streams retries a producer's initTransactions that timed out (max.block.ms, 10 s
            # here) for task.timeout.ms (5 min): twice in a row is a broker that never answers
            assert err_path.read_text().count(INIT_TXN_TIMEOUT) < 2, report()
            return False

        _until(complete, 90, lambda: f"the word counts and window sums: counts {counts}\n"
                                     f"sums {sums}\n{report()}")
    except BaseException:
        proc.kill()     # failed already: no graceful close to wait for
        proc.wait()
        raise
    finally:
        reader.close()
    proc.stdin.close()  # the app closes its streams and exits
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, report()
    events = parse_lines(out_path.read_text())
    # (the state listener's last line may come before or after)
    assert {"event": "closed", "clean": True, "state": "NOT_RUNNING"} in events, report()
    assert "RUNNING" in [e.get("state") for e in events]

    # the internal topics Streams created, with Streams' configs
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = admin.list_topics(timeout=10).topics
    internal = {name: len(meta.partitions) for name, meta in topics.items()
                if name.startswith(f"{app}-") and name not in (text_in, counts_out, amounts_in,
                                                               sums_out)}
    assert internal == {f"{app}-counts-repartition": 2, f"{app}-counts-changelog": 2,
                        f"{app}-window-sums-changelog": 2}
    resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in sorted(internal)]
    described = {r.name: {k: v.value for k, v in f.result(30).items()}
                 for r, f in admin.describe_configs(resources).items()}
    assert described[f"{app}-counts-changelog"]["cleanup.policy"] == "compact"
    assert described[f"{app}-window-sums-changelog"]["cleanup.policy"] == "compact,delete"
    assert described[f"{app}-counts-repartition"]["cleanup.policy"] == "delete"
    assert described[f"{app}-counts-repartition"]["retention.ms"] == "-1"
    for name in internal:
        assert topics[name].partitions[0].replicas and len(topics[name].partitions[0].replicas) == 3

    # the changelog holds the counts: its latest value of every word is the word's count
    changelog: dict[str, int] = {}
    for msg in read_to_end(bootstrap, f"{app}-counts-changelog", 2,
                           isolation_level="read_committed", timeout_s=30):
        assert len(msg.value()) == 8
        changelog[msg.key().decode()] = struct.unpack(">q", msg.value())[0]
    assert changelog == expected_counts


@pytest.mark.parametrize("system", ["kafkalite", "kafka"], indirect=True)
def test_streams_word_count_and_windowed_sums_at_least_once(system, jvm_classes, tmp_path):
    _run(system, jvm_classes, tmp_path, "at_least_once")


@pytest.mark.parametrize("system", ["kafkalite", "kafka"], indirect=True)
def test_streams_word_count_and_windowed_sums_exactly_once_beta(system, jvm_classes, tmp_path):
    _run(system, jvm_classes, tmp_path, "exactly_once_beta")
