"""The keys and values of ``__consumer_offsets``, byte for byte Kafka's (2.8), so Kafka's own tools
(``kafka-console-consumer --formatter ...GroupMetadataManager$OffsetsMessageFormatter``) read
what kafkalite writes, and kafkalite reads what Kafka wrote.

Pure codecs, no I/O. Neither kio nor kafka-python ships these internal schemas, so this is a small
struct codec (the reader and writer of kafkalite.struct_codec, shared with ``__transaction_state``)
of Kafka's message JSONs (core/src/main/resources/common/message/ in Kafka 2.8:
OffsetCommitKey, OffsetCommitValue, GroupMetadataKey, GroupMetadataValue). None of those versions
is flexible, so the encoding is Kafka's classic one, big-endian throughout:

* every key and value starts with its version, an int16 (``MessageUtil.toVersionPrefixedBytes``);
* ``string``: int16 length, then UTF-8 bytes; a nullable string is length -1 for null;
* ``bytes``: int32 length, then the bytes; ``[]T``: int32 count, then the elements.

Layouts (``|`` separates fields; ``[vN+]`` marks fields only in those versions)::

    OffsetCommitKey     v0, v1: group string | topic string | partition int32
    GroupMetadataKey    v2:     group string
    OffsetCommitValue   v0:     offset int64 | metadata string | commit_timestamp int64
                        v1:     offset int64 | metadata string | commit_timestamp int64
                                | expire_timestamp int64
                        v2:     offset int64 | metadata string | commit_timestamp int64
                        v3:     offset int64 | leader_epoch int32 | metadata string
                                | commit_timestamp int64
    GroupMetadataValue  v0-v3:  protocol_type string | generation int32
                                | protocol nullable string | leader nullable string
                                | [v2+] current_state_timestamp int64
                                | members [MemberMetadata]
    MemberMetadata      v0-v3:  member_id string | [v3+] group_instance_id nullable string
                                | client_id string | client_host string
                                | [v1+] rebalance_timeout int32 | session_timeout int32
                                | subscription bytes | assignment bytes

What is written, as Kafka 2.8 writes it (inter.broker.protocol.version 2.8): offset keys v1,
group keys v2; offset values v3, or v1 when the commit carries an explicit expire timestamp (only
v1 has that field); group values v3. A null value (tombstone) deletes the key.

Reading follows Kafka's ``GroupMetadataManager.readMessageKey``/``read*MessageValue``: every value
version 0-3, defaults for the fields a version lacks (leader_epoch -1, expire -1, rebalance
timeout = session timeout in v0, state timestamp -1, no group instance id), and bytes after the
last field are ignored as Kafka's generated readers ignore them. Key versions above 2 (Kafka 3.x
adds records for other coordinators) are skipped: ``parse`` returns None. Anything else that does
not decode -- too short, negative lengths where null is not allowed, bad UTF-8, an unknown value
version -- raises CorruptRecordError.
"""

from __future__ import annotations

from kafkalite.coordinator.types import GroupSnapshot, MemberSnapshot, OffsetAndMetadata
from kafkalite.errors import CorruptRecordError
from kafkalite.struct_codec import Reader, Writer

__all__ = ["offset_key", "offset_value", "group_key", "group_value", "parse",
           "OFFSET_KEY_VERSION", "GROUP_KEY_VERSION", "OFFSET_VALUE_VERSION",
           "GROUP_VALUE_VERSION"]

#: versions written (Kafka 2.8's)
OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRE = 1
GROUP_VALUE_VERSION = 3
#: versions read
_OFFSET_KEY_VERSIONS = (0, 1)
_MAX_VALUE_VERSION = 3


# --- writing --------------------------------------------------------------------------------------

def offset_key(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey v1: the key of a committed offset."""
    w = Writer(OFFSET_KEY_VERSION)
    w.string("group", group)
    w.string("topic", topic)
    w.int32("partition", partition)
    return w.done()


def group_key(group: str) -> bytes:
    """GroupMetadataKey v2: the key of a group's metadata."""
    w = Writer(GROUP_KEY_VERSION)
    w.string("group", group)
    return w.done()


def offset_value(oam: OffsetAndMetadata) -> bytes:
    """OffsetCommitValue v3, or v1 when ``oam.expire_timestamp`` is set (not -1), as Kafka
    2.8 writes it (v1 is the only version with an expire timestamp; it has no leader epoch)."""
    if oam.expire_timestamp != -1:
        w = Writer(OFFSET_VALUE_VERSION_WITH_EXPIRE)
        w.int64("offset", oam.offset)
        w.string("metadata", oam.metadata)
        w.int64("commit_timestamp", oam.commit_timestamp)
        w.int64("expire_timestamp", oam.expire_timestamp)
        return w.done()
    w = Writer(OFFSET_VALUE_VERSION)
    w.int64("offset", oam.offset)
    w.int32("leader_epoch", oam.leader_epoch)
    w.string("metadata", oam.metadata)
    w.int64("commit_timestamp", oam.commit_timestamp)
    return w.done()


def group_value(snapshot: GroupSnapshot) -> bytes:
    """GroupMetadataValue v3."""
    w = Writer(GROUP_VALUE_VERSION)
    w.string("protocol_type", snapshot.protocol_type if snapshot.protocol_type is not None
             else "")
    w.int32("generation", snapshot.generation)
    w.string("protocol", snapshot.protocol, nullable=True)
    w.string("leader", snapshot.leader, nullable=True)
    w.int64("current_state_timestamp", snapshot.state_timestamp)
    w.int32("members", len(snapshot.members))
    for member in snapshot.members:
        w.string("member_id", member.member_id)
        w.string("group_instance_id", member.group_instance_id, nullable=True)
        w.string("client_id", member.client_id)
        w.string("client_host", member.client_host)
        w.int32("rebalance_timeout", member.rebalance_timeout_ms)
        w.int32("session_timeout", member.session_timeout_ms)
        w.bytes_("subscription", member.subscription)
        w.bytes_("assignment", member.assignment)
    return w.done()


# --- reading --------------------------------------------------------------------------------------

def _read_offset_value(value) -> OffsetAndMetadata:
    r = Reader(value, "OffsetCommitValue")
    version = r.int16("version")
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise CorruptRecordError(f"OffsetCommitValue: unknown version {version}")
    offset = r.int64("offset")
    leader_epoch = r.int32("leader_epoch") if version >= 3 else -1
    metadata = r.string("metadata")
    commit_timestamp = r.int64("commit_timestamp")
    expire_timestamp = r.int64("expire_timestamp") if version == 1 else -1
    return OffsetAndMetadata(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


# smallest MemberMetadata: 3 empty strings (2 bytes each), session timeout, two empty bytes
_MIN_MEMBER_SIZE = 3 * 2 + 4 + 2 * 4


def _read_group_value(value) -> GroupSnapshot:
    r = Reader(value, "GroupMetadataValue")
    version = r.int16("version")
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise CorruptRecordError(f"GroupMetadataValue: unknown version {version}")
    protocol_type = r.string("protocol_type")
    generation = r.int32("generation")
    protocol = r.string("protocol", nullable=True)
    leader = r.string("leader", nullable=True)
    state_timestamp = r.int64("current_state_timestamp") if version >= 2 else -1
    members = []
    for _ in range(r.count("members", _MIN_MEMBER_SIZE)):
        member_id = r.string("member_id")
        instance_id = r.string("group_instance_id", nullable=True) if version >= 3 else None
        client_id = r.string("client_id")
        client_host = r.string("client_host")
        rebalance_timeout = r.int32("rebalance_timeout") if version >= 1 else None
        session_timeout = r.int32("session_timeout")
        if rebalance_timeout is None:
            rebalance_timeout = session_timeout   # v0 had none: Kafka uses the session timeout
        subscription = r.bytes_("subscription")
        assignment = r.bytes_("assignment")
        members.append(MemberSnapshot(member_id, instance_id, client_id, client_host,
                                      rebalance_timeout, session_timeout, subscription,
                                      assignment))
    return GroupSnapshot(protocol_type, generation, protocol, leader, state_timestamp,
                         tuple(members))


def parse(key: bytes, value: bytes | None):
    """Decode one ``__consumer_offsets`` record.

    Returns ``("offset", (group, topic, partition), OffsetAndMetadata | None)`` or
    ``("group", group, GroupSnapshot | None)`` (None: a tombstone), or None for a key version
    this codec does not know (a record to skip). CorruptRecordError for undecodable bytes
    (including a null key, which Kafka never writes there).
    """
    if key is None:
        raise CorruptRecordError("a __consumer_offsets record has no key")
    r = Reader(key, "__consumer_offsets key")
    version = r.int16("version")
    if version in _OFFSET_KEY_VERSIONS:
        group = r.string("group")
        topic = r.string("topic")
        partition = r.int32("partition")
        return ("offset", (group, topic, partition),
                None if value is None else _read_offset_value(value))
    if version == GROUP_KEY_VERSION:
        group = r.string("group")
        return ("group", group, None if value is None else _read_group_value(value))
    if version < 0:
        raise CorruptRecordError(f"__consumer_offsets key has a negative version {version}")
    return None
