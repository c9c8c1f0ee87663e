"""Kafka-protocol JoinGroup answers encode at every version: before v7 protocol_name is a
non-nullable string, so "no protocol" (errors such as MEMBER_ID_REQUIRED, which every v4+
client gets on its first join) is sent as "", as Kafka does."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer

from kafkalite.coordinator.types import JoinResult
from kafkalite.protocol.kafka import codec
from kafkalite.server import kafka_group_apis


class _Coordinator:
    def join_group(self, *args):
        return defer.succeed(JoinResult(79, member_id="app-1"))


def _request(version):
    cls = codec.request_class(11, version)
    fields = {"group_id": "g", "session_timeout": 10000, "member_id": "",
              "protocol_type": "consumer", "protocols": ()}
    names = {f for f in cls.__dataclass_fields__}
    if "rebalance_timeout" in names:
        fields["rebalance_timeout"] = 60000
    if "group_instance_id" in names:
        fields["group_instance_id"] = None
    return SimpleNamespace(**fields)


@pytest.mark.parametrize("version", range(0, 8))
@pytest.mark.parametrize("coordinator", [None, _Coordinator()])
def test_join_group_answers_encode(version, coordinator):
    broker = SimpleNamespace(group_coordinator=coordinator)
    out = []
    kafka_group_apis.join_group(broker, _request(version), version, None, "app").addBoth(
        out.append)
    [values] = out
    payload = codec.encode_response(11, version, 1, values)
    _cid, body = codec.decode_response(11, version, payload)
    assert body.error_code == (79 if coordinator else 15)
    if version < 7:
        assert body.protocol_name == ""
