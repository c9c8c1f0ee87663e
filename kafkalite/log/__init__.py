"""The segmented append-only log: a broker's partition logs and the service that runs them.

* ``log``: ``Log``, one partition's log itself -- append, read, roll, truncate, flush and its
  offsets (log start, log end, recovery point);
* ``loader``: recovery when a Log is opened (stray and ``.swap`` files, missing indexes rebuilt,
  a torn tail truncated, the recovery point);
* ``validator``: a produce or replica request's batches checked and their offsets assigned
  before an append (Kafka's LogValidator);
* ``segments``: a log's ordered segment list, reads and flushes across it, and segments leaving
  the log deleted ``file.delete.delay.ms`` later;
* ``cleaning``: the Log's cleaner part -- retention, the log start offset, compaction -- applying
  ``retention`` (which old segments go, by time, size and log start offset) and ``compaction``
  (the newest record per key kept);
* ``segment`` and ``index``: one segment's ``.log``, ``.index`` and ``.timeindex`` files
  (``segment_loading``: a segment opened, checked and recovered);
* ``transactions``: the Log's transaction part -- ``txn_index`` (each segment's ``.txnindex`` of
  aborted transactions), ``producer_snapshot`` (the ``.snapshot`` files of the producer state) and
  ``txn_recovery`` (the txn index rebuilt from the batches when a segment is recovered);
* ``checkpoint``, ``dir_failure``, ``timestamps``: offset checkpoint files, offline data dirs,
  the CreateTime check;
* ``manager``: the LogManager service (loading, retention, cleaner, flush and checkpoint tasks).
"""

from kafkalite.log.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CorruptCheckpointError,
    OffsetCheckpoint,
    read_checkpoint,
    write_checkpoint,
)
from kafkalite.log.compaction import CompactionResult
from kafkalite.log.dir_failure import LogDirFailureChannel
from kafkalite.log.index import OffsetIndex, TimeIndex
from kafkalite.log.log import FetchData, Log, log_dir_name, parse_topic_partition
from kafkalite.log.manager import CLEAN_SHUTDOWN_FILE, LogManager
from kafkalite.log.producer_snapshot import CorruptSnapshotError, ProducerSnapshotEntry
from kafkalite.log.segment import LogSegment
from kafkalite.log.txn_index import AbortedTxn, TransactionIndex
from kafkalite.log.validator import AppendInfo, UnexpectedAppendOffsetError

__all__ = [
    "Log", "LogSegment", "LogManager", "AppendInfo", "FetchData", "CompactionResult",
    "OffsetIndex", "TimeIndex", "UnexpectedAppendOffsetError", "parse_topic_partition",
    "log_dir_name", "read_checkpoint", "write_checkpoint", "OffsetCheckpoint",
    "CorruptCheckpointError", "RECOVERY_POINT_CHECKPOINT", "LOG_START_OFFSET_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT", "CLEAN_SHUTDOWN_FILE", "LogDirFailureChannel",
    "AbortedTxn", "TransactionIndex", "ProducerSnapshotEntry", "CorruptSnapshotError",
]
