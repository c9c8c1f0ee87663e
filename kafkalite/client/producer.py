"""The blocking producer (kafka-python's ``KafkaProducer`` API).

``send()`` runs on the caller's thread and only appends to the ``RecordAccumulator``; a background
*sender* thread drains sendable batches per leader into Produce requests (several partitions per
request), pipelines up to ``max_in_flight_requests_per_connection`` requests per broker, and
resolves the record futures from the responses.

Delivery rules (Kafka 2.x semantics unless said otherwise):

* Retriable errors (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION,
  NETWORK_EXCEPTION, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS, ...: ``error.retriable``) refresh the
  metadata and retry the batch after ``retry_backoff_ms``, up to ``retries`` times and while
  ``delivery_timeout_ms`` since the batch was created has not passed.
* Order per partition is kept across retries: at most one batch (unit) per partition is in flight
  and a retried one goes back in front of its partition's queue.
* Other errors fail the records' futures with the error.
* A leader that cannot be connected to is backed off (``retry_backoff_ms`` doubling up to 1 s,
  as Kafka's reconnect backoff) and the metadata refreshed; its batches wait in the accumulator,
  not counted as retries, until a leader takes them or ``delivery_timeout_ms`` expires them.
* ``acks=0``: futures resolve with offset -1 once the request is written.
* A record larger than ``max_request_size`` (or ``buffer_memory``) fails at ``send()`` with
  MessageTooLargeError; an invalid topic name with InvalidTopicError; a key or value that is not
  bytes (after the serializer) with TypeError.
* Null keys use the sticky partitioner (a partition is kept until its batch is full, then the next
  one), keys use murmur2 (``DefaultPartitioner``), exactly as Kafka places them.
* ``enable_idempotence``: the producer gets a producer id (InitProducerId) and stamps each batch
  with a per-partition sequence number; acks must be "all".

Batching with ``linger_ms=0`` (the default, as Kafka's): a record that finds its partition idle
goes out at once; records sent while that partition's request is in flight gather in the next
batch, so a busy loop still sends full batches (Kafka's accumulator works the same way).

Unreachable brokers: a producer whose bootstrap addresses all *refuse* the connection before any
broker ever answered fails ``send()`` at once with NoBrokersAvailableError (nothing listens there;
waiting ``max_block_ms`` would only delay the error); a slow or restarting broker is retried. A
failing metadata refresh is logged once at WARNING, and again only when the error changes or
after a refresh succeeded in between (repeats go to DEBUG).

Serializers are not applied to None (a None value stays a tombstone). Callbacks added to futures
run on the sender thread.
"""

from __future__ import annotations

import logging
import random
import selectors
import socket
import threading
import time

from kafkalite import errors
from kafkalite.client.accumulator import ProduceUnit, RecordAccumulator
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import DEFAULT_CLIENT_ID, ConnectionSelector
from kafkalite.client.future import FutureRecordMetadata
from kafkalite.client.partitioner import DefaultPartitioner, murmur2
from kafkalite.errors import (
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    MessageTooLargeError,
)
from kafkalite.protocol.messages import InitProducerIdRequest, ProduceRequest
from kafkalite.record import build_batch
from kafkalite.record.compression import compression_id
from kafkalite.record.header import HEADER_SIZE
from kafkalite.topics import validate_topic_name

log = logging.getLogger(__name__)

__all__ = ["Producer"]

# Upper estimates of a record's bytes besides key, value and headers in Kafka's v2 layout (varint
# length, attributes, timestamp/offset deltas, key/value lengths, header count), and of a header's
# besides its name and value (two varint lengths)
RECORD_OVERHEAD = 16
HEADER_OVERHEAD = 6
_BYTES_LIKE = (bytes, bytearray, memoryview)
_MAX_COALESCE = 1 << 20  # stay under the broker's default max.message.bytes (1048588)
_KEY_CACHE_SIZE = 65536


def _headers_size(headers) -> tuple[tuple, int]:
    """Validate headers (list of (str, bytes|None) pairs or a dict); (tuple of pairs, size)."""
    pairs = headers.items() if isinstance(headers, dict) else headers
    out = []
    size = 0
    try:
        for name, value in pairs:
            if type(name) is not str:
                raise TypeError(f"header name must be str, got {type(name).__name__}")
            if value is not None:
                if type(value) is not bytes:
                    if not isinstance(value, _BYTES_LIKE):
                        raise TypeError(f"header {name!r} value must be bytes or None, got "
                                        f"{type(value).__name__}")
                    value = bytes(value)
                size += len(value)
            size += HEADER_OVERHEAD + len(name)
            out.append((name, value))
    except (TypeError, ValueError) as exc:
        if isinstance(exc, TypeError) and str(exc).startswith("header"):
            raise
        raise TypeError(f"headers must be (str, bytes) pairs, got {headers!r:.80}") from None
    return tuple(out), size


class RepeatedFailureLog:
    """Logs a failure that repeats (a refresh every retry backoff) once, not at every attempt.

    ``failed(exc)`` logs ``"<what>: <exc>"`` at WARNING the first time, and again only when the
    error differs from the last one logged (another class, or other addresses or reasons) or after
    ``succeeded()`` was called in between; repeats go to DEBUG. ``succeeded()`` after failures
    logs one INFO line. Thread-safe (the producer's user and sender threads both report).
    """

    def __init__(self, logger: logging.Logger, what: str):
        self._log = logger
        self.what = what
        self._lock = threading.Lock()
        self._last = None          # key of the error last logged at WARNING; None: all well
        self.repeats = 0           # failures since that WARNING

    @staticmethod
    def _key(exc: BaseException):
        attempts = getattr(exc, "attempts", None)
        if attempts is not None:   # NoBrokersAvailableError: the addresses and their errors
            return type(exc), frozenset(attempts)
        return type(exc), str(exc)

    def failed(self, exc: BaseException) -> None:
        key = self._key(exc)
        with self._lock:
            if key != self._last:
                self._last = key
                self.repeats = 0
                self._log.warning("%s: %s", self.what, exc)
            else:
                self.repeats += 1
                self._log.debug("%s (again, %d repeat(s)): %s", self.what, self.repeats, exc)

    def succeeded(self) -> None:
        if self._last is None:     # the common case, without the lock
            return
        with self._lock:
            if self._last is not None:
                self._log.info("%s: recovered after %d failure(s) in a row", self.what,
                               self.repeats + 1)
                self._last = None
                self.repeats = 0


class Producer:
    """A thread-safe producer: ``send()`` from any thread; one sender thread does the I/O.

    Options follow kafka-python/Kafka; the ones that differ or need a word:

    * ``batch_size`` (default 65536, Kafka's is 16384): bytes per partition batch before it is
      sent without waiting for ``linger_ms``. Python pays per batch, so bigger is faster; up to
      ``min(max_request_size, 1 MiB)`` of consecutive full batches of one partition are
      coalesced into one wire batch when they are waiting anyway.
    * ``max_in_flight_requests_per_connection``: Produce requests pipelined per broker; each
      partition has at most one batch in flight (that is what keeps order across retries).
    * ``retries`` (default 2147483647) is bounded by ``delivery_timeout_ms`` (120000).
    * ``max_block_ms``: how long ``send()`` may wait for metadata or buffer space.
    * ``linger_ms`` (default 0, Kafka's): how long a partition's first record waits for more
      before its batch is sent when the partition has nothing in flight.
    * ``partitioner``: an object with ``partition(topic, key, partitions, available)`` (like
      ``DefaultPartitioner``) or a kafka-python style callable ``(key, partitions, available)``.

    ``_clock`` (a monotonic clock in seconds) times linger, retry backoff, delivery timeouts and
    metadata backoff; tests may override it in a subclass.
    """

    _clock = staticmethod(time.monotonic)

    def __init__(self, bootstrap_servers="localhost:9092", *, client_id: str | None = None,
                 acks=1, linger_ms: float = 0, batch_size: int = 65536,
                 compression_type: str | None = None, retries: int = 2147483647,
                 retry_backoff_ms: int = 100, request_timeout_ms: int = 30000,
                 delivery_timeout_ms: int = 120000, max_block_ms: int = 60000,
                 max_in_flight_requests_per_connection: int = 5,
                 enable_idempotence: bool = False, key_serializer=None, value_serializer=None,
                 max_request_size: int = 1048576, buffer_memory: int = 33554432,
                 metadata_max_age_ms: int = 300000, partitioner=None,
                 compression_level: int | None = None):
        if acks in ("all", "-1"):
            acks = -1
        if acks in ("0", "1"):
            acks = int(acks)
        if acks not in (0, 1, -1):
            raise errors.ConfigError(f"acks must be 0, 1, -1 or 'all', got {acks!r}")
        if enable_idempotence:
            if acks != -1:
                raise errors.ConfigError("enable_idempotence=True needs acks='all'")
            if retries < 1:
                raise errors.ConfigError("enable_idempotence=True needs retries > 0")
        if max_in_flight_requests_per_connection < 1:
            raise errors.ConfigError("max_in_flight_requests_per_connection must be >= 1")
        if batch_size < 1 or max_request_size < 1:
            raise errors.ConfigError("batch_size and max_request_size must be positive")
        self.config = dict(
            bootstrap_servers=bootstrap_servers, client_id=client_id or DEFAULT_CLIENT_ID,
            acks=acks, linger_ms=linger_ms, batch_size=batch_size,
            compression_type=compression_type, retries=retries,
            retry_backoff_ms=retry_backoff_ms, request_timeout_ms=request_timeout_ms,
            delivery_timeout_ms=delivery_timeout_ms, max_block_ms=max_block_ms,
            max_in_flight_requests_per_connection=max_in_flight_requests_per_connection,
            enable_idempotence=enable_idempotence, max_request_size=max_request_size,
            buffer_memory=buffer_memory, metadata_max_age_ms=metadata_max_age_ms)
        self._codec = compression_id(compression_type)    # UnsupportedCompressionTypeError early
        self._compression_level = compression_level
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._max_request_size = max_request_size
        self._buffer_memory = buffer_memory
        self._max_block = max_block_ms / 1000
        self._partitioner = partitioner if partitioner is not None else DefaultPartitioner()
        default = type(self._partitioner) is DefaultPartitioner
        # fast paths valid for Kafka's default partitioner only: the current sticky partition
        # per topic, and murmur2 hashes of recently seen keys (independent of partition counts)
        self._sticky: dict[str, int] | None = {} if default else None
        self._key_hashes: dict[bytes, int] | None = {} if default else None
        self._cluster = ClusterMetadata(
            bootstrap_servers, client_id=self.config["client_id"],
            request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms, allow_auto_topic_creation=True)
        # topic -> sorted partition ids, and those with a live leader (replaced on refresh)
        self._partitions: dict[str, list[int]] = {}
        self._available: dict[str, list[int]] = {}
        self._metadata_log = RepeatedFailureLog(log, "producer metadata refresh failed")
        self._cluster.add_listener(self._on_metadata)
        coalesce = max(batch_size, min(max_request_size, _MAX_COALESCE))
        self._sender = _Sender(self, coalesce, self._sender_died)
        self._accumulator = self._sender.accumulator
        self._append = self._accumulator.append
        self._closed = False
        self._sender.start()

    def _sender_died(self) -> None:
        self._closed = True

    # --- metadata ---------------------------------------------------------------------------
    def _on_metadata(self, snapshot) -> None:
        self._metadata_log.succeeded()
        for topic, ids in snapshot.partition_ids.items():
            if ids:
                if self._partitions.get(topic) != ids and self._sticky is not None:
                    self._sticky.pop(topic, None)
                self._partitions[topic] = ids
                self._available[topic] = snapshot.available.get(topic) or ids

    def _wait_on_metadata(self, topic: str) -> list[int]:
        validate_topic_name(topic)
        try:
            self._cluster.wait_for_topic(topic, self._max_block, require_all_leaders=False,
                                         on_error=self._metadata_log.failed)
        except KafkaTimeoutError as exc:
            raise KafkaTimeoutError(f"failed to update metadata after "
                                    f"{self._max_block * 1000:.0f} ms: {exc.message}") from None
        parts = self._partitions.get(topic)
        if not parts:
            raise KafkaTimeoutError(f"topic '{topic}' has no partitions in the metadata")
        return parts

    def partitions_for(self, topic: str) -> set[int]:
        """The topic's partition ids (waits for metadata up to ``max_block_ms``)."""
        parts = self._partitions.get(topic)
        if parts is None:
            parts = self._wait_on_metadata(topic)
        return set(parts)

    # --- sending ----------------------------------------------------------------------------
    def send(self, topic: str, value=None, key=None, partition: int | None = None,
             timestamp_ms: int | None = None, headers=None) -> FutureRecordMetadata:
        """Queue one record; returns a future resolving to its RecordMetadata."""
        if self._closed:
            if self._sender.failure is not None:
                raise self._sender.failure
            raise IllegalStateError("cannot send: the producer is closed")
        if key is not None:
            if self._key_serializer is not None:
                key = self._key_serializer(key)
            if type(key) is not bytes:
                if not isinstance(key, _BYTES_LIKE):
                    raise TypeError(f"key must be bytes or None (set a key_serializer), got "
                                    f"{type(key).__name__}")
                key = bytes(key)
            key_size = len(key)
            size = RECORD_OVERHEAD + key_size
        else:
            key_size = -1
            size = RECORD_OVERHEAD
        if value is not None:
            if self._value_serializer is not None:
                value = self._value_serializer(value)
            if type(value) is not bytes:
                if not isinstance(value, _BYTES_LIKE):
                    raise TypeError(f"value must be bytes or None (set a value_serializer), "
                                    f"got {type(value).__name__}")
                value = bytes(value)
            value_size = len(value)
            size += value_size
        else:
            value_size = -1
        if headers:
            headers, hsize = _headers_size(headers)
            size += hsize
        else:
            headers = None
        if size + HEADER_SIZE > self._max_request_size or size > self._buffer_memory:
            raise MessageTooLargeError(
                f"the record is {size + HEADER_SIZE} bytes when serialized, larger than "
                f"max_request_size ({self._max_request_size}) or buffer_memory "
                f"({self._buffer_memory})")
        parts = self._partitions.get(topic)
        if parts is None:
            parts = self._wait_on_metadata(topic)
        if timestamp_ms is None:
            timestamp_ms = time.time_ns() // 1000000
        elif type(timestamp_ms) is not int:
            raise TypeError(f"timestamp_ms must be an int, got {type(timestamp_ms).__name__}")
        record = (timestamp_ms, key, value, headers)
        if partition is None:
            if key is None:
                if self._sticky is not None:
                    # sticky partitioning (KIP-480): stay on a partition until its batch is full
                    partition = self._sticky.get(topic)
                    if partition is None:
                        partition = self._pick_sticky(topic, parts, False)
                    got = self._append((topic, partition), record, size, True)
                    if got is None:
                        partition = self._pick_sticky(topic, parts, True)
                        got = self._append((topic, partition), record, size, False)
                    return FutureRecordMetadata(got[0], got[1], timestamp_ms, key_size,
                                                value_size)
                partition = self._custom_partition(topic, None, parts)
            elif self._key_hashes is not None:
                h = self._key_hashes.get(key)
                if h is None:
                    if len(self._key_hashes) >= _KEY_CACHE_SIZE:
                        self._key_hashes.clear()
                    h = self._key_hashes[key] = murmur2(key) & 0x7FFFFFFF
                partition = parts[h % len(parts)]
            else:
                partition = self._custom_partition(topic, key, parts)
        elif type(partition) is not int or not 0 <= partition < len(parts):
            parts = self._check_partition(topic, partition)
        result, index = self._append((topic, partition), record, size, False)
        return FutureRecordMetadata(result, index, timestamp_ms, key_size, value_size)

    def _custom_partition(self, topic: str, key, parts: list[int]) -> int:
        """A user's partitioner: an object with ``partition(topic, key, partitions, available)``
        (like DefaultPartitioner) or a kafka-python style ``fn(key, partitions, available)``."""
        available = self._available.get(topic) or parts
        p = self._partitioner
        if hasattr(p, "partition"):
            partition = p.partition(topic, key, parts, available)
        else:
            partition = p(key, parts, available)
        if partition not in parts:
            raise errors.UnknownTopicOrPartitionError(
                f"the partitioner chose partition {partition!r}, which topic '{topic}' does not "
                f"have")
        return partition

    def _pick_sticky(self, topic: str, parts: list[int], new_batch: bool) -> int:
        available = self._available.get(topic) or parts
        if new_batch:
            self._partitioner.on_new_batch(topic, parts, available)
        partition = self._partitioner.partition(topic, None, parts, available)
        self._sticky[topic] = partition
        return partition

    def _check_partition(self, topic: str, partition) -> list[int]:
        if type(partition) is not int or partition < 0:
            raise TypeError(f"partition must be a non-negative int, got {partition!r}")
        self._cluster.request_update()
        try:
            self._cluster.refresh()
        except KafkaError:
            pass
        parts = self._partitions.get(topic) or []
        if partition >= len(parts):
            raise errors.UnknownTopicOrPartitionError(
                f"partition {partition} of topic '{topic}' does not exist (the topic has "
                f"{len(parts)} partitions)")
        return parts

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until it is acknowledged (or failed).

        KafkaTimeoutError if that takes longer than ``timeout`` seconds.
        """
        if self._sender.failure is not None:
            raise self._sender.failure
        pending = self._accumulator.begin_flush()
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            for result in pending:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
                if not result.wait(remaining):
                    raise KafkaTimeoutError(
                        f"flush timed out after {timeout} s with "
                        f"{sum(not r.done for r in pending)} batch(es) unacknowledged")
        finally:
            self._accumulator.end_flush()

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued (waiting up to ``timeout`` seconds), then stop.

        Records still unsent after the timeout fail with KafkaError. Safe to call twice.
        """
        if self._closed:
            return
        self._closed = True
        self._accumulator.begin_close()
        self._sender.initiate_close()
        if threading.current_thread() is self._sender:
            # called from a callback on the sender thread: it cannot wait for itself; it
            # finishes sending what is queued and stops on its own
            return
        self._sender.join(timeout)
        if self._sender.is_alive():
            self._sender.force_close()
            self._sender.join(5)
        self._cluster.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort when a user forgets close()
        try:
            if not self._closed and self._sender.is_alive():
                self._sender.force_close()
        except Exception:  # noqa: BLE001
            pass

    def metrics(self) -> dict:
        """A few counters (records sent, requests, retries, errors)."""
        return dict(self._sender.metrics)


class _InFlight:
    __slots__ = ("correlation_id", "units", "sent_at")

    def __init__(self, correlation_id: int, units: dict, sent_at: float):
        self.correlation_id = correlation_id
        self.units = units
        self.sent_at = sent_at


class _Sender(threading.Thread):
    """The producer's I/O thread: drains the accumulator, sends, handles responses."""

    def __init__(self, producer: Producer, coalesce_bytes: int, on_crash):
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
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wake_pending = False
        self.clock = producer._clock
        self.accumulator = RecordAccumulator(cfg["batch_size"], cfg["linger_ms"],
                                             cfg["buffer_memory"], coalesce_bytes, self.wakeup,
                                             producer._max_block, clock=self.clock)
        self.pool = self.cluster.pool()
        self._connections = ConnectionSelector()            # node -> registered connection
        self._selector = self._connections.selector
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._registered = self._connections.registered
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
        self.failure: KafkaError | None = None
        self._on_crash = on_crash
        self.metrics = {"records_sent": 0, "requests": 0, "retries": 0, "errors": 0,
                        "metadata_refreshes": 0, "metadata_refresh_failures": 0}

    # --- control ----------------------------------------------------------------------------
    def wakeup(self) -> None:
        if not self._wake_pending:
            self._wake_pending = True
            try:
                self._wake_w.send(b"\0")
            except OSError:  # buffer full (already awake) or closed
                pass

    def initiate_close(self) -> None:
        self._running = False
        self._wake_pending = False
        self.wakeup()

    def force_close(self) -> None:
        self._force = True
        self._running = False
        self._wake_pending = False
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
        if self.idempotent and self.producer_id < 0 and has_work:
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
            now, self._leader_for, self._can_send, self._in_flight_tps, self.max_request_size)
        if unknown:
            self.cluster.request_update()
        for node, units in units_by_node.items():
            self._send_units(node, units)
        timeout = next_check
        if unknown or (self.cluster.update_requested and has_work):
            delay = max(self._metadata_backoff_until - self.clock(), 0.0) or \
                self.retry_backoff
            timeout = delay if timeout is None else min(timeout, delay)
        real_now = time.monotonic()        # request deadlines are the connections' (real) time
        for node, conn in self._registered.items():
            deadline = conn.oldest_deadline()
            if deadline is not None:
                delay = max(deadline - real_now, 0.0)
                timeout = delay if timeout is None else min(timeout, delay)
        if self._unreachable and has_work:
            clock_now = self.clock()
            waits = [until - clock_now for until, _n in self._unreachable.values()
                     if until > clock_now]
            if waits:
                timeout = min(waits) if timeout is None else min(timeout, min(waits))
        if not self._running and not units_by_node and timeout is None:
            timeout = 0.05
        self._wait(timeout)

    def _wait(self, timeout: float | None) -> None:
        if timeout is not None and timeout < 0:
            timeout = 0
        events = self._selector.select(timeout)
        now = self.clock()
        for key, _mask in events:
            if key.data is None:
                # drain first, then clear: a wakeup landing in between must not leave the flag
                # set with the pipe empty (every later wakeup would be dropped)
                try:
                    while self._wake_r.recv(4096):
                        pass
                except OSError:
                    pass
                self._wake_pending = False
            else:
                self._read(key.data, now)
        # request timeouts on connections that stayed silent
        real_now = time.monotonic()
        for node, conn in list(self._registered.items()):
            deadline = conn.oldest_deadline()
            if deadline is not None and deadline < real_now:
                self._read(node, now)

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
            if self.idempotent:
                pid, epoch = self.producer_id, self.producer_epoch
                if unit.base_sequence < 0:
                    unit.base_sequence = self._sequences.get(unit.tp, 0)
                    self._sequences[unit.tp] = (unit.base_sequence + unit.record_count) \
                        & 0x7FFFFFFF
                seq = unit.base_sequence
            unit.data = build_batch(unit.records(), self.codec, producer_id=pid,
                                    producer_epoch=epoch, base_sequence=seq,
                                    compression_level=self.level)
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
        request = ProduceRequest(acks=self.acks, timeout_ms=self.request_timeout_ms,
                                 topic_data=topic_data)
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
            if self._registered.get(node) is not conn:
                self._register(node, conn)
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

    def _register(self, node: int, conn) -> None:
        self._connections.register(node, conn)

    def _drop(self, node: int) -> list[_InFlight]:
        self._connections.unregister(node)
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

    def _finish_failed(self, unit: ProduceUnit, exc: BaseException) -> None:
        self._in_flight_tps.discard(unit.tp)
        self.metrics["errors"] += 1
        unit.fail(exc)
        self.accumulator.completed(unit)
        if self.idempotent:
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
        self._selector.close()
        for s in (self._wake_r, self._wake_w):
            try:
                s.close()
            except OSError:  # pragma: no cover
                pass

