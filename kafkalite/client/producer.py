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
  with a per-partition sequence number; acks must be "all" (its default then; 1 otherwise).
* ``transactional_id`` (kafka-python's and Java's transactions, KIP-98/KIP-447): idempotence,
  acks=all and at most 5 requests in flight follow (contrary settings are refused);
  ``init_transactions()`` once, then ``begin_transaction()``, sends,
  ``send_offsets_to_transaction()`` and ``commit_transaction()`` or ``abort_transaction()``.
  A send outside a transaction raises IllegalStateError. PRODUCER_FENCED (another producer
  took the transactional id) is fatal: every later call raises ProducerFencedError and the
  producer can only be closed; an abortable error (a failed batch, an unauthorized group) makes
  ``commit_transaction()`` raise it and leaves ``abort_transaction()`` to be called. The state
  machine is ``transaction_manager``'s, the requests ``txn_coordinator``'s.

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
import threading
import time

from kafkalite import errors
from kafkalite.client.accumulator import HEADER_OVERHEAD, RECORD_OVERHEAD
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import DEFAULT_CLIENT_ID
from kafkalite.client.failure_log import RepeatedFailureLog
from kafkalite.client.future import FutureRecordMetadata
from kafkalite.client.partitioner import DefaultPartitioner, murmur2
from kafkalite.errors import (
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    MessageTooLargeError,
)
from kafkalite.client.sender import Sender
from kafkalite.client.producer_transactions import TransactionalMethods
from kafkalite.client.structs import TopicPartition
from kafkalite.client.transaction_manager import TransactionManager
from kafkalite.client.txn_coordinator import TxnCoordinatorClient
from kafkalite.record.compression import compression_id
from kafkalite.record.header import HEADER_SIZE
from kafkalite.topics import validate_topic_name
from kafkalite.security.settings import ClientSecurity

log = logging.getLogger(__name__)

__all__ = ["Producer", "RepeatedFailureLog"]

_BYTES_LIKE = (bytes, bytearray, memoryview)
_MAX_COALESCE = 1 << 20  # stay under the broker's default max.message.bytes (1048588)
_KEY_CACHE_SIZE = 65536
_time_ns = time.time_ns


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


class Producer(TransactionalMethods):
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
                 acks=None, linger_ms: float = 0, batch_size: int = 65536,
                 compression_type: str | None = None, retries: int = 2147483647,
                 retry_backoff_ms: int = 100, request_timeout_ms: int = 30000,
                 delivery_timeout_ms: int = 120000, max_block_ms: int = 60000,
                 max_in_flight_requests_per_connection: int = 5,
                 enable_idempotence: bool | None = None, key_serializer=None,
                 value_serializer=None, max_request_size: int = 1048576,
                 buffer_memory: int = 33554432, metadata_max_age_ms: int = 300000,
                 partitioner=None, compression_level: int | None = None,
                 transactional_id: str | None = None, transaction_timeout_ms: int = 60000,
                 **security_options):
        if transactional_id is not None:
            # as kafka-python and Java: transactions imply idempotence, which implies acks=all
            if enable_idempotence is False:
                raise errors.ConfigError("transactional_id needs enable_idempotence=True")
            enable_idempotence = True
            if max_in_flight_requests_per_connection > 5:
                raise errors.ConfigError("transactional_id needs "
                                         "max_in_flight_requests_per_connection <= 5")
        enable_idempotence = bool(enable_idempotence)
        if acks is None:
            acks = -1 if enable_idempotence else 1
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
            buffer_memory=buffer_memory, metadata_max_age_ms=metadata_max_age_ms,
            transactional_id=transactional_id, transaction_timeout_ms=transaction_timeout_ms)
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
            metadata_max_age_ms=metadata_max_age_ms, allow_auto_topic_creation=True,
            security=ClientSecurity.from_kwargs(**security_options))
        # topic -> sorted partition ids, and those with a live leader (replaced on refresh)
        self._partitions: dict[str, list[int]] = {}
        self._available: dict[str, list[int]] = {}
        self._metadata_log = RepeatedFailureLog(log, "producer metadata refresh failed")
        self._cluster.add_listener(self._on_metadata)
        self._transaction_manager: TransactionManager | None = None
        self._txn_client: TxnCoordinatorClient | None = None
        if transactional_id is not None:
            self._transaction_manager = TransactionManager(transactional_id,
                                                           transaction_timeout_ms)
            self._txn_client = TxnCoordinatorClient(
                self._cluster, self._transaction_manager, request_timeout_ms=request_timeout_ms,
                retry_backoff_ms=retry_backoff_ms, clock=self._clock)
        coalesce = max(batch_size, min(max_request_size, _MAX_COALESCE))
        self._sender = Sender(self, coalesce, self._sender_died)
        self._accumulator = self._sender.accumulator
        self._append = self._accumulator.append
        self._append_sticky = self._accumulator.append_sticky
        self._append_keyed = self._accumulator.append_keyed
        self._closed = False
        # send()'s fast path: a bytes value, Kafka's partitioner, no serializer, and a record
        # that fits (the size checks of the full path, folded into one bound)
        # (not for a transaction: each send checks the state and notes its partition)
        self._fast = default and value_serializer is None and transactional_id is None
        self._fast_max_size = min(max_request_size - HEADER_SIZE, buffer_memory)
        self._fast_sticky = self._fast and batch_size <= self._fast_max_size
        self._sender.start()

    def _sender_died(self) -> None:
        self._closed = True
        self._fast = self._fast_sticky = False

    # --- metadata ---------------------------------------------------------------------------
    def _on_metadata(self, snapshot) -> None:
        self._metadata_log.succeeded()
        for topic, ids in snapshot.partition_ids.items():
            if ids:
                if self._partitions.get(topic) != ids and self._sticky is not None:
                    self._sticky.pop(topic, None)
                    self._accumulator.set_sticky(topic, None)
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
        # the plain record -- no key, partition, timestamp or headers, a bytes value -- goes
        # straight into its sticky partition's open batch: one call, one lock, one small
        # future (accumulator.append_sticky); anything else, or no open batch with room, takes
        # the full path below
        if (partition is None and timestamp_ms is None and headers is None
                and type(value) is bytes):
            if key is None:
                if self._fast_sticky:
                    # no size check here: append_sticky takes only what fits a batch, and
                    # _fast_sticky is set only when a batch is within the record size limits
                    future = self._append_sticky(topic, _time_ns() // 1000000, value,
                                                 len(value) + RECORD_OVERHEAD)
                    if future is not None:
                        return future
            elif type(key) is bytes and self._fast and self._key_serializer is None:
                # a bytes key: Kafka's murmur2 partition (hashes of recent keys cached) and
                # the append in one step (accumulator.append_keyed)
                parts = self._partitions.get(topic)
                size = len(key) + len(value) + RECORD_OVERHEAD
                if parts is not None and size <= self._fast_max_size:
                    hashes = self._key_hashes
                    h = hashes.get(key)
                    if h is None:
                        if len(hashes) >= _KEY_CACHE_SIZE:
                            hashes.clear()
                        h = hashes[key] = murmur2(key) & 0x7FFFFFFF
                    future = self._append_keyed((topic, parts[h % len(parts)]),
                                                _time_ns() // 1000000, key, value, size)
                    if future is not None:
                        return future
        return self._send(topic, value, key, partition, timestamp_ms, headers)

    def _send(self, topic: str, value, key, partition: int | None, timestamp_ms: int | None,
              headers) -> FutureRecordMetadata:
        if self._closed:
            if self._sender.failure is not None:
                raise self._sender.failure
            raise IllegalStateError("cannot send: the producer is closed")
        tm = self._transaction_manager
        if tm is not None:
            tm.fail_if_not_ready_for_send()
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
            timestamp_ms = _time_ns() // 1000000
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
                    if tm is not None:
                        self._note_partition(tm, topic, partition)
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
        if tm is not None:
            self._note_partition(tm, topic, partition)
        return FutureRecordMetadata(result, index, timestamp_ms, key_size, value_size)

    def _note_partition(self, tm: TransactionManager, topic: str, partition: int) -> None:
        """A transaction's record went to this partition: the sender must add it to the
        transaction (AddPartitionsToTxn) before its batch may go; wake it when it is new (the
        append's own wakeup may have come first, and found nothing it could send)."""
        if tm.maybe_add_partition(TopicPartition(topic, partition)):
            self._sender.wakeup()

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
        self._accumulator.set_sticky(topic, (topic, partition))
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
        A transaction still open is aborted first, as Java's producer does, unless
        ``timeout`` is 0 (a forced close: the coordinator aborts it at its timeout).
        """
        if self._closed:
            return
        if (self._transaction_manager is not None and timeout != 0
                and threading.current_thread() is not self._sender):
            self._abort_open_transaction(timeout)
        self._closed = True
        self._fast = self._fast_sticky = False
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
        if self._txn_client is not None:
            self._txn_client.close()
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
