"""The producer's sender thread (Kafka's ``Sender``): drains the accumulator, sends Produce
requests, handles the answers.

Per leader it drains the sendable units of the ``RecordAccumulator`` into one Produce request
(several partitions per request), pipelines up to ``max_in_flight_requests_per_connection``
requests per broker, and resolves the records' futures from the responses; retriable errors put
a unit back in front of its partition (``producer``'s doc has the delivery rules). Its select loop
is ``io_loop.IoLoop``, the same code the consumer's fetcher runs; ``send()`` and ``close()`` wake
it through the loop's wakeup pipe.

``clock`` (the producer's ``_clock``) times linger, retry backoff, delivery timeouts and metadata
backoff; request deadlines are the connections' own.

A transactional producer (``transaction_manager``) changes four things, as Java's Sender: the
producer id and epoch are the transaction manager's (no InitProducerId here); a partition's
batches wait until AddPartitionsToTxn has put the partition in the transaction (sent from this
thread, ``txn_coordinator.add_partitions_once``); batches carry the transactional bit and the
Produce request the transactional id; and in an abortable or fatal error state, or while
aborting, every batch not yet sent fails at once (TransactionAbortedError when aborting without
an error), while a batch that fails for good puts the transaction in an error state instead of
resetting the producer id.
"""

from __future__ import annotations

import logging
import random
import threading

from kafkalite import errors
from kafkalite.client.accumulator import ProduceUnit, RecordAccumulator
from kafkalite.client.failure_log import RepeatedFailureLog
from kafkalite.client.io_loop import IoLoop
from kafkalite.client.transaction_manager import (
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
    FATAL_ERROR,
    TransactionAbortedError,
)
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol.messages import InitProducerIdRequest, ProduceRequest
from kafkalite.record.batch import build_batch_columns

log = logging.getLogger("kafkalite.client.producer")

__all__ = ["Sender"]


class _InFlight:
    __slots__ = ("correlation_id", "units", "sent_at")

    def __init__(self, correlation_id: int, units: dict, sent_at: float):
        self.correlation_id = correlation_id
        self.units = units
        self.sent_at = sent_at


class Sender(threading.Thread):
    """The producer's I/O thread: drains the accumulator, sends, handles responses."""

    def __init__(self, producer, coalesce_bytes: int, on_crash):
        super().__init__(name=f"kafkalite-producer-{producer.config['client_id']}", daemon=True)
        cfg = producer.config
        self.cluster = producer._cluster
        self.acks = cfg["acks"]
        self.codec = producer._codec
        self.level = producer._compression_level
        self.retries = cfg["retries"]
        self.retry_backoff = cfg["retry_backoff_ms"] / 1000
        self.request_timeout_ms = cfg["request_timeout_ms"]
        self.delivery_timeout = cfg["delivery_timeout_ms"] / 1000
        self.max_in_flight = cfg["max_in_flight_requests_per_connection"]
        self.max_request_size = cfg["max_request_size"]
        self.idempotent = cfg["enable_idempotence"]
        self.clock = producer._clock
        self.accumulator = RecordAccumulator(cfg["batch_size"], cfg["linger_ms"],
                                             cfg["buffer_memory"], coalesce_bytes, self.wakeup,
                                             producer._max_block, clock=self.clock)
        self.pool = self.cluster.pool()
        self.loop = IoLoop(wakeable=True)         # node -> connection, and the wakeup pipe
        self._registered = self.loop.registered
        self._in_flight: dict[int, list[_InFlight]] = {}  # node -> requests awaiting answers
        self._in_flight_tps: set = set()
        self._running = True
        self._force = False
        self._metadata_backoff_until = 0.0
        self._metadata_failures = 0         # failed refreshes in a row (exponential backoff)
        self._metadata_log = producer._metadata_log
        self._init_pid_log = RepeatedFailureLog(log, "InitProducerId failed (will retry)")
        # brokers that refused or dropped a connect: node -> (retry at, failures in a row);
        # their batches wait in the accumulator meanwhile (not counted as retries), as Kafka's
        # reconnect backoff keeps a disconnected node's batches from being drained
        self._unreachable: dict[int, tuple[float, int]] = {}
        self._connect_log = RepeatedFailureLog(log, "producer cannot connect to the leader")
        self.producer_id = -1
        self.producer_epoch = -1
        self._sequences: dict = {}
        self.tm = producer._transaction_manager           # None unless transactional
        self.txn = producer._txn_client
        self.transactional_id = self.tm.transactional_id if self.tm is not None else None
        self._add_retry_at = 0.0
        self._sequence_owner = (-1, -1)     # the (producer id, epoch) _sequences belong to
        self.failure: KafkaError | None = None
        self._on_crash = on_crash
        self.metrics = {"records_sent": 0, "requests": 0, "retries": 0, "errors": 0,
                        "metadata_refreshes": 0, "metadata_refresh_failures": 0}

    # --- control ----------------------------------------------------------------------------
    def wakeup(self) -> None:
        self.loop.wakeup()

    def initiate_close(self) -> None:
        self._running = False
        self.loop.clear_wakeup()
        self.wakeup()

    def force_close(self) -> None:
        self._force = True
        self._running = False
        self.loop.clear_wakeup()
        self.wakeup()

    # --- main loop --------------------------------------------------------------------------
    def run(self) -> None:
        try:
            while True:
                if not self._running:
                    if self._force:
                        break
                    if (not self._in_flight_count() and not self.accumulator.has_unsent()):
                        break
                self._run_once()
        except Exception as exc:  # noqa: BLE001 - never die silently
            log.exception("producer sender thread crashed")
            self.failure = exc if isinstance(exc, KafkaError) else KafkaError(
                f"the producer's sender thread crashed: {exc!r}")
            self._on_crash()
        finally:
            self._shutdown()

    def _in_flight_count(self) -> int:
        return sum(len(v) for v in self._in_flight.values())

    def _run_once(self) -> None:
        now = self.clock()
        # records queued or in flight: only then does the sender need metadata or a producer
        # id (send() waits for a topic's metadata itself), so an idle producer stays quiet
        has_work = self.accumulator.buffered > 0
        tm = self.tm
        if tm is not None:
            if has_work:
                self._transaction_step(now)
                now = self.clock()
        elif self.idempotent and self.producer_id < 0 and has_work:
            if self._in_flight_count():        # finish what was sent under the old id first
                self._wait(self.retry_backoff)
                return
            if not self._init_producer_id(now):
                self._wait(self.retry_backoff)
                return
        if has_work and self.cluster.stale() and now >= self._metadata_backoff_until:
            self._refresh_metadata(now)
            now = self.clock()
        self._expire(now)
        units_by_node, next_check, unknown = self.accumulator.drain(
            now, self._leader_for, self._can_send, self._in_flight_tps, self.max_request_size,
            None if tm is None else tm.added)
        if unknown:
            self.cluster.request_update()
        for node, units in units_by_node.items():
            self._send_units(node, units)
        timeout = next_check
        if unknown or (self.cluster.update_requested and has_work):
            delay = max(self._metadata_backoff_until - self.clock(), 0.0) or \
                self.retry_backoff
            timeout = delay if timeout is None else min(timeout, delay)
        if self._unreachable and has_work:
            clock_now = self.clock()
            waits = [until - clock_now for until, _n in self._unreachable.values()
                     if until > clock_now]
            if waits:
                timeout = min(waits) if timeout is None else min(timeout, min(waits))
        if tm is not None and has_work and tm.has_partitions_to_add():
            delay = max(self._add_retry_at - self.clock(), 0.0) or self.retry_backoff
            timeout = delay if timeout is None else min(timeout, delay)
        if not self._running and not units_by_node and timeout is None:
            timeout = 0.05
        self._wait(timeout)

    def _transaction_step(self, now: float) -> None:
        """A transactional producer's turn before draining: fail what must not be sent (error
        state, aborting), else add the partitions that wait for AddPartitionsToTxn."""
        tm = self.tm
        if tm.state in (ABORTABLE_ERROR, FATAL_ERROR, ABORTING_TRANSACTION):
            units = self.accumulator.abort_all()
            if units:
                error = tm.last_error or TransactionAbortedError()
                for unit in units:
                    self._finish_failed(unit, error, sent=False)
            return
        if tm.has_partitions_to_add() and now >= self._add_retry_at:
            delay = self.txn.add_partitions_once()
            if delay is not None:
                self._add_retry_at = self.clock() + delay

    def _wait(self, timeout: float | None) -> None:
        """The select loop (io_loop, the consumer's fetcher runs the same): responses, request
        timeouts (bounding ``timeout``), wakeups from ``send()`` and ``close()``."""
        self.loop.poll(timeout, self._on_ready)

    def _on_ready(self, node: int) -> None:
        self._read(node, self.clock())

    def _leader_for(self, tp) -> int | None:
        return self.cluster.snapshot.leader_for(tp[0], tp[1])

    def _can_send(self, node: int) -> bool:
        if node in self._unreachable and self._unreachable[node][0] > self.clock():
            return False
        requests = self._in_flight.get(node)
        return requests is None or len(requests) < self.max_in_flight

    def _connect(self, node: int):
        """The connection to ``node``; on a failed connect, back off from the node
        (``retry_backoff_ms`` doubling up to 1 s) and raise the NetworkError."""
        try:
            conn = self.pool.get(node)
        except KafkaError as exc:
            failures = self._unreachable.get(node, (0.0, 0))[1] + 1
            backoff = min(self.retry_backoff * (1 << min(failures - 1, 16)),
                          max(1.0, self.retry_backoff))
            self._unreachable[node] = (self.clock() + backoff, failures)
            self._connect_log.failed(exc)
            self.cluster.request_update()       # the leader may have moved
            raise
        if self._unreachable.pop(node, None) is not None and not self._unreachable:
            self._connect_log.succeeded()
        return conn

    def _refresh_metadata(self, now: float) -> None:
        try:
            self.cluster.refresh()
            self.metrics["metadata_refreshes"] += 1
            self._metadata_failures = 0
            backoff = self.retry_backoff
        except KafkaError as exc:
            self.metrics["metadata_refresh_failures"] += 1
            self._metadata_log.failed(exc)
            # back off exponentially while it keeps failing (retry_backoff_ms doubling up to
            # 1 s, as Kafka's reconnect.backoff.max.ms); an answer resets it
            self._metadata_failures += 1
            backoff = min(self.retry_backoff * (1 << min(self._metadata_failures - 1, 16)),
                          max(1.0, self.retry_backoff))
        self._metadata_backoff_until = now + backoff

    def _init_producer_id(self, now: float) -> bool:
        try:
            snap = self.cluster.maybe_refresh()
            nodes = sorted(snap.brokers)
            if not nodes:
                self.cluster.request_update()
                return False
            conn = self.cluster.connect(random.choice(nodes))
            try:
                resp = conn.request(InitProducerIdRequest())
            finally:
                conn.close()
        except KafkaError as exc:
            if not exc.retriable:
                raise
            self._init_pid_log.failed(exc)
            return False
        if resp.error_code:
            err = errors.for_code(resp.error_code, resp.error_message)
            if not err.retriable:
                raise err
            return False
        self._init_pid_log.succeeded()
        self.producer_id = resp.producer_id
        self.producer_epoch = resp.producer_epoch
        self._sequences.clear()
        self.accumulator.reset_built()      # queued retries get the new id and sequences
        return True

    # --- sending ----------------------------------------------------------------------------
    def _build(self, unit: ProduceUnit) -> bytes:
        if unit.data is None:
            pid, epoch, seq = -1, -1, -1
            if self.tm is not None:
                pid, epoch = self.tm.producer_id, self.tm.producer_epoch
                if (pid, epoch) != self._sequence_owner:   # a new epoch starts at sequence 0
                    self._sequences.clear()
                    self._sequence_owner = (pid, epoch)
            elif self.idempotent:
                pid, epoch = self.producer_id, self.producer_epoch
            if self.idempotent:
                if unit.base_sequence < 0:
                    unit.base_sequence = self._sequences.get(unit.tp, 0)
                    self._sequences[unit.tp] = (unit.base_sequence + unit.record_count) \
                        & 0x7FFFFFFF
                seq = unit.base_sequence
            # from the accumulator's columns, unchecked: send() validated every record
            unit.data = build_batch_columns(*unit.columns(), self.codec, producer_id=pid,
                                            producer_epoch=epoch, base_sequence=seq,
                                            compression_level=self.level,
                                            transactional=self.tm is not None)
        return unit.data

    def _send_units(self, node: int, units: list[ProduceUnit]) -> None:
        topic_data: dict[str, dict[int, bytes]] = {}
        by_tp: dict = {}
        for unit in units:
            try:
                data = self._build(unit)
            except Exception as exc:  # noqa: BLE001 - a bad record fails its own unit only
                self._finish_failed(unit, exc if isinstance(exc, KafkaError) else
                                    errors.InvalidRecordError(f"cannot encode records: {exc}"))
                continue
            topic_data.setdefault(unit.tp[0], {})[unit.tp[1]] = data
            by_tp[unit.tp] = unit
        if not by_tp:
            return
        request = ProduceRequest(transactional_id=self.transactional_id, acks=self.acks,
                                 timeout_ms=self.request_timeout_ms, topic_data=topic_data)
        now = self.clock()
        try:
            conn = self._connect(node)
        except KafkaError:
            # nothing was sent: the units wait in front of their partitions (no retry counted)
            # until the node can be tried again or the metadata names another leader
            for unit in by_tp.values():
                self._in_flight_tps.discard(unit.tp)
                unit.retry_at = now
                self.accumulator.reenqueue(unit)
            return
        try:
            self.loop.register(node, conn)
            cid = conn.send(request)
        except KafkaError as exc:
            self._drop(node)
            for unit in by_tp.values():
                self._unit_error(unit, exc, now)
            return
        self.metrics["requests"] += 1
        if self.acks == 0:
            for unit in by_tp.values():
                self._finish_ok(unit, -1, -1, -1)
            return
        self._in_flight.setdefault(node, []).append(_InFlight(cid, by_tp, now))

    def _drop(self, node: int) -> list[_InFlight]:
        self.loop.unregister(node)
        self.pool.drop(node)
        return self._in_flight.pop(node, [])

    # --- responses --------------------------------------------------------------------------
    def _read(self, node: int, now: float) -> None:
        conn = self._registered.get(node)
        if conn is None:
            return
        try:
            results = conn.receive_available()
        except KafkaError as exc:
            for entry in self._drop(node):
                for unit in entry.units.values():
                    self._unit_error(unit, exc, now)
            self.cluster.request_update()
            return
        requests = self._in_flight.get(node, [])
        for cid, result in results:
            if not requests or requests[0].correlation_id != cid:  # pragma: no cover
                log.error("unexpected produce response %d from broker %d", cid, node)
                continue
            entry = requests.pop(0)
            self._handle_response(entry, result, now)
        if not requests:
            self._in_flight.pop(node, None)

    def _handle_response(self, entry: _InFlight, result, now: float) -> None:
        if isinstance(result, KafkaError):
            for unit in entry.units.values():
                self._unit_error(unit, result, now)
            return
        responses = result.responses
        for tp, unit in entry.units.items():
            pr = responses.get(tp[0], {}).get(tp[1])
            if pr is None:
                self._unit_error(unit, errors.UnknownServerError(
                    f"the broker's produce response has no entry for {tp[0]}-{tp[1]}"), now)
            elif pr.error_code == 0:
                self._finish_ok(unit, pr.base_offset, pr.log_append_time, pr.log_start_offset)
            else:
                exc = errors.for_code(pr.error_code, pr.error_message)
                if isinstance(exc, errors.DuplicateSequenceNumberError):
                    self._finish_ok(unit, pr.base_offset, pr.log_append_time,
                                    pr.log_start_offset)
                else:
                    self._unit_error(unit, exc, now)

    def _finish_ok(self, unit: ProduceUnit, base_offset: int, log_append_time: int,
                   log_start_offset: int) -> None:
        self._in_flight_tps.discard(unit.tp)
        self.metrics["records_sent"] += unit.record_count
        unit.resolve(base_offset, log_append_time, log_start_offset)
        self.accumulator.completed(unit)

    def _finish_failed(self, unit: ProduceUnit, exc: BaseException, sent: bool = True) -> None:
        self._in_flight_tps.discard(unit.tp)
        self.metrics["errors"] += 1
        unit.fail(exc)
        self.accumulator.completed(unit)
        if self.tm is not None:
            # the transaction cannot commit without this batch: abortable (fenced: fatal);
            # a batch failed by the abort itself changes nothing
            if sent:
                self.tm.handle_failed_batch(exc)
        elif self.idempotent:
            # a sequence gap would fence every later batch: start over with a new producer id
            self.producer_id = -1

    def _unit_error(self, unit: ProduceUnit, exc: KafkaError, now: float) -> None:
        tp = unit.tp
        too_large = isinstance(exc, (errors.MessageTooLargeError,
                                     errors.RecordListTooLargeError))
        if too_large and len(unit.batches) > 1:
            log.info("%s-%d: batch of %d bytes too large, splitting it", tp[0], tp[1],
                     unit.size)
            self._in_flight_tps.discard(tp)
            self.accumulator.reenqueue_split(unit, now)
            return
        if (exc.retriable and unit.attempts < self.retries and not self._force
                and now - unit.created < self.delivery_timeout):
            unit.attempts += 1
            unit.retry_at = now + self.retry_backoff
            self.metrics["retries"] += 1
            log.warning("%s-%d: retrying %d record(s) (attempt %d) after %s", tp[0], tp[1],
                        unit.record_count, unit.attempts, exc)
            self._in_flight_tps.discard(tp)
            self.accumulator.reenqueue(unit)
            self.cluster.request_update()
            return
        self._finish_failed(unit, exc)

    def _expire(self, now: float) -> None:
        for unit, where in self.accumulator.expire(now, self.delivery_timeout,
                                                   self._in_flight_tps):
            self._finish_failed(unit, KafkaTimeoutError(
                f"expiring {unit.record_count} record(s) for {unit.tp[0]}-{unit.tp[1]}: "
                f"{self.delivery_timeout * 1000:.0f} ms passed since the batch was created "
                f"({where})"))

    def _shutdown(self) -> None:
        closed = KafkaError("the producer was closed before the record was sent")
        failure = self.failure or closed
        for node in list(self._in_flight):
            for entry in self._drop(node):
                for unit in entry.units.values():
                    self._finish_failed(unit, failure)
        for unit in self.accumulator.abort_all():
            self._finish_failed(unit, failure)
        self.pool.close()
        self.loop.close()
