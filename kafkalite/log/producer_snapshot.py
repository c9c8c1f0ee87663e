"""Producer state snapshots: ``<20-digit offset>.snapshot`` in a partition's directory (Kafka's
ProducerStateManager ``writeSnapshot``/``readSnapshot`` at 2.8.2, snapshot version 1).

A snapshot holds the producer state table as it stood at its offset (exclusive): per producer
its id, epoch, last sequence, last offset, offset delta of its last batch, last timestamp, the
coordinator epoch of its last transaction marker and the first offset of its ongoing transaction
(-1: none). Why: rebuilding the table means replaying every batch of the log; with a snapshot
only the batches after it are replayed.

Layout, big-endian, as Kafka's Struct writes it: version int16 (1), crc uint32 (CRC-32C of every
byte after it), then the entries as an array (int32 count, then 46 bytes per entry in the order of
``ProducerSnapshotEntry``'s fields). A file whose version or CRC is wrong, or that does not
parse, is CorruptSnapshotError: Kafka then deletes it and uses an older one or the log.

``SnapshotFiles`` keeps a partition's snapshot files by offset and applies Kafka's rules for
removing them (with their segment, above the log end on truncation, stray ones on loading).
"""

from __future__ import annotations

import logging
import os
import struct
from typing import Iterable, NamedTuple

from crc32c import crc32c

from kafkalite.errors import CorruptRecordError

log = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_HEAD = struct.Struct(">hI")   # version, crc
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = _ENTRY.size       # 46
_ENTRIES_OFFSET = _HEAD.size   # the CRC covers the bytes from here on


class CorruptSnapshotError(CorruptRecordError):
    """A snapshot file that cannot be trusted (Kafka's CorruptSnapshotException)."""


class ProducerSnapshotEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def snapshot_path(dir: str, offset: int) -> str:
    return os.path.join(dir, f"{offset:020d}{SNAPSHOT_SUFFIX}")


def snapshot_offset(file_name: str) -> int | None:
    """The offset a ``<20 digits>.snapshot`` file name holds; None for any other name."""
    if not file_name.endswith(SNAPSHOT_SUFFIX):
        return None
    stem = file_name[:-len(SNAPSHOT_SUFFIX)]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def encode_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    entries = list(entries)
    body = bytearray(_COUNT.pack(len(entries)))
    for entry in entries:
        body += _ENTRY.pack(*entry)
    return _HEAD.pack(SNAPSHOT_VERSION, crc32c(body)) + bytes(body)


def decode_snapshot(data: bytes, name: str = "snapshot") -> list[ProducerSnapshotEntry]:
    """The entries of a snapshot file's bytes; CorruptSnapshotError if it is not one."""
    if len(data) < _HEAD.size + _COUNT.size:
        raise CorruptSnapshotError(f"{name} failed schema validation: {len(data)} bytes")
    version, crc = _HEAD.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"{name} contained an unknown file version {version}")
    computed = crc32c(memoryview(data)[_ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshotError(f"{name} is corrupt (CRC is no longer valid). Stored crc: "
                                   f"{crc}. Computed crc: {computed}")
    (count,) = _COUNT.unpack_from(data, _ENTRIES_OFFSET)
    start = _ENTRIES_OFFSET + _COUNT.size
    if count < 0 or start + count * ENTRY_SIZE > len(data):
        raise CorruptSnapshotError(f"{name} failed schema validation: {count} entries in "
                                   f"{len(data)} bytes")
    return [ProducerSnapshotEntry(*_ENTRY.unpack_from(data, start + i * ENTRY_SIZE))
            for i in range(count)]


def write_snapshot(path: str, entries: Iterable[ProducerSnapshotEntry]) -> None:
    """Write (replacing any file there) and fsync, as Kafka's ``writeSnapshot``."""
    data = encode_snapshot(entries)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def read_snapshot(path: str) -> list[ProducerSnapshotEntry]:
    with open(path, "rb") as f:
        data = f.read()
    return decode_snapshot(data, path)


class SnapshotFiles:
    """The ``.snapshot`` files of one partition directory, by offset (Kafka keeps the same map
    in its ProducerStateManager)."""

    def __init__(self, dir: str):
        self.dir = dir
        self.offsets: list[int] = sorted(
            o for o in map(snapshot_offset, _list(dir)) if o is not None)

    def path(self, offset: int) -> str:
        return snapshot_path(self.dir, offset)

    @property
    def latest_offset(self) -> int | None:
        return self.offsets[-1] if self.offsets else None

    def take(self, offset: int, entries: Iterable[ProducerSnapshotEntry]) -> bool:
        """Write the snapshot at ``offset`` unless one at or above it exists (Kafka writes one
        only when the state moved past its last snapshot). True if it wrote."""
        if self.offsets and self.offsets[-1] >= offset:
            return False
        write_snapshot(self.path(offset), entries)
        self.offsets.append(offset)
        log.info("wrote producer snapshot at offset %d in %s", offset, self.dir)
        return True

    def latest(self, at_or_below: int | None = None
               ) -> tuple[int, list[ProducerSnapshotEntry]] | None:
        """The newest readable snapshot (at or below ``at_or_below``): ``(offset, entries)``.
        A corrupt one is deleted and the next older tried, as Kafka's ``loadFromSnapshot``."""
        for offset in reversed(list(self.offsets)):
            if at_or_below is not None and offset > at_or_below:
                continue
            try:
                return offset, read_snapshot(self.path(offset))
            except (CorruptSnapshotError, FileNotFoundError) as exc:
                log.warning("failed to load producer snapshot %s: %s; deleting it",
                            self.path(offset), exc)
                self.delete(offset)
        return None

    def delete(self, offset: int) -> None:
        if offset in self.offsets:
            self.offsets.remove(offset)
        try:
            os.unlink(self.path(offset))
        except FileNotFoundError:
            pass

    def delete_where(self, doomed) -> None:
        for offset in [o for o in self.offsets if doomed(o)]:
            self.delete(offset)

    def remove_strays(self, segment_bases: Iterable[int]) -> None:
        """Delete the snapshots at no segment's base offset, except the newest of them when it
        is above every base (the one a clean shutdown wrote at the log end): Kafka's
        ``removeStraySnapshots``."""
        bases = set(segment_bases)
        strays = [o for o in self.offsets if o not in bases]
        keep = strays[-1] if strays and (not bases or strays[-1] > max(bases)) else None
        for offset in strays:
            if offset != keep:
                self.delete(offset)

    def rename_dir(self, dir: str) -> None:
        """The partition directory moved (the files moved with it)."""
        self.dir = dir


def _list(dir: str) -> list[str]:
    try:
        return os.listdir(dir)
    except FileNotFoundError:
        return []
