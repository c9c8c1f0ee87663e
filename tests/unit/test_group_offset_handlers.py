"""OffsetCommit, OffsetFetch and OffsetDelete through the API table and the real connection
pipeline, for both wire protocols (the broker, stand-in coordinator and fake authorizer of
test_group_handlers): Kafka 2.8's per-partition answers, which kafkalite's native client now
gets too (the allowed partitions served, a refused topic's TOPIC_AUTHORIZATION_FAILED, an unknown
partition's UNKNOWN_TOPIC_OR_PARTITION), and the group's refusal or error answered as Kafka's
error responses."""

from kafkalite import errors
from kafkalite.coordinator import types as t
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey

from test_group_handlers import (  # noqa: F401 - the fixtures, found by name
    GROUP_DENIED, TOPIC_DENIED, UNKNOWN_PARTITION, _codes, _commit_request, _commit_values,
    authorizer, broker, kafka, native, standin,
)


# --- OffsetCommit ---------------------------------------------------------------------------------

def test_offset_commit_serves_per_partition(broker, standin):
    """The allowed known partition is committed; the refused topic answers
    TOPIC_AUTHORIZATION_FAILED, the unknown one UNKNOWN_TOPIC_OR_PARTITION, unstored."""
    standin.answers["commit_offsets"] = {("t", 0): 0}
    expected = {("t", 0): 0, ("secret", 0): TOPIC_DENIED, ("gone", 0): UNKNOWN_PARTITION}
    assert _codes(kafka(broker, ApiKey.OFFSET_COMMIT, 8, _commit_values()).topics) == expected
    assert _codes(native(broker, _commit_request()).topics, "topic", "partition") == expected
    for name, args in standin.calls:
        assert args == ("g", 2, "m", None, -1, {("t", 0): t.OffsetAndMetadata(5, 1, "md")})


def test_offset_commit_of_a_refused_group_refuses_every_partition(broker, standin):
    answer = kafka(broker, ApiKey.OFFSET_COMMIT, 8, _commit_values("secret-group"))
    assert set(_codes(answer.topics).values()) == {GROUP_DENIED}
    response = native(broker, _commit_request("secret-group"))
    assert _codes(response.topics, "topic", "partition") == dict.fromkeys(
        [("t", 0), ("secret", 0), ("gone", 0)], GROUP_DENIED)
    assert standin.calls == []


def test_offset_commit_v2_passes_its_retention_time(broker, standin):
    standin.answers["commit_offsets"] = {("t", 0): 0}
    kafka(broker, ApiKey.OFFSET_COMMIT, 2, dict(_commit_values(), retention_time=3_600_000))
    assert standin.calls[0][1][4] == 3_600_000


def test_a_failing_coordinator_answers_the_requests_error_response(broker, standin):
    standin.answers["commit_offsets"] = RuntimeError("the store is gone")
    answer = kafka(broker, ApiKey.OFFSET_COMMIT, 8, _commit_values())
    unknown = errors.UnknownServerError.code
    assert _codes(answer.topics) == dict.fromkeys([("t", 0), ("secret", 0), ("gone", 0)],
                                                  unknown)
    response = native(broker, _commit_request())
    assert set(_codes(response.topics, "topic", "partition").values()) == {unknown}


# --- OffsetFetch ----------------------------------------------------------------------------------

def _fetch_answer(standin):
    standin.answers["fetch_offsets"] = (0, {("t", 0): t.FetchedOffset(5, 1, "md", 0),
                                            ("t", 1): t.FetchedOffset(-1, -1, "", 0),
                                            ("secret", 0): t.FetchedOffset(9, 1, "", 0)})


def test_offset_fetch_of_named_partitions(broker, standin):
    _fetch_answer(standin)
    answer = kafka(broker, ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "require_stable": False,
                                                     "topics": [
        {"name": "t", "partition_indexes": [0, 1]}, {"name": "secret",
                                                     "partition_indexes": [0]}]})
    assert standin.calls == [("fetch_offsets", ("g", [("t", 0), ("t", 1)], False))]
    assert {(x.name, p.partition_index): (p.committed_offset, p.error_code)
            for x in answer.topics for p in x.partitions} == {
        ("t", 0): (5, 0), ("t", 1): (-1, 0), ("secret", 0): (-1, TOPIC_DENIED)}
    response = native(broker, m.OffsetFetchRequest(group_id="g", topics=[
        m.OffsetFetchTopic("t", [0, 1]), m.OffsetFetchTopic("secret", [0])]))
    assert response.topics == [
        m.OffsetFetchTopicResponse("t", [m.OffsetFetchPartitionResponse(0, 5, 1, "md", 0),
                                         m.OffsetFetchPartitionResponse(1, -1, -1, "", 0)]),
        m.OffsetFetchTopicResponse("secret", [
            m.OffsetFetchPartitionResponse(0, -1, -1, "", TOPIC_DENIED)])]


def test_offset_fetch_of_every_partition_leaves_out_refused_topics(broker, standin):
    _fetch_answer(standin)
    answer = kafka(broker, ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": None})
    assert standin.calls == [("fetch_offsets", ("g", None, False))]
    assert [(x.name, [p.partition_index for p in x.partitions]) for x in answer.topics] == [
        ("t", [0, 1])]
    response = native(broker, m.OffsetFetchRequest(group_id="g"))
    assert [x.topic for x in response.topics] == ["t"]


def test_offset_fetch_of_a_refused_group(broker, standin):
    values = {"group_id": "secret-group", "topics": [{"name": "t", "partition_indexes": [0]}]}
    v7 = kafka(broker, ApiKey.OFFSET_FETCH, 7, values)
    assert (v7.error_code, v7.topics) == (GROUP_DENIED, ())     # Kafka: no partitions from v2
    v1 = kafka(broker, ApiKey.OFFSET_FETCH, 1, values)
    assert [p.error_code for x in v1.topics for p in x.partitions] == [GROUP_DENIED]
    response = native(broker, m.OffsetFetchRequest(group_id="secret-group", topics=[
        m.OffsetFetchTopic("t", [0])]))
    assert response.error_code == GROUP_DENIED
    assert standin.calls == []


def test_a_coordinator_error_of_offset_fetch(broker, standin):
    standin.answers["fetch_offsets"] = (errors.NotCoordinatorError.code, {})
    answer = kafka(broker, ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": [
        {"name": "t", "partition_indexes": [0]}]})
    assert (answer.error_code, answer.topics) == (16, ())
    response = native(broker, m.OffsetFetchRequest(group_id="g", topics=[
        m.OffsetFetchTopic("t", [0])]))
    assert response.error_code == 16 and response.topics[0].partitions[0].error_code == 16


# --- OffsetDelete ---------------------------------------------------------------------------------

def test_offset_delete(broker, standin):
    standin.answers["delete_offsets"] = (0, {("t", 0): 0,
                                             ("t", 1): errors.GroupSubscribedToTopicError.code})
    answer = kafka(broker, ApiKey.OFFSET_DELETE, 0, {"group_id": "g", "topics": [
        {"name": name, "partitions": [{"partition_index": 0}, {"partition_index": 1}]}
        for name in ("t", "secret")]})
    assert standin.calls == [("delete_offsets", ("g", [("t", 0), ("t", 1)]))]
    assert _codes(answer.topics) == {("t", 0): 0, ("t", 1): 86, ("secret", 0): TOPIC_DENIED,
                                     ("secret", 1): TOPIC_DENIED}
    response = native(broker, m.OffsetDeleteRequest(group_id="g", topics=[
        m.OffsetDeleteTopic("gone", [0])]))
    assert standin.calls[-1] == ("delete_offsets", ("g", []))
    assert _codes(response.topics, "topic", "partition") == {("gone", 0): UNKNOWN_PARTITION}


def test_offset_delete_of_a_refused_or_unknown_group_answers_the_group_error(broker, standin):
    values = {"group_id": "secret-group", "topics": [
        {"name": "t", "partitions": [{"partition_index": 0}]}]}
    answer = kafka(broker, ApiKey.OFFSET_DELETE, 0, values)
    assert (answer.error_code, answer.topics) == (GROUP_DENIED, ())
    assert standin.calls == []
    standin.answers["delete_offsets"] = (errors.GroupIdNotFoundError.code, {})
    response = native(broker, m.OffsetDeleteRequest(group_id="g", topics=[
        m.OffsetDeleteTopic("t", [0])]))
    assert (response.error_code, response.topics) == (69, [])


def test_offset_fetch_v7_passes_require_stable_and_answers_unstable_per_partition(broker,
                                                                                 standin):
    standin.answers["fetch_offsets"] = (0, {("t", 0): t.FetchedOffset(
        -1, -1, "", errors.UnstableOffsetCommitError.code)})
    answer = kafka(broker, ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "require_stable": True,
                                                     "topics": [{"name": "t",
                                                                 "partition_indexes": [0]}]})
    assert standin.calls == [("fetch_offsets", ("g", [("t", 0)], True))]
    assert answer.error_code == 0
    assert [(p.committed_offset, p.error_code) for p in answer.topics[0].partitions] == [
        (-1, errors.UnstableOffsetCommitError.code)]
    kafka(broker, ApiKey.OFFSET_FETCH, 6, {"group_id": "g", "topics": [
        {"name": "t", "partition_indexes": [0]}]})
    assert standin.calls[-1] == ("fetch_offsets", ("g", [("t", 0)], False))   # v6: no field
