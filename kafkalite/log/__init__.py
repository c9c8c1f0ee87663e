"""The segmented append-only log (DESIGN section 6): indexes, segments, Log, checkpoints and the
LogManager service."""

from kafkalite.log.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CorruptCheckpointError,
    OffsetCheckpoint,
    read_checkpoint,
    write_checkpoint,
)
from kafkalite.log.dir_failure import LogDirFailureChannel
from kafkalite.log.index import OffsetIndex, TimeIndex
from kafkalite.log.log import (
    AppendInfo,
    CompactionResult,
    FetchData,
    Log,
    UnexpectedAppendOffsetError,
    log_dir_name,
    parse_topic_partition,
)
from kafkalite.log.manager import CLEAN_SHUTDOWN_FILE, LogManager
from kafkalite.log.segment import LogSegment

__all__ = [
    "Log", "LogSegment", "LogManager", "AppendInfo", "FetchData", "CompactionResult",
    "OffsetIndex", "TimeIndex", "UnexpectedAppendOffsetError", "parse_topic_partition",
    "log_dir_name", "read_checkpoint", "write_checkpoint", "OffsetCheckpoint",
    "CorruptCheckpointError", "RECOVERY_POINT_CHECKPOINT", "LOG_START_OFFSET_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT", "CLEAN_SHUTDOWN_FILE", "LogDirFailureChannel",
]
