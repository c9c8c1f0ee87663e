"""A Fetch v0-v3 answer down-converted for its client, as Kafka 2.8's handleFetchRequest: such
a client reads only message format v0 (Fetch v0/v1) or v1 (v2/v3), so a partition whose topic
stores a newer format (``message.format.version``) and whose records hold newer batches gets
them converted (``record.down_convert``) -- or UNSUPPORTED_VERSION without records when the
topic's ``message.downconversion.enable`` is false; records that cannot be converted (zstd)
answer UNSUPPORTED_COMPRESSION_TYPE without records."""

from __future__ import annotations

import dataclasses

from kafkalite import errors
from kafkalite.config_defs import record_magic
from kafkalite.protocol import messages as m
from kafkalite.record.down_convert import down_convert, fetch_magic
from kafkalite.record.header import iter_headers
from kafkalite.server.request_context import KAFKA

__all__ = ["client_magic", "down_converted"]


def client_magic(ctx) -> int | None:
    """The newest magic the client of this Fetch reads; None when it reads any."""
    # (a context without a protocol is a test's stand-in for a modern client)
    if getattr(ctx, "protocol", None) != KAFKA:
        return None
    return fetch_magic(ctx.api_version)


def down_converted(request: m.FetchRequest, magic: int, config_for,
                   response: m.FetchResponse) -> m.FetchResponse:
    """``response`` as the client of ``magic`` reads it; ``config_for(topic)`` gives a topic's
    config."""
    offsets = {(t.topic, p.partition): p.fetch_offset for t in request.topics
               for p in t.partitions}
    topics = []
    for t in response.responses:
        partitions = []
        config = config_for(t.topic)
        newer = record_magic(config.message_format_version) > magic
        for p in t.partitions:
            if p.records and newer and any(h.magic > magic for _pos, h in
                                           iter_headers(p.records, verify_crc=False)):
                p = _converted(p, magic, offsets.get((t.topic, p.partition), 0), config)
            partitions.append(p)
        topics.append(m.FetchTopicResponse(t.topic, partitions))
    return dataclasses.replace(response, responses=topics)


def _converted(p: m.FetchPartitionResponse, magic: int, fetch_offset: int, config):
    if not config.message_downconversion_enable:
        return p._replace(records=b"", error_code=errors.UnsupportedVersionError.code)
    try:
        return p._replace(records=down_convert(p.records, magic, fetch_offset))
    except errors.UnsupportedCompressionTypeError:
        return p._replace(records=b"", error_code=errors.UnsupportedCompressionTypeError.code)
