"""An exactly-once copier on confluent-kafka, run as its own process, and its judge (issue 22).

``python -m kafkalite.testing.txn_copier --bootstrap B --input IN --output OUT --group G
--transactional-id T`` copies every record of IN to OUT with the consume-transform-produce loop
librdkafka documents: a read_committed consumer in group G (no auto commit), a transactional
producer, one transaction per batch (``--batch`` records): begin, produce the transformed records,
``send_offsets_to_transaction`` with the consumer's group metadata (KIP-447), commit. A retriable
error retries the same call; an error that needs an abort aborts and rewinds the consumer to the
group's committed offsets; a fatal error (the producer fenced) ends the process with exit code 2,
a transactional call hanging well past its timeout (a librdkafka stall) with exit code 3 (a new
copier with the same transactional id takes over, as after any crash). It exits 0 once the
group's committed offsets reach the input's end offsets, taken when it starts (the input is
written before the copier runs).

It is a process of its own, not a thread of a test, so a test can SIGSTOP it and abandon its open
transaction, or kill it, as a real application would be. Each record copied keeps the input's
partition and offset in its value (``"<partition>:<offset>:<input value>"``) and goes to the same
partition of OUT, so a duplicate or a gap in the output names the input record. The process
reports on stdout, one JSON object a line (``event``: ``started``, ``committed``, ``aborted``,
``stopping``, ``fatal``, ``stalled``, ``done``); :class:`CopierProcess` runs it and follows them.

``--stop-in-transaction K`` makes the copier SIGSTOP itself inside its K-th transaction, after
the records are written (flushed) and before the offsets and the commit: the deterministic
"process paused past its transaction timeout" of the fault tests.

The judge is kcat, a client kafkalite did not write: :func:`read_committed_with_kcat` reads the
output with ``isolation.level=read_committed`` and :func:`exactly_once_problems` lists what is not
"every input (partition, offset) exactly once, on its own partition, and nothing else".
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any, Callable

EXIT_FATAL = 2
EXIT_STALLED = 3
API_TIMEOUT_S = 30          # each transactional call's own timeout
STALL_MARGIN_S = 15         # a call still running this long after its timeout is stalled


def _say(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


class Copier:
    """The copy loop of one process (confluent-kafka is imported only here)."""

    def __init__(self, args: argparse.Namespace):
        from confluent_kafka import Consumer, Producer

        self.args = args
        self.consumer = Consumer({
            "bootstrap.servers": args.bootstrap, "group.id": args.group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "isolation.level": "read_committed", "session.timeout.ms": args.session_timeout_ms,
            "enable.partition.eof": False, "log_level": 3})
        self.producer = Producer({
            "bootstrap.servers": args.bootstrap, "transactional.id": args.transactional_id,
            "transaction.timeout.ms": args.transaction_timeout_ms, "linger.ms": 5,
            "log_level": 3, **({"debug": args.debug} if args.debug else {})})
        self.ends = self._input_ends()
        self.transactions = 0       # begun, counting from 1
        self.copied = 0             # records in committed transactions
        self.rewind_pending = False

    def _input_ends(self) -> dict[int, int]:
        from confluent_kafka import TopicPartition

        meta = self.consumer.list_topics(self.args.input, timeout=60).topics[self.args.input]
        if meta.error is not None:
            raise RuntimeError(f"input topic {self.args.input}: {meta.error}")
        return {p: self.consumer.get_watermark_offsets(
                    TopicPartition(self.args.input, p), timeout=60, cached=False)[1]
                for p in sorted(meta.partitions)}

    # --- the loop ---------------------------------------------------------------------------
    def run(self) -> int:
        from confluent_kafka import KafkaException

        self._guarded("init_transactions", lambda: self.producer.init_transactions(120), 120)
        self.consumer.subscribe([self.args.input])
        _say("started", ends=self.ends, pid=os.getpid())
        try:
            while True:
                if self.rewind_pending:
                    self._rewind()
                batch = self._consume()
                if not batch:
                    if self._done():
                        _say("done", copied=self.copied, transactions=self.transactions)
                        return 0
                    continue
                self._transaction(batch)
        except KafkaException as exc:
            error = exc.args[0]
            _say("fatal", error=error.name(), text=error.str(), fatal=error.fatal())
            return EXIT_FATAL
        finally:
            self.consumer.close()

    def _consume(self) -> list[Any]:
        """Up to ``--batch`` records; what arrived within a second when fewer are there."""
        batch: list[Any] = []
        deadline = time.monotonic() + 1.0
        while len(batch) < self.args.batch and time.monotonic() < deadline:
            for msg in self.consumer.consume(self.args.batch - len(batch), timeout=0.2):
                if msg.error() is None:
                    batch.append(msg)
        return batch

    def _transaction(self, batch: list[Any]) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        self.transactions += 1
        number = self.transactions
        self.producer.begin_transaction()      # only fails fatally (or on a misuse)
        try:
            offsets: dict[int, int] = {}
            for msg in batch:
                value = b"%d:%d:%s" % (msg.partition(), msg.offset(), msg.value() or b"")
                self._produce(value, msg.key(), msg.partition())
                offsets[msg.partition()] = max(offsets.get(msg.partition(), 0), msg.offset() + 1)
            if number == self.args.stop_in_transaction:
                # the records are in the partitions' logs (the LSO held below them) when it stops
                self._retrying(lambda: self._flushed(self.producer.flush(60)))
                _say("stopping", transaction=number, pid=os.getpid())
                os.kill(os.getpid(), signal.SIGSTOP)
                _say("continued", transaction=number)
            positions = [TopicPartition(self.args.input, p, o) for p, o in sorted(offsets.items())]
            metadata = self.consumer.consumer_group_metadata()
            self._retrying(lambda: self._guarded(
                "send_offsets_to_transaction", lambda: self.producer.send_offsets_to_transaction(
                    positions, metadata, API_TIMEOUT_S)))
            self._retrying(lambda: self._guarded(
                "commit_transaction", lambda: self.producer.commit_transaction(API_TIMEOUT_S)))
        except KafkaException as exc:
            error = exc.args[0]
            if error.fatal() or not error.txn_requires_abort():
                raise
            self._retrying(lambda: self._guarded(
                "abort_transaction", lambda: self.producer.abort_transaction(API_TIMEOUT_S)))
            self.rewind_pending = True
            _say("aborted", transaction=number, error=error.name(), text=error.str())
            return
        self.copied += len(batch)
        _say("committed", transaction=number, records=len(batch), copied=self.copied,
             offsets={str(p): o for p, o in offsets.items()})

    def _produce(self, value: bytes, key: bytes | None, partition: int) -> None:
        while True:
            try:
                self.producer.produce(self.args.output, value=value, key=key,
                                      partition=partition)
                return
            except BufferError:
                self.producer.poll(0.05)

    @staticmethod
    def _flushed(left: int) -> None:
        if left:
            raise RuntimeError(f"{left} records not delivered within the flush timeout")

    @staticmethod
    def _guarded(name: str, call: Callable[[], Any], timeout_s: float = API_TIMEOUT_S) -> Any:
        """``call`` (a transactional API call given ``timeout_s``); when it has not returned
        ``STALL_MARGIN_S`` after that, the process reports ``stalled`` and exits with
        EXIT_STALLED, as a supervised application whose health check failed would be restarted.
        librdkafka (2.16) does stall so: a TxnOffsetCommit waiting for a cached group
        coordinator that went down is examined again only when some broker connection changes
        state, and its timeout is not enforced."""
        def stalled() -> None:
            _say("stalled", call=name, after_s=timeout_s + STALL_MARGIN_S)
            os._exit(EXIT_STALLED)

        watchdog = threading.Timer(timeout_s + STALL_MARGIN_S, stalled)
        watchdog.daemon = True
        watchdog.start()
        try:
            return call()
        finally:
            watchdog.cancel()

    @staticmethod
    def _retrying(call: Callable[[], Any]) -> Any:
        """``call`` again while its error says retriable (librdkafka's documented rule for the
        transactional API: a retriable error means the same call may simply be repeated)."""
        from confluent_kafka import KafkaException

        while True:
            try:
                return call()
            except KafkaException as exc:
                if not exc.args[0].retriable():
                    raise

    def _rewind(self) -> None:
        """Back to the group's committed offsets (read with require_stable: librdkafka asks so
        under read_committed), the beginning where none; seek fails while the assignment is still
        being set up, and is tried again on the next round then."""
        from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

        try:
            assignment = self.consumer.assignment()
            for tp in self.consumer.committed(assignment, timeout=60):
                offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
        except KafkaException as exc:
            _say("rewind-failed", error=exc.args[0].name())
            return
        self.rewind_pending = False

    def _done(self) -> bool:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            committed = self.consumer.committed(
                [TopicPartition(self.args.input, p) for p in self.ends], timeout=30)
        except KafkaException:
            return False
        return {tp.partition: tp.offset for tp in committed} == self.ends


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kafkalite.testing.txn_copier",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--batch", type=int, default=500, help="records per transaction")
    parser.add_argument("--transaction-timeout-ms", type=int, default=60000)
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    parser.add_argument("--debug", default=None,
                        help="librdkafka's debug contexts for the producer, e.g. eos,protocol")
    parser.add_argument("--stop-in-transaction", type=int, default=None, metavar="K",
                        help="SIGSTOP this process inside its K-th transaction")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return Copier(parse_args(argv)).run()


# --- for tests and benches ------------------------------------------------------------------


class CopierProcess:
    """One copier process: its JSON events as they come (``events``), SIGSTOP/SIGCONT, exit;
    its stderr (librdkafka's log) also goes to ``log_path`` when given."""

    def __init__(self, bootstrap: str, source: str, sink: str, group: str, transactional_id: str,
                 *extra: str, python: str = sys.executable, log_path: str | None = None):
        command = [python, "-m", "kafkalite.testing.txn_copier", "--bootstrap", bootstrap,
                   "--input", source, "--output", sink, "--group", group,
                   "--transactional-id", transactional_id, *extra]
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self.log_path = log_path
        self._log = open(log_path, "a") if log_path else None
        self._changed = threading.Condition()
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, text=True,
                                        start_new_session=True)
        self._readers = [threading.Thread(target=self._read, args=(self.process.stdout, True),
                                          daemon=True),
                         threading.Thread(target=self._read, args=(self.process.stderr, False),
                                          daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: Any, events: bool) -> None:
        for line in stream:
            with self._changed:
                if events:
                    try:
                        self.events.append(json.loads(line))
                    except ValueError:
                        self.stderr.append(line.rstrip("\n"))
                else:
                    self.stderr.append(line.rstrip("\n"))
                    if self._log is not None:
                        self._log.write(line)
                        self._log.flush()
                self._changed.notify_all()
        if not events and self._log is not None:
            self._log.close()

    def committed(self) -> int:
        """How many of its transactions committed so far."""
        with self._changed:
            return sum(1 for e in self.events if e["event"] == "committed")

    def seen(self, event: str) -> dict[str, Any] | None:
        with self._changed:
            return next((e for e in self.events if e["event"] == event), None)

    def wait_for(self, condition: Callable[["CopierProcess"], object], timeout_s: float,
                 what: str, required: bool = True) -> Any:
        """Until ``condition(self)`` holds; after ``timeout_s``, or when the process ended
        without it, AssertionError (with the copier's output), or None when not ``required``."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                result = condition(self)
                if result:
                    return result
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None
                                 and not any(r.is_alive() for r in self._readers)):
                    if not required:
                        return None
                    raise AssertionError(f"copier: no {what} after {timeout_s:.0f} s "
                                         f"(exit {self.process.poll()})\n{self.describe()}")
                self._changed.wait(min(left, 0.5))

    def wait_exit(self, timeout_s: float) -> int:
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"copier still running after {timeout_s:.0f} s\n"
                                 f"{self.describe()}") from None
        for reader in self._readers:
            reader.join(10)
        return code

    def pause(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def is_stopped(self) -> bool:
        """The kernel says the process is stopped (``T`` in /proc/<pid>/stat)."""
        try:
            with open(f"/proc/{self.process.pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] == "T"
        except OSError:
            return False

    def close(self) -> None:
        if self.process.poll() is None:
            self.resume()
            self.process.kill()
            self.process.wait()

    def describe(self) -> str:
        with self._changed:
            summary = Counter(e["event"] for e in self.events)
            tail = [json.dumps(e) for e in self.events
                    if e["event"] not in ("committed",)][-20:]
            return (f"events {dict(summary)}; last: {tail}\nstderr tail "
                    f"({self.log_path or 'not kept'}):\n"
                    + "\n".join(self.stderr[-30:]))


def prepare_topics(bootstrap: str, source: str, sink: str, records: int, partitions: int = 3,
                   replication_factor: int = 3) -> dict[int, int]:
    """Create ``source`` and ``sink`` (``partitions`` each), wait until every partition has a
    leader and a full ISR, write ``records`` records to ``source`` round robin (an idempotent
    producer: each exactly once); returns the input's end offsets."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkalite.local.cluster import wait_until

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, partitions, replication_factor)
                                       for t in (source, sink)]).values():
        future.result(60)

    def settled() -> bool:
        meta = admin.list_topics(timeout=10).topics
        return all(t in meta and meta[t].error is None and len(meta[t].partitions) == partitions
                   and all(p.leader >= 0 and len(p.isrs) == replication_factor
                           for p in meta[t].partitions.values()) for t in (source, sink))
    wait_until(settled, 60, f"leaders and full ISRs of {source} and {sink}")
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 20})
    for i in range(records):
        while True:
            try:
                producer.produce(source, key=b"%d" % i, value=b"record-%d" % i,
                                 partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    left = producer.flush(120)
    if left:
        raise RuntimeError(f"{left} input records not delivered")
    return {p: records // partitions + (1 if p < records % partitions else 0)
            for p in range(partitions)}


def read_committed_with_kcat(bootstrap: str, topic: str,
                             timeout_s: float = 180) -> list[tuple[int, int, bytes]]:
    """Every record of ``topic`` that kcat reads with ``isolation.level=read_committed``, to the
    end of each partition: (output partition, output offset, value)."""
    out = subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", topic, "-e", "-q",
                          "-X", "isolation.level=read_committed", "-f", "%p %o %s\n"],
                         capture_output=True, timeout=timeout_s, check=True).stdout
    records = []
    for line in out.splitlines():
        partition, offset, value = line.split(b" ", 2)
        records.append((int(partition), int(offset), value))
    return records


def exactly_once_problems(records: list[tuple[int, int, bytes]],
                          ends: dict[int, int]) -> list[str]:
    """What is wrong with the copy ``records`` of an input whose partitions end at ``ends``
    (every input offset below the end, each exactly once, on the input's partition): empty when
    nothing."""
    problems = []
    seen: Counter[tuple[int, int]] = Counter()
    for partition, offset, value in records:
        parts = value.split(b":", 2)
        try:
            source = (int(parts[0]), int(parts[1]))
        except (ValueError, IndexError):
            problems.append(f"output {partition}@{offset}: not a copy: {value[:60]!r}")
            continue
        if source[0] != partition:
            problems.append(f"output {partition}@{offset}: a copy of input partition "
                            f"{source[0]}")
        seen[source] += 1
    expected = {(p, o) for p, end in ends.items() for o in range(end)}
    duplicates = sorted(s for s, n in seen.items() if n > 1)
    missing = sorted(expected - set(seen))
    foreign = sorted(set(seen) - expected)
    if duplicates:
        problems.append(f"{len(duplicates)} inputs copied more than once, e.g. {duplicates[:5]}")
    if missing:
        problems.append(f"{len(missing)} inputs missing, e.g. {missing[:5]}")
    if foreign:
        problems.append(f"{len(foreign)} copies of no input, e.g. {foreign[:5]}")
    return problems


if __name__ == "__main__":
    sys.exit(main())
