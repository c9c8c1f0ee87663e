"""Test helpers for the transaction parts of the log: transactional batches, Kafka's end
transaction markers, and a writer that indexes aborted transactions as a partition leader does."""

from __future__ import annotations

import struct

from logtools import START_MS

from kafkalite.log import Log
from kafkalite.log.txn_index import AbortedTxn
from kafkalite.record.batch import build_batch


def data(pid: int, n: int = 2, seq: int = 0, transactional: bool = True, keys=None,
         values=None, timestamp: int = START_MS) -> bytes:
    """A batch of ``n`` records of producer ``pid`` (epoch 0)."""
    keys = keys if keys is not None else [b"k"] * n
    values = values if values is not None else [b"v%d" % i for i in range(n)]
    return build_batch([(timestamp, k, v, None) for k, v in zip(keys, values)],
                       producer_id=pid, producer_epoch=0, base_sequence=seq,
                       transactional=transactional)


def marker(pid: int, commit: bool, timestamp: int = START_MS) -> bytes:
    """Kafka's end transaction marker: key (version 0, type), value (version 0, epoch 5)."""
    record = (timestamp, struct.pack(">hh", 0, int(commit)), struct.pack(">hi", 0, 5), None)
    return build_batch([record], producer_id=pid, producer_epoch=0, transactional=True,
                       control=True)


class Writer:
    """Appends as a partition leader would, indexing each aborted transaction with Kafka's LSO
    (the first offset of the earliest other ongoing transaction, else the marker's + 1)."""

    def __init__(self, log: Log):
        self.log = log
        self.ongoing: dict[int, int] = {}
        self.aborted: list[AbortedTxn] = []
        self.sequences: dict[int, int] = {}

    def data(self, pid: int, n: int = 2, **kw) -> int:
        seq = self.sequences.get(pid, 0)
        info = self.log.append(data(pid, n, seq=seq, **kw))
        self.sequences[pid] = seq + n
        if kw.get("transactional", True):
            self.ongoing.setdefault(pid, info.first_offset)
        return info.first_offset

    def end(self, pid: int, commit: bool) -> int:
        offset = self.log.append(marker(pid, commit)).first_offset
        first = self.ongoing.pop(pid)
        if not commit:
            lso = min(self.ongoing.values(), default=offset + 1)
            entry = AbortedTxn(pid, first, offset, lso)
            self.log.append_aborted_txn(entry)
            self.aborted.append(entry)
        return offset
