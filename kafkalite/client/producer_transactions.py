"""The transactional producer's methods (kafka-python's names, Java's ``KafkaProducer`` rules),
a mixin of ``producer.Producer``: ``init_transactions``, ``begin_transaction``,
``send_offsets_to_transaction``, ``commit_transaction`` and ``abort_transaction``.

They run on the user's thread: the state moves in the producer's ``TransactionManager``
(``transaction_manager``), the coordinator requests are ``TxnCoordinatorClient``'s
(``txn_coordinator``), and the records go through the sender thread as any producer's, which
adds each partition to the transaction before its first batch. Committing flushes first, so the
EndTxn follows every record's acknowledgement; aborting fails what was not sent yet and waits for
what was. A call that timed out (KafkaTimeoutError) continues where it stopped when called again,
as Java's cached results do.
"""

from __future__ import annotations

import logging

from kafkalite.client.structs import ConsumerGroupMetadata
from kafkalite.client.transaction_manager import (
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
    COMMITTING_TRANSACTION,
    IN_TRANSACTION,
    INITIALIZING,
    TransactionManager,
)
from kafkalite.client.txn_coordinator import offsets_to_commit
from kafkalite.errors import IllegalStateError, KafkaError

__all__ = ["TransactionalMethods"]

log = logging.getLogger("kafkalite.client.producer")


class TransactionalMethods:
    """``Producer``'s transactional methods; they use its ``_transaction_manager``,
    ``_txn_client``, ``_sender``, ``_clock``, ``_max_block``, ``_closed`` and ``flush``."""

    def _transactions(self) -> TransactionManager:
        tm = self._transaction_manager
        if tm is None:
            raise IllegalStateError("transactional methods need a producer with a "
                                    "transactional_id")
        if self._closed:
            raise IllegalStateError("the producer is closed")
        return tm

    def _deadline(self, timeout: float | None) -> float:
        return self._clock() + (self._max_block if timeout is None else timeout)

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get the transactional id's producer id and epoch from its transaction coordinator
        (FindCoordinator, InitProducerId): fences any older producer with the same id and
        completes or aborts its unfinished transaction. Once, before the first transaction.

        KafkaTimeoutError after ``timeout`` seconds (default ``max_block_ms``); calling again
        then continues."""
        tm = self._transactions()
        deadline = self._deadline(timeout)
        if tm.state != INITIALIZING:     # a retry after a timeout continues the same call
            tm.begin_init()
        self._txn_client.init_producer_id(deadline)

    def begin_transaction(self) -> None:
        """Start a transaction: sends are allowed until it is committed or aborted."""
        self._transactions().begin_transaction()

    def send_offsets_to_transaction(self, offsets: dict, consumer_group_metadata,
                                    timeout: float | None = None) -> None:
        """Commit ``offsets`` ({TopicPartition: OffsetAndMetadata or int}, the next offsets to
        read) for a consumer group as part of the transaction: they count only if it commits.

        ``consumer_group_metadata``: ``Consumer.group_metadata()`` (KIP-447: the coordinator
        then fences a consumer that left the generation) or just the group id."""
        tm = self._transactions()
        tm.maybe_fail_with_error()
        if tm.state != IN_TRANSACTION:
            raise IllegalStateError("cannot send offsets to the transaction: no transaction is "
                                    "active (call begin_transaction() first)")
        meta = consumer_group_metadata
        if isinstance(meta, str):
            meta = ConsumerGroupMetadata(meta)
        elif not isinstance(meta, ConsumerGroupMetadata):
            raise TypeError(f"consumer_group_metadata must be a group id or "
                            f"Consumer.group_metadata(), got {meta!r}")
        offsets = offsets_to_commit(offsets)
        if not offsets:
            return
        self._txn_client.send_offsets(offsets, meta.group_id, meta.generation_id,
                                      meta.member_id, meta.group_instance_id,
                                      self._deadline(timeout))

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Send every record of the transaction, then commit it (EndTxn). A record that could
        not be written makes the transaction abortable: this raises its error, and
        ``abort_transaction()`` is the way on. KafkaTimeoutError after ``timeout`` seconds
        (default ``max_block_ms``); calling again then continues the commit."""
        tm = self._transactions()
        deadline = self._deadline(timeout)
        if tm.state != COMMITTING_TRANSACTION:
            tm.begin_commit()
        self._sender.wakeup()
        self.flush(max(deadline - self._clock(), 0))
        tm.maybe_fail_with_error()
        self._txn_client.end_txn(True, deadline)

    def _abort_open_transaction(self, timeout: float | None) -> None:
        """At close: abort the transaction still open (Java's Sender does so at shutdown)."""
        tm = self._transaction_manager
        if tm.state not in (IN_TRANSACTION, ABORTABLE_ERROR, ABORTING_TRANSACTION):
            return
        log.info("transactional id %r: aborting the open transaction at close",
                 tm.transactional_id)
        try:
            self.abort_transaction(timeout)
        except KafkaError as exc:
            log.warning("transactional id %r: the abort at close failed: %s",
                        tm.transactional_id, exc)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: records not sent yet fail (TransactionAbortedError), those
        sent are written but never read by read_committed consumers (EndTxn). Works in an
        abortable error state; after a failed record it also bumps the epoch (KIP-360)."""
        tm = self._transactions()
        deadline = self._deadline(timeout)
        if tm.state != ABORTING_TRANSACTION:
            tm.begin_abort()
        self._sender.wakeup()
        self.flush(max(deadline - self._clock(), 0))   # unsent batches fail, in-flight ones end
        if tm.state == ABORTING_TRANSACTION:
            self._txn_client.end_txn(False, deadline)
        if tm.state == INITIALIZING:
            self._txn_client.init_producer_id(deadline, bump=True)
