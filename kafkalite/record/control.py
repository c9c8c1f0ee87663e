"""Transaction markers: Kafka's control batches that end a transaction in a partition.

A transaction coordinator ends a transaction by having each partition's leader append one
control batch (WriteTxnMarkers). Byte for byte Kafka's ``MemoryRecords.withEndTransactionMarker``:
a magic-2 batch with the control and transactional attribute bits, the producer's id and epoch,
no sequence (-1), base offset 0 (the leader assigns the real one) and exactly one record whose

* key is the ``ControlRecordType`` key: version int16 (0), type int16 (0 ABORT, 1 COMMIT);
* value is the ``EndTransactionMarker`` value: version int16 (0), coordinator epoch int32.

Consumers skip control batches; the broker's producer state reads them to close the producer's
transaction (``log.producer_state``), and the group coordinator to apply transactional offsets.
"""

from __future__ import annotations

import struct

from kafkalite.errors import InvalidRecordError
from kafkalite.record.batch import build_batch

__all__ = ["ABORT", "COMMIT", "build_control_batch", "parse_control_record", "control_type"]

ABORT = 0
COMMIT = 1

_KEY = struct.Struct(">hh")        # ControlRecordType key: version, type
_VALUE = struct.Struct(">hi")      # EndTransactionMarker value: version, coordinator epoch
_KEY_VERSION = 0
_VALUE_VERSION = 0


def build_control_batch(producer_id: int, producer_epoch: int, commit: bool,
                        coordinator_epoch: int, timestamp_ms: int) -> bytes:
    """One COMMIT or ABORT marker batch for ``producer_id``/``producer_epoch``."""
    key = _KEY.pack(_KEY_VERSION, COMMIT if commit else ABORT)
    value = _VALUE.pack(_VALUE_VERSION, coordinator_epoch)
    return build_batch([(timestamp_ms, key, value, None)], producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=-1, transactional=True,
                       control=True)


def control_type(key) -> int:
    """The control record type in a control record's key, as Kafka's
    ``ControlRecordType.parseTypeId``: InvalidRecordError for a short key or negative version
    (a newer version is read as version 0, as Kafka does)."""
    if key is None or len(key) < _KEY.size:
        raise InvalidRecordError(
            f"control record key of {0 if key is None else len(key)} bytes: need at least "
            f"{_KEY.size}")
    version, kind = _KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecordError(f"invalid control record key version {version}")
    return kind


def parse_control_record(key, value) -> tuple[bool, int]:
    """``(commit, coordinator_epoch)`` of an end-transaction marker record, as Kafka's
    ``EndTransactionMarker.deserialize``: InvalidRecordError for a record that is not one (a type
    other than ABORT/COMMIT, a short value, a negative value version)."""
    kind = control_type(key)
    if kind not in (ABORT, COMMIT):
        raise InvalidRecordError(f"control record type {kind} is not a transaction marker")
    if value is None or len(value) < _VALUE.size:
        raise InvalidRecordError(
            f"end transaction marker value of {0 if value is None else len(value)} bytes: need "
            f"at least {_VALUE.size}")
    version, coordinator_epoch = _VALUE.unpack_from(value)
    if version < 0:
        raise InvalidRecordError(f"invalid end transaction marker version {version}")
    return kind == COMMIT, coordinator_epoch
