"""TxnOffsetCommit through the API table and the real connection pipeline, for both wire
protocols (test_group_handlers' broker, stand-in coordinator and fake authorizer, which refuses
the transactional id ``tx-secret``, the group ``secret-group`` and the topic ``secret``):
Kafka 2.8's checks in order (transactional id Write, group Read, topic Read, known partition),
and, over a real GroupCoordinator, the commit that OffsetFetch v7 with require_stable answers
UNSTABLE_OFFSET_COMMIT until the marker."""

from types import SimpleNamespace

from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.coordinator import coordinator as coordinator_module
from kafkalite.coordinator import types as t
from kafkalite.coordinator.coordinator import GroupCoordinator
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey

from test_coordinator import FakeCodec
from test_coordinator_txn_offsets import PositionStore
from test_group_handlers import (  # noqa: F401 - the fixtures, found by name
    GROUP_DENIED, TOPIC_DENIED, UNKNOWN_PARTITION, _broker, _codes, authorizer, broker, kafka,
    native, standin,
)

TXN_DENIED = errors.TransactionalIdAuthorizationFailedError.code
UNSTABLE = errors.UnstableOffsetCommitError.code


def _values(txn_id="tx", group="g", topics=("t", "secret", "gone")):
    return {"transactional_id": txn_id, "group_id": group, "producer_id": 9000,
            "producer_epoch": 2, "generation_id": 4, "member_id": "m-1",
            "group_instance_id": None, "topics": [
                {"name": name, "partitions": [{"partition_index": 0, "committed_offset": 5,
                                               "committed_leader_epoch": 1,
                                               "committed_metadata": "md"}]}
                for name in topics]}


def _request(txn_id="tx", group="g", topics=("t", "secret", "gone")):
    return m.TxnOffsetCommitRequest(
        transactional_id=txn_id, group_id=group, producer_id=9000, producer_epoch=2,
        generation_id=4, member_id="m-1", topics=[
            m.TxnOffsetCommitRequestTopic(name, [m.TxnOffsetCommitRequestPartition(0, 5, 1, "md")])
            for name in topics])


def test_txn_offset_commit_serves_per_partition(broker, standin):
    standin.answers["commit_txn_offsets"] = {("t", 0): 0}
    expected = {("t", 0): 0, ("secret", 0): TOPIC_DENIED, ("gone", 0): UNKNOWN_PARTITION}
    assert _codes(kafka(broker, ApiKey.TXN_OFFSET_COMMIT, 3, _values()).topics) == expected
    assert _codes(native(broker, _request()).topics) == expected
    for name, args in standin.calls:
        assert (name, args) == ("commit_txn_offsets", (
            "tx", "g", 9000, 2, 4, "m-1", None, {("t", 0): t.OffsetAndMetadata(5, 1, "md")}))
    assert len(standin.calls) == 2


def test_before_kip_447_no_generation_or_member_is_sent(broker, standin):
    standin.answers["commit_txn_offsets"] = {("t", 0): 0}
    kafka(broker, ApiKey.TXN_OFFSET_COMMIT, 2, _values(topics=("t",)))
    assert standin.calls[0][1][4:7] == (-1, "", None)


def test_the_transactional_id_is_checked_first(broker, standin, authorizer):
    for values, request in ((_values("tx-secret"), _request("tx-secret")),
                            (_values("tx-secret", "secret-group"),
                             _request("tx-secret", "secret-group"))):
        answer = kafka(broker, ApiKey.TXN_OFFSET_COMMIT, 3, values)
        assert set(_codes(answer.topics).values()) == {TXN_DENIED}
        assert set(_codes(native(broker, request).topics).values()) == {TXN_DENIED}
    assert standin.calls == []


def test_a_refused_group_refuses_every_partition(broker, standin):
    answer = kafka(broker, ApiKey.TXN_OFFSET_COMMIT, 3, _values(group="secret-group"))
    assert _codes(answer.topics) == dict.fromkeys([("t", 0), ("secret", 0), ("gone", 0)],
                                                  GROUP_DENIED)
    assert standin.calls == []


def test_nothing_to_commit_answers_without_the_coordinator(broker, standin):
    answer = kafka(broker, ApiKey.TXN_OFFSET_COMMIT, 3, _values(topics=("secret", "gone")))
    assert _codes(answer.topics) == {("secret", 0): TOPIC_DENIED, ("gone", 0): UNKNOWN_PARTITION}
    assert standin.calls == []


def test_older_versions_see_load_in_progress_as_not_available(broker, standin):
    standin.answers["commit_txn_offsets"] = {
        ("t", 0): errors.CoordinatorLoadInProgressError.code}
    v1 = kafka(broker, ApiKey.TXN_OFFSET_COMMIT, 1, _values(topics=("t",)))
    v3 = kafka(broker, ApiKey.TXN_OFFSET_COMMIT, 3, _values(topics=("t",)))
    assert _codes(v1.topics) == {("t", 0): errors.CoordinatorNotAvailableError.code}
    assert _codes(v3.topics) == {("t", 0): errors.CoordinatorLoadInProgressError.code}


def test_a_real_coordinator_holds_the_offsets_until_the_marker(monkeypatch, authorizer):
    monkeypatch.setattr(coordinator_module, "_codec", lambda: FakeCodec)
    clock, store = Clock(), PositionStore()
    coordinator = GroupCoordinator(1, clock, store, SimpleNamespace())
    coordinator.start()
    coordinator.on_elected(0, 1)
    store.loads[-1][1].callback(({}, {}))
    broker = _broker(coordinator, authorizer)
    values = dict(_values(topics=("t",)), generation_id=-1, member_id="")
    assert _codes(kafka(broker, ApiKey.TXN_OFFSET_COMMIT, 3, values).topics) == {("t", 0): 0}

    def fetch(stable):
        answer = kafka(broker, ApiKey.OFFSET_FETCH, 7, {
            "group_id": "g", "require_stable": stable,
            "topics": [{"name": "t", "partition_indexes": [0]}]})
        [p] = answer.topics[0].partitions
        return p.committed_offset, p.error_code
    assert fetch(True) == (-1, UNSTABLE)
    assert fetch(False) == (-1, 0)
    coordinator.complete_txn_offsets(9000, {0}, True)
    assert fetch(True) == fetch(False) == (5, 0)
