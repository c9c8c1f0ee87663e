"""Follow ``__transaction_state`` through the brokers for the console (on its sampler thread).

A kafkalite Consumer, assigned every partition of the topic (no group: the console commits
nothing), reads from the start once and then only what is new, decoding each record with
:mod:`kafkalite.txn.log_records` (byte for byte Kafka's TransactionLog, so a Kafka 2.8 cluster
reads the same). Each round reads for at most ``budget_s``, so a long log cannot hold the
other questions of a sample up; the next round goes on where it stopped.

History: the records below the end offsets the console first found were written before it
looked; they are marked so, and say nothing. When the topic did not exist at the first look
(no transactional producer had asked for a coordinator yet), every record is new. After a
failure the consumer is made again and re-reads from the start, the marks (the next offset not
yet handed out, per partition) keep what was handed out from being news twice.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from kafkalite.console.transactions import TxnRecord
from kafkalite.errors import CorruptRecordError, KafkaError, UnknownTopicOrPartitionError
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn import log_records

log = logging.getLogger(__name__)

TOPIC = "__transaction_state"


class TxnLogReader:
    def __init__(self, request_timeout_ms: int = 5000, budget_s: float = 3.0,
                 clock: Callable[[], float] = time.monotonic,
                 consumer_factory: Callable[..., Any] | None = None):
        self.request_timeout_ms = request_timeout_ms
        self.budget_s = budget_s
        self._clock = clock
        self._consumer_factory = consumer_factory     # tests pass a fake; else kafkalite's
        self._consumer: Any = None
        self._bootstrap: str | None = None
        self._partitions: list[TopicPartition] = []
        self._marks: dict[int, int] | None = None   # None until the first look

    def read(self, bootstrap: str, admin: Any) -> list[TxnRecord]:
        """The records written since the last call (all of them, marked history, the first
        time); [] when the topic does not exist yet. KafkaError when the brokers could not be
        read (the next call starts again)."""
        if self._consumer is None or self._bootstrap != bootstrap:
            self.close()
            if not self._open(bootstrap, admin):
                return []
        try:
            return self._read_new()
        except KafkaError:
            self.close()
            raise

    def _open(self, bootstrap: str, admin: Any) -> bool:
        try:
            (description,) = admin.describe_topics([TOPIC])
        except UnknownTopicOrPartitionError:
            if self._marks is None:
                self._marks = {}        # no log at the first look: everything to come is news
            return False
        self._partitions = [TopicPartition(TOPIC, p.partition)
                            for p in sorted(description.partitions, key=lambda p: p.partition)]
        factory = self._consumer_factory
        if factory is None:
            from kafkalite.client.consumer import Consumer as factory
        consumer = factory(bootstrap_servers=bootstrap, client_id="kafkalite-console",
                           enable_auto_commit=False, allow_auto_create_topics=False,
                           request_timeout_ms=max(self.request_timeout_ms, 1000),
                           fetch_max_wait_ms=100, default_api_timeout_ms=self.request_timeout_ms)
        try:
            consumer.assign(self._partitions)
            consumer.seek_to_beginning(*self._partitions)
            if self._marks is None:
                ends = consumer.end_offsets(self._partitions)
                self._marks = {tp.partition: end for tp, end in ends.items()}
        except KafkaError:
            consumer.close(autocommit=False)
            raise
        self._consumer, self._bootstrap = consumer, bootstrap
        return True

    def _read_new(self) -> list[TxnRecord]:
        consumer, marks = self._consumer, self._marks
        assert marks is not None
        ends = consumer.end_offsets(self._partitions)
        deadline = self._clock() + self.budget_s
        out: list[TxnRecord] = []
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            for tp, batch in consumer.poll(timeout_ms=200).items():
                for record in batch:
                    try:
                        transactional_id, entry = log_records.parse(record.key, record.value)
                    except CorruptRecordError as exc:
                        log.debug("%s-%s offset %s: %s", TOPIC, tp.partition, record.offset,
                                  exc)
                        continue
                    out.append(TxnRecord(tp.partition, record.offset, transactional_id, entry,
                                         history=record.offset < marks.get(tp.partition, 0)))
            if self._clock() > deadline:
                break
        for record in out:
            marks[record.partition] = max(marks.get(record.partition, 0), record.offset + 1)
        return out

    def close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close(autocommit=False)
            finally:
                self._consumer = None
