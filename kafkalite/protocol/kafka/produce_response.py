"""Kafka's Produce response (v3-v9, the versions kafkalite serves) written straight with ``struct``: the answer a broker sends
most, byte for byte what kio writes through the converter (``convert/data.py``) and
``codec.encode_response``.

Why: kio's generic path (the converter's dict, ``entities.build`` into validated entities, then
kio's entity writer) cost 40% of serving a produce request in a py-spy profile at 5,000 records/s
(one record per request at linger.ms 0), about ten times the cost of this. The generic path stays
the reference: ``tests/unit/test_produce_response_fast.py`` compares both on generated answers
for every version, and anything unusual here (a version past 9, a value out of its field's
range) returns None so that the caller takes the generic path.
"""

from __future__ import annotations

import struct

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka import wire_primitives as w

__all__ = ["encode_produce_response", "MIN_VERSION", "MAX_VERSION"]

MIN_VERSION = 3       # kio has no schema below (nor does kafkalite serve one)
MAX_VERSION = 9       # Kafka 2.8's newest; v9 is the first flexible one
_PARTITION = struct.Struct(">ihq")            # index, error_code, base_offset


def encode_produce_response(version: int, correlation_id: int,
                            response: m.ProduceResponse) -> bytes | None:
    """The response frame payload (header and body), or None when the generic path must
    write it."""
    if type(response) is not m.ProduceResponse or not MIN_VERSION <= version <= MAX_VERSION:
        return None
    flexible = version >= 9
    try:
        out = [w.response_header(correlation_id, flexible)]
        out.append(w.count(len(response.responses), flexible))
        for topic, partitions in response.responses.items():
            out.append(w.string(topic, flexible))
            out.append(w.count(len(partitions), flexible))
            for index, p in partitions.items():
                out.append(_PARTITION.pack(index, p.error_code, p.base_offset))
                # -1 (CreateTime) is what kio writes for "no time"
                out.append(w.I64.pack(p.log_append_time if p.log_append_time >= 0 else -1))
                if version >= 5:
                    out.append(w.I64.pack(p.log_start_offset))
                if version >= 8:
                    errors = p.record_errors
                    out.append(w.count(len(errors), flexible))
                    for e in errors:
                        out.append(w.I32.pack(e.batch_index))
                        out.append(w.nullable_string(e.message, flexible))
                        if flexible:
                            out.append(w.NO_TAGS)
                    # Kafka sends an error message only with record errors (KIP-467), as the
                    # converter does
                    out.append(w.nullable_string(p.error_message if errors else None, flexible))
                if flexible:
                    out.append(w.NO_TAGS)        # the partition's tagged fields
            if flexible:
                out.append(w.NO_TAGS)            # the topic's
        out.append(w.I32.pack(response.throttle_time_ms))
        if flexible:
            out.append(w.NO_TAGS)                # the body's
    except (struct.error, OverflowError, AttributeError, TypeError):
        return None
    return b"".join(out)
