"""What the console knows of transactions: each transactional id's state as the transaction
coordinators last wrote it to ``__transaction_state`` (the most direct source: Kafka writes every
state before taking it), and one :class:`Change` per commit or abort.

Pure: the broker reader (:mod:`kafkalite.console.broker_reader`) hands in the decoded records in
offset order per partition of ``__transaction_state`` (one id always lives in one partition, so
each id's records arrive in the order they were written); nothing here does I/O.

Records that were already in the log when the console first read it are *history*: they set the
state but say nothing (a console opened late must not replay a day of commits as news).

A CompleteCommit or CompleteAbort value carries no partitions (Kafka empties them), so the
partitions of the transaction are remembered from its Ongoing/Prepare values. An abort written
with a higher epoch than the transaction's Ongoing values was made by the coordinator itself:
Kafka bumps the epoch when it aborts a timed-out transaction or fences it for a new producer of
the same id (``prepareFenceProducerEpoch``).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from kafkalite.console import sentences as say
from kafkalite.console.model import Change
from kafkalite.txn.log_records import TxnLogEntry
from kafkalite.txn.metadata import TxnState

#: states with a transaction in flight: its records are above the LSO of its partitions
OPEN_STATES = frozenset({TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                         TxnState.PREPARE_EPOCH_FENCE})
COMPLETED = {TxnState.COMPLETE_COMMIT: "txn_committed", TxnState.COMPLETE_ABORT: "txn_aborted"}


class TxnRecord(NamedTuple):
    """One decoded ``__transaction_state`` record; ``entry`` None is a tombstone."""

    partition: int          # of __transaction_state: its leader is the id's coordinator
    offset: int
    transactional_id: str
    entry: TxnLogEntry | None
    history: bool = False   # already in the log when the console first read it


class TransactionTracker:
    def __init__(self) -> None:
        self.current: dict[str, tuple[int, TxnLogEntry]] = {}   # id -> (partition, newest value)
        self._partitions: dict[str, frozenset] = {}   # id -> partitions of its latest transaction
        self._open_epoch: dict[str, int] = {}         # id -> epoch its open transaction was written

    def apply(self, records: Iterable[TxnRecord]) -> list[Change]:
        out = []
        for record in records:
            change = self._apply_one(record)
            if change is not None and not record.history:
                out.append(change)
        return out

    def _apply_one(self, record: TxnRecord) -> Change | None:
        tid, entry = record.transactional_id, record.entry
        before = self.current.get(tid)
        if entry is None:           # the id expired (transactional.id.expiration.ms)
            self.current.pop(tid, None)
            self._partitions.pop(tid, None)
            self._open_epoch.pop(tid, None)
            return None
        self.current[tid] = (record.partition, entry)
        if entry.partitions:
            self._partitions[tid] = entry.partitions
        if entry.state == TxnState.ONGOING:
            self._open_epoch[tid] = entry.producer_epoch
        kind = COMPLETED.get(entry.state)
        if kind is None:
            return None
        if before is not None and before[1].state == entry.state \
                and before[1].producer_epoch == entry.producer_epoch:
            return None             # the same completion written again (a reload): said once
        partitions = sorted(self._partitions.get(tid, ()))
        opened_epoch = self._open_epoch.pop(tid, None)
        duration = entry.last_update_ms - entry.start_ms if entry.start_ms >= 0 else None
        data = {"transactional_id": tid, "producer_id": entry.producer_id,
                "producer_epoch": entry.producer_epoch,
                "partitions": [say.tp_name(t, p) for t, p in partitions],
                "duration_ms": duration}
        if kind == "txn_committed":
            sentence = say.txn_committed(entry.producer_id, entry.producer_epoch, tid,
                                         partitions, duration)
        else:
            fenced = (opened_epoch if opened_epoch is not None
                      and opened_epoch < entry.producer_epoch else None)
            data["fenced_epoch"] = fenced
            sentence = say.txn_aborted(entry.producer_id, entry.producer_epoch, tid, partitions,
                                       duration, fenced)
        return Change(kind, sentence, data)

    def view(self, leaders: dict[int, int] | None = None) -> list[dict]:
        """Every live transactional id for ``/api/cluster`` (a Dead one is left out, as Kafka's
        tools leave it out), by id: ``open`` while a transaction is in flight; ``partitions``
        are the open transaction's, or the last finished one's."""
        leaders = leaders or {}
        out = []
        for tid, (partition, entry) in sorted(self.current.items()):
            if entry.state == TxnState.DEAD:
                continue
            shown = entry.partitions if entry.state in OPEN_STATES else \
                self._partitions.get(tid, frozenset()) if entry.state in COMPLETED else ()
            out.append({
                "transactional_id": tid, "producer_id": entry.producer_id,
                "producer_epoch": entry.producer_epoch, "state": str(entry.state),
                "open": entry.state in OPEN_STATES,
                "partitions": [say.tp_name(t, p) for t, p in sorted(shown)],
                "coordinator": leaders.get(partition),
                "timeout_ms": entry.transaction_timeout_ms,
                "start_ms": entry.start_ms if entry.start_ms >= 0 else None,
                "last_update_ms": entry.last_update_ms,
            })
        return out
