"""The transactional producer's requests to its transaction coordinator and to the consumer
group's coordinator: FindCoordinator (key type 1 for the transactional id, 0 for a group),
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn -- Java's
``TransactionManager`` handlers, blocking.

The user's thread runs ``init_producer_id``, ``send_offsets`` and ``end_txn`` (each retried until
its deadline: KafkaTimeoutError after); the producer's sender thread runs ``add_partitions_once``
(one attempt, so it goes on reading produce answers while a CONCURRENT_TRANSACTIONS is retried).
One lock serialises them: connections are not thread-safe, and an EndTxn must never overtake an
AddPartitionsToTxn. What an answer means (retry, look the coordinator up again, abortable or
fatal) is ``transaction_manager.response_action``'s, Kafka 2.8's rules; the state moves there too.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from kafkalite import errors
from kafkalite.client.connection import BrokerConnection
from kafkalite.client.structs import OffsetAndMetadata, TopicPartition
from kafkalite.client.transaction_manager import (
    ABORTABLE,
    ABORTABLE_IF_POSSIBLE,
    FATAL,
    IGNORE,
    LOOKUP,
    OK,
    RETRY,
    TransactionManager,
    error_for,
    response_action,
)
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol import messages as m

log = logging.getLogger("kafkalite.client.producer")

__all__ = ["TxnCoordinatorClient", "KEY_GROUP", "KEY_TRANSACTION"]

KEY_GROUP = 0
KEY_TRANSACTION = 1
_FIRST_ADD_BACKOFF = 0.02      # Java's ADD_PARTITIONS_RETRY_BACKOFF_MS


class _Retry(Exception):
    """Internal: this attempt failed in a way worth retrying after the backoff."""


class TxnCoordinatorClient:
    """Talks to the coordinators of one transactional producer (``tm``)."""

    def __init__(self, cluster, tm: TransactionManager, *, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = 100, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.cluster = cluster
        self.tm = tm
        self.request_timeout_ms = request_timeout_ms
        self.backoff = retry_backoff_ms / 1000
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.RLock()
        self._coordinators: dict[tuple[int, str], tuple[int, str, int]] = {}
        self._conns: dict[tuple[int, str, int], BrokerConnection] = {}
        self._pool = None

    # --- coordinators and connections ---------------------------------------------------------
    def _find(self, key_type: int, key: str) -> tuple[int, str, int]:
        found = self._coordinators.get((key_type, key))
        if found is not None:
            return found
        if self._pool is None:
            self._pool = self.cluster.pool()
        snap = self.cluster.snapshot
        if not snap.brokers:
            try:
                snap = self.cluster.refresh()
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                raise _Retry(str(exc)) from None
        request = m.FindCoordinatorRequest(key=key, key_type=key_type)
        for node in sorted(snap.brokers, key=lambda n: (self._pool.peek(n) is None, n)):
            try:
                response = self._pool.get(node).request(request)
            except KafkaError as exc:
                if not exc.retriable and not isinstance(exc, errors.NetworkError):
                    raise
                self._pool.drop(node)
                continue
            action = response_action("FindCoordinator", response.error_code)
            if action == OK:
                found = (response.node_id, response.host, response.port)
                self._coordinators[(key_type, key)] = found
                log.debug("%s coordinator of %r: broker %d (%s:%d)",
                          "transaction" if key_type else "group", key, *found)
                return found
            if action == RETRY:
                raise _Retry(errors.for_code(response.error_code).name)
            self._fail(action, response.error_code,
                       f"finding the coordinator of {key!r} ({response.error_message or ''})")
        self.cluster.request_update()
        raise _Retry("no broker answered FindCoordinator")

    def _forget(self, key_type: int, key: str) -> None:
        found = self._coordinators.pop((key_type, key), None)
        if found is not None:
            conn = self._conns.pop(found, None)
            if conn is not None:
                conn.close()

    def _request(self, key_type: int, key: str, request):
        """Send ``request`` to the coordinator of ``key``; _Retry when it is unknown or the
        connection broke (it is then looked up again)."""
        where = self._find(key_type, key)
        conn = self._conns.get(where)
        try:
            if conn is None or conn.dead:
                conn = self._conns[where] = BrokerConnection(
                    where[1], where[2], client_id=self.cluster.client_id,
                    request_timeout_ms=self.request_timeout_ms, node_id=where[0],
                    security=self.cluster.security)
            return conn.request(request)
        except KafkaError as exc:
            if not exc.retriable and not isinstance(exc, errors.NetworkError):
                raise
            self._forget(key_type, key)
            raise _Retry(str(exc)) from None

    def _fail(self, action: str, code: int, what: str):
        exc = error_for(code, what)
        self.tm.apply(action if action in (ABORTABLE, ABORTABLE_IF_POSSIBLE) else FATAL, exc)
        raise exc

    def _answer(self, api: str, code: int, key_type: int, key: str, what: str) -> bool:
        """True when ``code`` means done; _Retry for a retry; raises (moving the state) else."""
        action = response_action(api, code)
        if action == OK or action == IGNORE:
            return action == OK
        if action == LOOKUP:
            self._forget(key_type, key)
            raise _Retry(errors.for_code(code).name)
        if action == RETRY:
            raise _Retry(errors.for_code(code).name)
        self._fail(action, code, what)
        return False  # pragma: no cover - _fail raises

    def _until(self, deadline: float | None, what: str, attempt: Callable[[], object]):
        """``attempt()`` under the lock until it returns, retrying each _Retry after the backoff;
        KafkaTimeoutError when ``deadline`` (a clock value, None: none) passes first."""
        last = None
        while True:
            with self._lock:
                try:
                    return attempt()
                except _Retry as exc:
                    last = exc
                except KafkaError as exc:
                    # an answer the rules do not expect (e.g. a request the broker cannot
                    # serve): fatal, as Java's handlers make it
                    if not self.tm.has_error():
                        self.tm.fatal(exc)
                    raise
            if deadline is not None and self.clock() >= deadline:
                raise KafkaTimeoutError(f"{what} did not complete in time (last: {last})")
            self.sleep(self.backoff)

    # --- the requests ---------------------------------------------------------------------------
    def init_producer_id(self, deadline: float | None, bump: bool = False) -> None:
        """InitProducerId with the transactional id (``bump``: with the current id and epoch,
        KIP-360's epoch bump after an abort); the state becomes READY."""
        tm = self.tm
        tid = tm.transactional_id

        def attempt():
            request = m.InitProducerIdRequest(
                transactional_id=tid, transaction_timeout_ms=tm.transaction_timeout_ms,
                producer_id=tm.producer_id if bump else -1,
                producer_epoch=tm.producer_epoch if bump else -1)
            response = self._request(KEY_TRANSACTION, tid, request)
            self._answer("InitProducerId", response.error_code, KEY_TRANSACTION, tid,
                         f"InitProducerId for transactional id {tid!r}")
            tm.initialized(response.producer_id, response.producer_epoch)
            log.info("transactional id %r: producer id %d, epoch %d", tid, response.producer_id,
                     response.producer_epoch)

        self._until(deadline, f"initializing transactional id {tid!r}", attempt)

    def add_partitions_once(self) -> float | None:
        """One AddPartitionsToTxn for the partitions waiting to be added (sender thread).
        None when there is nothing left to retry, else the seconds to wait before the retry.
        An abortable or fatal answer moves the state (the sender then fails the waiting
        batches)."""
        tm = self.tm
        tid = tm.transactional_id
        with self._lock:
            tps = tm.take_partitions_to_add()
            if not tps:
                return None
            by_topic: dict[str, list[int]] = {}
            for tp in tps:
                by_topic.setdefault(tp[0], []).append(tp[1])
            request = m.AddPartitionsToTxnRequest(
                transactional_id=tid, producer_id=tm.producer_id,
                producer_epoch=tm.producer_epoch,
                topics=[m.AddPartitionsToTxnTopic(t, ps) for t, ps in by_topic.items()])
            try:
                response = self._request(KEY_TRANSACTION, tid, request)
                added = []
                retry = None
                failed = None
                for topic in response.results:
                    for p in topic.results:
                        tp = TopicPartition(topic.name, p.partition_index)
                        action = response_action("AddPartitionsToTxn", p.error_code)
                        if action == OK:
                            added.append(tp)
                        elif action in (RETRY, LOOKUP):
                            retry = retry or (action, p.error_code)
                        elif action != IGNORE and failed is None:
                            failed = (action, p.error_code, tp)
                tm.partitions_added(added)
                if failed is not None:
                    action, code, tp = failed
                    try:
                        self._fail(action, code, f"adding {tp.topic}-{tp.partition} to the "
                                                 f"transaction of {tid!r}")
                    except KafkaError as exc:
                        log.warning("transactional id %r: %s", tid, exc)
                    return None
                if retry is not None:
                    if retry[0] == LOOKUP:
                        self._forget(KEY_TRANSACTION, tid)
                    log.debug("AddPartitionsToTxn answered %s; retrying",
                              errors.for_code(retry[1]).name)
                    if (retry[1] == errors.ConcurrentTransactionsError.code
                            and not tm.added):
                        # the previous transaction is still completing (its markers): Java
                        # retries the new one's first add after 20 ms, not retry.backoff.ms
                        return min(_FIRST_ADD_BACKOFF, self.backoff)
                    return self.backoff
                return None
            except _Retry as exc:
                log.debug("AddPartitionsToTxn for %r: %s; retrying", tid, exc)
                return self.backoff
            except KafkaError as exc:
                # never out of the sender thread: the state carries the error to the user,
                # and the batches waiting for this add fail with it
                if not tm.has_error():
                    tm.fatal(exc)
                log.warning("transactional id %r: adding partitions failed: %s", tid, exc)
                return None

    def send_offsets(self, offsets: dict, group_id: str, generation_id: int, member_id: str,
                     group_instance_id: str | None, deadline: float | None) -> None:
        """AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit of ``offsets``
        ({TopicPartition: OffsetAndMetadata}) to the group's coordinator (KIP-447: with the
        consumer's generation and member id)."""
        tm = self.tm
        tid = tm.transactional_id

        def add_offsets():
            response = self._request(KEY_TRANSACTION, tid, m.AddOffsetsToTxnRequest(
                transactional_id=tid, producer_id=tm.producer_id,
                producer_epoch=tm.producer_epoch, group_id=group_id))
            self._answer("AddOffsetsToTxn", response.error_code, KEY_TRANSACTION, tid,
                         f"adding the offsets of group {group_id!r} to the transaction")
            tm.transaction_started = True

        self._until(deadline, f"AddOffsetsToTxn for group {group_id!r}", add_offsets)
        pending = dict(offsets)

        def commit():
            by_topic: dict[str, list] = {}
            for tp, om in sorted(pending.items()):
                by_topic.setdefault(tp[0], []).append(m.TxnOffsetCommitRequestPartition(
                    tp[1], om.offset, -1, om.metadata))
            response = self._request(KEY_GROUP, group_id, m.TxnOffsetCommitRequest(
                transactional_id=tid, group_id=group_id, producer_id=tm.producer_id,
                producer_epoch=tm.producer_epoch, generation_id=generation_id,
                member_id=member_id, group_instance_id=group_instance_id,
                topics=[m.TxnOffsetCommitRequestTopic(t, ps) for t, ps in by_topic.items()]))
            retry = None
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    try:
                        if self._answer("TxnOffsetCommit", p.error_code, KEY_GROUP, group_id,
                                        f"committing the offset of {tp.topic}-{tp.partition} "
                                        f"for group {group_id!r} in the transaction"):
                            pending.pop(tp, None)
                    except _Retry as exc:
                        retry = exc
            if retry is not None or pending:
                raise retry or _Retry("the answer left partitions out")

        self._until(deadline, f"TxnOffsetCommit for group {group_id!r}", commit)

    def end_txn(self, committed: bool, deadline: float | None) -> None:
        """EndTxn; the transaction is complete (READY, or INITIALIZING for an epoch bump)."""
        tm = self.tm
        tid = tm.transactional_id

        def attempt():
            if not tm.transaction_started:
                # nothing reached the coordinator (no partition, no offsets): Java's sender
                # completes such a transaction without an EndTxn, which would be refused
                tm.complete_transaction()
                return
            response = self._request(KEY_TRANSACTION, tid, m.EndTxnRequest(
                transactional_id=tid, producer_id=tm.producer_id,
                producer_epoch=tm.producer_epoch, committed=committed))
            self._answer("EndTxn", response.error_code, KEY_TRANSACTION, tid,
                         f"{'committing' if committed else 'aborting'} the transaction of "
                         f"{tid!r}")
            tm.complete_transaction()

        self._until(deadline, f"{'committing' if committed else 'aborting'} the transaction",
                    attempt)

    def close(self) -> None:
        with self._lock:
            for conn in self._conns.values():
                conn.close()
            self._conns.clear()
            if self._pool is not None:
                self._pool.close()


def offsets_to_commit(offsets: dict) -> dict:
    """``{TopicPartition: OffsetAndMetadata}`` from a user's ``{tp: OffsetAndMetadata | int}``."""
    out = {}
    for tp, value in offsets.items():
        if isinstance(value, OffsetAndMetadata):
            om = value
        elif type(value) is int:
            om = OffsetAndMetadata(value, "")
        else:
            raise TypeError(f"the offset of {tp} must be an OffsetAndMetadata or an int, got "
                            f"{value!r}")
        out[TopicPartition(*tp)] = om
    return out
