"""``__consumer_offsets`` keys and values (kafkalite.coordinator.records) against Kafka 2.8's
schemas (core/src/main/resources/common/message/{OffsetCommitKey,OffsetCommitValue,
GroupMetadataKey,GroupMetadataValue}.json).

The golden bytes below were written out by hand from those schemas: an int16 version first, then
the fields in order, strings as int16 length + UTF-8 (-1 for null), bytes as int32 length + bytes,
arrays as an int32 count. Hypothesis checks round trips and that any byte string either parses or
raises CorruptRecordError.
"""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.coordinator import records
from kafkalite.coordinator.types import GroupSnapshot, MemberSnapshot, OffsetAndMetadata
from kafkalite.errors import CorruptRecordError


def h(text: str) -> bytes:
    """Hex digits, whitespace ignored, '#' comments to the end of a line."""
    return bytes.fromhex("".join(line.split("#")[0].replace(" ", "")
                                 for line in text.splitlines()))


# --- golden bytes -------------------------------------------------------------------------------

def test_offset_key_is_version_1_group_topic_partition():
    assert records.offset_key("g", "t", 0) == h("0001  0001 67  0001 74  00000000")
    assert records.offset_key("group", "topic", 3) == h(
        "0001  0005 67726f7570  0005 746f706963  00000003")
    # non-ASCII: UTF-8 bytes, the length counts bytes ("é" is c3 a9)
    assert records.offset_key("é", "t", -1) == h("0001  0002 c3a9  0001 74  ffffffff")


def test_group_key_is_version_2_group():
    assert records.group_key("g") == h("0002  0001 67")
    assert records.group_key("") == h("0002  0000")


def test_offset_value_v3_offset_leader_epoch_metadata_commit_timestamp():
    oam = OffsetAndMetadata(offset=42, leader_epoch=7, metadata="m", commit_timestamp=1000)
    assert records.offset_value(oam) == h(
        "0003  000000000000002a  00000007  0001 6d  00000000000003e8")
    # no leader epoch: -1, empty metadata: length 0
    assert records.offset_value(OffsetAndMetadata(0, -1, "", 5)) == h(
        "0003  0000000000000000  ffffffff  0000  0000000000000005")


def test_offset_value_with_an_expire_timestamp_is_version_1_as_kafka_writes_it():
    oam = OffsetAndMetadata(offset=42, leader_epoch=7, metadata="", commit_timestamp=1000,
                            expire_timestamp=2000)
    # v1 has no leader epoch: offset, metadata, commit timestamp, expire timestamp
    assert records.offset_value(oam) == h(
        "0001  000000000000002a  0000  00000000000003e8  00000000000007d0")


MEMBER = MemberSnapshot(member_id="m1", group_instance_id=None, client_id="c", client_host="/h",
                        rebalance_timeout_ms=300000, session_timeout_ms=10000,
                        subscription=b"\x01", assignment=b"\x02\x03")
GROUP = GroupSnapshot(protocol_type="consumer", generation=5, protocol="range", leader="m1",
                      state_timestamp=1_600_000_000_000, members=(MEMBER,))
GROUP_V3 = h("""
    0003                         # version
    0008 636f6e73756d6572        # protocol_type "consumer"
    00000005                     # generation
    0005 72616e6765              # protocol "range"
    0002 6d31                    # leader "m1"
    00000174876e8000             # current_state_timestamp 1600000000000
    00000001                     # one member:
      0002 6d31                  #   member_id "m1"
      ffff                       #   group_instance_id null
      0001 63                    #   client_id "c"
      0002 2f68                  #   client_host "/h"
      000493e0                   #   rebalance_timeout 300000
      00002710                   #   session_timeout 10000
      00000001 01                #   subscription
      00000002 0203              #   assignment
""")


def test_group_value_v3():
    assert records.group_value(GROUP) == GROUP_V3


def test_empty_group_value_has_null_protocol_and_leader_and_no_members():
    empty = GroupSnapshot(protocol_type="", generation=3, protocol=None, leader=None,
                          state_timestamp=123)
    assert records.group_value(empty) == h(
        "0003  0000  00000003  ffff  ffff  000000000000007b  00000000")


def test_static_member_keeps_its_group_instance_id():
    member = MEMBER._replace(group_instance_id="i")
    value = records.group_value(GROUP._replace(members=(member,)))
    assert h("0002 6d31  0001 69  0001 63") in value
    assert records.parse(records.group_key("g"), value)[2].members == (member,)


# --- parsing what Kafka wrote -------------------------------------------------------------------

def test_parse_offset_records_of_every_version():
    key = records.offset_key("g", "t", 2)
    expected_key = ("g", "t", 2)
    v0 = h("0000  000000000000000a  0002 6869  0000000000000064")
    v1 = h("0001  000000000000000a  0002 6869  0000000000000064  00000000000000c8")
    v2 = h("0002  000000000000000a  0002 6869  0000000000000064")
    v3 = h("0003  000000000000000a  00000004  0002 6869  0000000000000064")
    assert records.parse(key, v0) == ("offset", expected_key,
                                      OffsetAndMetadata(10, -1, "hi", 100, -1))
    assert records.parse(key, v1) == ("offset", expected_key,
                                      OffsetAndMetadata(10, -1, "hi", 100, 200))
    assert records.parse(key, v2) == ("offset", expected_key,
                                      OffsetAndMetadata(10, -1, "hi", 100, -1))
    assert records.parse(key, v3) == ("offset", expected_key,
                                      OffsetAndMetadata(10, 4, "hi", 100, -1))
    # key version 0 (Kafka before 0.10) has the same layout
    key_v0 = h("0000  0001 67  0001 74  00000002")
    assert records.parse(key_v0, v3)[:2] == ("offset", expected_key)


def test_parse_group_records_of_every_version():
    key = records.group_key("g")
    head = h("0008 636f6e73756d6572  00000005  0005 72616e6765  0002 6d31")
    member_start = h("0002 6d31")
    member_ids = h("0001 63  0002 2f68")
    tail = h("00000001 01  00000002 0203")
    ts = h("00000174876e8000")
    v0 = (h("0000") + head + h("00000001") + member_start + member_ids
          + h("00002710") + tail)
    v1 = (h("0001") + head + h("00000001") + member_start + member_ids
          + h("000493e0 00002710") + tail)
    v2 = (h("0002") + head + ts + h("00000001") + member_start + member_ids
          + h("000493e0 00002710") + tail)
    v3 = (h("0003") + head + ts + h("00000001") + member_start + h("0001 69") + member_ids
          + h("000493e0 00002710") + tail)
    kind, group, snapshot = records.parse(key, v0)
    assert (kind, group) == ("group", "g")
    # v0 has no rebalance timeout (Kafka uses the session timeout) and no state timestamp
    assert snapshot == GROUP._replace(state_timestamp=-1, members=(
        MEMBER._replace(rebalance_timeout_ms=10000),))
    assert records.parse(key, v1)[2] == GROUP._replace(state_timestamp=-1)
    assert records.parse(key, v2)[2] == GROUP
    assert records.parse(key, v3)[2] == GROUP._replace(
        members=(MEMBER._replace(group_instance_id="i"),))


def test_tombstones_parse_to_none():
    assert records.parse(records.offset_key("g", "t", 0), None) == ("offset", ("g", "t", 0), None)
    assert records.parse(records.group_key("g"), None) == ("group", "g", None)


def test_unknown_key_versions_are_skipped():
    # Kafka 3.x writes key versions 3+ for other record kinds in the same topic
    assert records.parse(h("0003  0001 67"), b"\x00\x00anything") is None
    assert records.parse(h("7fff"), None) is None


def test_trailing_bytes_after_the_last_field_are_ignored_as_kafka_does():
    value = records.offset_value(OffsetAndMetadata(1, 2, "", 3)) + b"\x00\x01"
    parsed = records.parse(records.offset_key("g", "t", 0), value)
    assert parsed[2] == OffsetAndMetadata(1, 2, "", 3)


@pytest.mark.parametrize("key, value, what", [
    (None, None, "no key"),
    (b"", None, "truncated version"),
    (b"\x00", None, "truncated version"),
    (h("0001 0005 6767"), None, "truncated group"),
    (h("0001 0001 67 0001 74 0000"), None, "truncated partition"),
    (h("0001 ffff 0001 74 00000000"), None, "null group"),
    (h("0002 fffe"), None, "negative length"),
    (h("0002 0001 ff"), None, "not UTF-8"),
    (h("ffff"), None, "negative key version"),
    (records.offset_key("g", "t", 0), h("0004 0000000000000001"), "unknown value version"),
    (records.offset_key("g", "t", 0), h("0003 00000000"), "truncated offset"),
    (records.offset_key("g", "t", 0), h("0003 0000000000000001 ffffffff ffff 0000000000000000"),
     "null metadata"),
    (records.group_key("g"), h("0003 0000 00000001 ffff ffff 0000000000000000 7fffffff"),
     "impossible member count"),
    (records.group_key("g"), h("0003 0000 00000001 ffff ffff 0000000000000000 ffffffff"),
     "null members"),
    (records.group_key("g"), h("0000 0000 00000001 ffff ffff 00000001"
                               "0000 0000 0000 00000000 ffffffff 00000000"), "null subscription"),
    (records.group_key("g"), h("ffff"), "negative value version"),
    (records.group_key("g"), b"", "empty value"),
])
def test_malformed_bytes_raise_corrupt_record_error(key, value, what):
    with pytest.raises(CorruptRecordError):
        records.parse(key, value)


def test_values_that_do_not_fit_kafkas_fields_are_refused_when_writing():
    with pytest.raises(ValueError):
        records.offset_key("g" * 40000, "t", 0)
    with pytest.raises(ValueError):
        records.offset_key("g", "t", 2**31)
    with pytest.raises(ValueError):
        records.offset_value(OffsetAndMetadata(2**63, -1, "", 0))
    with pytest.raises(ValueError):
        records.offset_value(OffsetAndMetadata(0, -1, None, 0))
    with pytest.raises(ValueError):
        records.group_value(GROUP._replace(members=(MEMBER._replace(subscription=None),)))


# --- round trips --------------------------------------------------------------------------------

names = st.text(max_size=30)
i32 = st.integers(-2**31, 2**31 - 1)
i64 = st.integers(-2**63, 2**63 - 1)
timestamps = st.integers(-1, 2**50)

offsets = st.builds(OffsetAndMetadata, offset=i64, leader_epoch=i32, metadata=st.text(max_size=50),
                    commit_timestamp=i64,
                    expire_timestamp=st.one_of(st.just(-1), i64))
members = st.builds(MemberSnapshot, member_id=names, group_instance_id=st.none() | names,
                    client_id=names, client_host=names, rebalance_timeout_ms=i32,
                    session_timeout_ms=i32, subscription=st.binary(max_size=40),
                    assignment=st.binary(max_size=40))
groups = st.builds(GroupSnapshot, protocol_type=names, generation=i32,
                   protocol=st.none() | names, leader=st.none() | names,
                   state_timestamp=i64, members=st.lists(members, max_size=4).map(tuple))


@given(group=names, topic=names, partition=i32, oam=offsets)
def test_offset_records_round_trip(group, topic, partition, oam):
    kind, key, value = records.parse(records.offset_key(group, topic, partition),
                                     records.offset_value(oam))
    assert (kind, key) == ("offset", (group, topic, partition))
    if oam.expire_timestamp == -1:
        assert value == oam
    else:   # v1 has no leader epoch, as in Kafka
        assert value == oam._replace(leader_epoch=-1)


@given(group=names, snapshot=groups)
def test_group_records_round_trip(group, snapshot):
    assert records.parse(records.group_key(group), records.group_value(snapshot)) == (
        "group", group, snapshot)


@settings(max_examples=300)
@given(key=st.binary(max_size=40), value=st.none() | st.binary(max_size=80))
def test_any_bytes_parse_or_raise_corrupt_record_error(key, value):
    try:
        result = records.parse(key, value)
    except CorruptRecordError:
        return
    assert result is None or result[0] in ("offset", "group")


@settings(max_examples=200)
@given(snapshot=groups, cut=st.integers(0, 10_000))
def test_every_truncation_of_a_group_value_is_corrupt(snapshot, cut):
    value = records.group_value(snapshot)
    cut = cut % len(value)
    with pytest.raises(CorruptRecordError):
        records.parse(records.group_key("g"), value[:cut])


def test_struct_layout_sanity():
    # the int16 version prefix is big-endian, as Kafka's ByteBuffer
    assert records.offset_key("g", "t", 1)[:2] == struct.pack(">h", 1)
