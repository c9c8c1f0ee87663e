"""Kafka's Fetch response (v4-v12) written straight with ``struct``: the answer every consumer
poll gets, byte for byte what kio writes through the converter (``convert/data.py``) and
``codec.encode_response``.

Why: kio's generic path (the converter's dict, ``entities.build`` into validated entities, then
kio's entity writer) took 35-93 us per one-partition answer in a micro-benchmark (v11 and v12),
on the path of every record's end-to-end latency. The generic path stays the reference:
``tests/unit/test_fetch_response_fast.py`` compares both on generated answers for every version,
and anything unusual (a version outside 4-12, a value out of its field's range) returns None so
that the caller takes the generic path. v0-v3 (message formats 0 and 1, ``fetch_v0_v3``) always
take it.

Kafka 2.8's v12 has three tagged partition fields (diverging epoch, current leader, snapshot
id). kafkalite never sets them on Kafka's protocol (its own followers fetch natively), so they are
left out, as kio leaves out a tagged field at its default.
"""

from __future__ import annotations

import struct

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka import wire_primitives as w

__all__ = ["encode_fetch_response", "MIN_VERSION", "MAX_VERSION"]

MIN_VERSION = 4       # below, the generic path with fetch_v0_v3's schemas
MAX_VERSION = 12      # Kafka 2.8's newest; v12 is the first flexible one
_PARTITION = struct.Struct(">ihqq")           # index, error_code, high watermark, LSO
_TOP = struct.Struct(">ihi")                  # throttle_time_ms, error_code, session_id (v7+)
_ABORTED = struct.Struct(">qq")               # producer id, first offset


def encode_fetch_response(version: int, correlation_id: int,
                          response: m.FetchResponse) -> bytes | None:
    """The response frame payload (header and body), or None when the generic path must
    write it."""
    if type(response) is not m.FetchResponse or not MIN_VERSION <= version <= MAX_VERSION:
        return None
    flexible = version >= 12
    try:
        out = [w.response_header(correlation_id, flexible)]
        if version >= 7:                             # kafkalite opens no fetch session (id 0)
            out.append(_TOP.pack(response.throttle_time_ms, response.error_code, 0))
        else:
            out.append(w.I32.pack(response.throttle_time_ms))
        out.append(w.count(len(response.responses), flexible))
        for topic in response.responses:
            out.append(w.string(topic.topic, flexible))
            out.append(w.count(len(topic.partitions), flexible))
            for p in topic.partitions:
                lso = p.last_stable_offset if p.last_stable_offset >= 0 else p.high_watermark
                out.append(_PARTITION.pack(p.partition, p.error_code, p.high_watermark, lso))
                if version >= 5:
                    out.append(w.I64.pack(p.log_start_offset))
                aborted = p.aborted_transactions
                out.append(w.nullable_count(None if aborted is None else len(aborted), flexible))
                for a in aborted or ():
                    out.append(_ABORTED.pack(a[0], a[1]))
                    if flexible:
                        out.append(w.NO_TAGS)
                if version >= 11:
                    out.append(w.I32.pack(p.preferred_read_replica))
                records = p.records
                out.append(w.nullable_bytes_prefix(records, flexible))
                if records:
                    out.append(records)
                if flexible:
                    out.append(w.NO_TAGS)            # the partition's tagged fields
            if flexible:
                out.append(w.NO_TAGS)                # the topic's
        if flexible:
            out.append(w.NO_TAGS)                    # the body's
    except (struct.error, OverflowError, AttributeError, TypeError, IndexError):
        return None
    return b"".join(out)
