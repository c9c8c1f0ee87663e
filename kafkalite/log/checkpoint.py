"""Offset checkpoint files, in Kafka's text format::

    0                 <- format version
    2                 <- number of entries
    my-topic 0 1234   <- topic partition offset
    other 3 77

Used for ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint`` and
``replication-offset-checkpoint`` in each data directory. A write goes to ``<file>.tmp``, is
fsynced, renamed over the file and the directory fsynced, so a crash leaves either the old or the
new file, never a mix; a failed write (a full disk) removes the ``.tmp`` and leaves the old file.
Reading a missing file gives ``{}``; a malformed file raises CorruptCheckpointError naming the file
and line.
"""

from __future__ import annotations

import os
from typing import Mapping

from kafkalite.errors import KafkaStorageError
from kafkalite.topic_partition import TopicPartition

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CHECKPOINT_VERSION = 0


class CorruptCheckpointError(KafkaStorageError):
    """A checkpoint file exists but does not parse."""


def write_checkpoint(path: str, offsets: Mapping[TopicPartition, int]) -> None:
    """Atomically replace ``path`` with the given offsets (sorted by topic, partition)."""
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    for (topic, partition), offset in sorted(offsets.items()):
        if not topic or any(ch.isspace() for ch in topic):
            raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint")
        lines.append(f"{topic} {int(partition)} {int(offset)}")
    data = ("\n".join(lines) + "\n").encode()
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        # the old file is untouched; a torn .tmp would only hold space on a full disk
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")


def read_checkpoint(path: str) -> dict[TopicPartition, int]:
    """The offsets in ``path``; ``{}`` if it does not exist."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptCheckpointError(f"checkpoint file {path} is not UTF-8 text") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    def bad(number: int, what: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(f"malformed checkpoint file {path}, line {number}: {what}")

    if len(lines) < 2:
        raise bad(len(lines) + 1, "expected a version line and a count line")
    try:
        version = int(lines[0].strip())
    except ValueError:
        raise bad(1, f"version {lines[0]!r} is not a number") from None
    if version != CHECKPOINT_VERSION:
        raise bad(1, f"unsupported version {version} (expected {CHECKPOINT_VERSION})")
    try:
        expected = int(lines[1].strip())
    except ValueError:
        raise bad(2, f"entry count {lines[1]!r} is not a number") from None
    entries = lines[2:]
    if expected != len(entries):
        raise bad(2, f"declares {expected} entries but {len(entries)} follow")
    result: dict[TopicPartition, int] = {}
    for number, line in enumerate(entries, start=3):
        parts = line.split()
        if len(parts) != 3:
            raise bad(number, f"expected 'topic partition offset', got {line!r}")
        topic, partition, offset = parts
        try:
            result[(topic, int(partition))] = int(offset)
        except ValueError:
            raise bad(number, f"partition and offset must be numbers, got {line!r}") from None
    return result


class OffsetCheckpoint:
    """One checkpoint file: ``read()`` / ``write(offsets)``."""

    def __init__(self, path: str):
        self.path = path

    def read(self) -> dict[TopicPartition, int]:
        return read_checkpoint(self.path)

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        write_checkpoint(self.path, offsets)

    def __repr__(self) -> str:
        return f"OffsetCheckpoint({self.path!r})"


def fsync_dir(path: str) -> None:
    """fsync a directory so a rename or file creation in it is durable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
