"""The clients of bench/chaos.py: a consumer reading throughout, the final read-back, and probe
writes sent to one chosen broker (the way a failover is timed: a *new* leader accepting acks=all).

The acks=all producer is tests/system/replication_tools.BackgroundProducer.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import defaultdict

from kafkalite import Consumer, TopicPartition
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch
from kafkalite.local.cluster import request

log = logging.getLogger("chaos")


class LiveConsumer:
    """A consumer thread assigned every partition, reading from the start while the faults run;
    on an error it makes a new consumer and goes on from where it was. ``reads``:
    {partition: {offset: value}}."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.reads: dict[int, dict[int, bytes]] = defaultdict(dict)
        self.errors = 0
        self.crashed: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-consumer", daemon=True)

    def start(self) -> "LiveConsumer":
        self._thread.start()
        return self

    def count(self) -> int:
        return sum(len(r) for r in list(self.reads.values()))

    def next_offsets(self) -> dict[int, int]:
        return {p: (max(self.reads[p]) + 1 if self.reads.get(p) else 0)
                for p in range(self.partitions)}

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self._consume()
                except Exception as exc:  # noqa: BLE001 - faults make clients fail; go on
                    self.errors += 1
                    log.debug("live consumer: %r; starting a new one", exc)
                    self._stop.wait(0.5)
        except BaseException as exc:
            self.crashed = exc
            raise

    def _consume(self) -> None:
        consumer = Consumer(bootstrap_servers=self.bootstrap, auto_offset_reset="earliest",
                            request_timeout_ms=10000, fetch_max_wait_ms=200)
        try:
            tps = [TopicPartition(self.topic, p) for p in range(self.partitions)]
            consumer.assign(tps)
            for tp, offset in self.next_offsets().items():
                consumer.seek(tps[tp], offset)
            while not self._stop.is_set():
                for tp, records in consumer.poll(timeout_ms=500).items():
                    mine = self.reads[tp.partition]
                    for record in records:
                        mine[record.offset] = record.value
        finally:
            consumer.close(autocommit=False)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def read_back(bootstrap: str, topic: str, partitions: int, ends: dict[int, int],
              timeout_s: float = 600) -> dict[int, dict[int, bytes]]:
    """Every record below ``ends`` ({partition: high watermark}), as {partition: {offset:
    value}} (compact: a long run's history does not fit in ConsumerRecord objects)."""
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        request_timeout_ms=10000, max_partition_fetch_bytes=4 << 20)
    reads: dict[int, dict[int, bytes]] = {p: {} for p in range(partitions)}
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    deadline = time.monotonic() + timeout_s
    try:
        while any(consumer.position(tp) < ends[tp.partition] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read back only up to "
                                   f"{ {tp.partition: consumer.position(tp) for tp in tps} } "
                                   f"of {ends} in {timeout_s:.0f} s")
            for tp, records in consumer.poll(timeout_ms=1000).items():
                for record in records:
                    if record.offset < ends[tp.partition]:
                        reads[tp.partition][record.offset] = record.value
    finally:
        consumer.close(autocommit=False)
    return reads


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    finally:
        consumer.close(autocommit=False)
    return {tp.partition: offset for tp, offset in ends.items()}


class Probes:
    """acks=all writes of ``b"probe-N"`` straight to one broker (no client library, no retry,
    no redirect to another leader); every acknowledged one is remembered for the loss check."""

    def __init__(self, topic: str):
        self.topic = topic
        self.acknowledged: list[tuple[bytes, int, int]] = []    # (value, partition, offset)
        self._numbers = itertools.count()

    def write(self, host: str, port: int, partition: int, timeout_s: float = 3.0
              ) -> int | None:
        """The error code the broker answered (0: acknowledged), None when it did not answer."""
        value = b"probe-%d" % next(self._numbers)
        batch = build_batch([(int(time.time() * 1000), b"probe", value, None)])
        try:
            response = request(host, port, m.ProduceRequest(
                acks=-1, timeout_ms=int(timeout_s * 1000),
                topic_data={self.topic: {partition: batch}}), timeout_s=timeout_s + 2)
        except OSError:
            return None
        answer = response.responses[self.topic][partition]
        if answer.error_code == 0:
            self.acknowledged.append((value, partition, answer.base_offset))
        return answer.error_code
