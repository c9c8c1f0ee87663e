"""The protocol fuzz's judge (fuzz_runner.judge) on hand-made exchanges: a fuzz whose judge let
everything through would assert nothing. No sockets, no brokers (kio reads Kafka frames in a
child process, as in the fuzz)."""

import collections
import random
import struct

import msgpack

from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import encode_request_payload, encode_response_payload
from kafkalite.protocol.kafka import codec

from fuzz_frames import complete_frames, frame, sniff
from fuzz_kio import classify, expect
from fuzz_runner import judge
from native_fuzz_cases import KNOWN_BUGS, context_ints, left_out, make_native_case
from native_fuzz_seeds import ControllerView, Seed, controller_seeds, probe_payloads

VIEW = ControllerView(controller_id=2, epoch=5, broker_epochs={1: 4096, 2: 4100, 3: 4200})


def native(request, cid=7, api_version=0):
    return encode_request_payload(request.API_KEY, api_version, cid, "oracle",
                                  request.to_body(0))


def answer(cid, response):
    return encode_response_payload(cid, response.to_body(0))


METADATA = native(m.MetadataRequest(topics=["t"]), cid=7)
METADATA_ANSWER = answer(7, m.MetadataResponse(controller_id=2))


def test_native_answers_in_order_and_decodable_pass():
    second = native(m.ApiVersionsRequest(), cid=8)
    data = frame(METADATA) + frame(second)
    assert judge(data, [METADATA_ANSWER], 0) is None          # the rest may stay unanswered
    assert judge(data, [METADATA_ANSWER, answer(8, m.ApiVersionsResponse())], 0) is None


def test_native_wrong_correlation_id_or_order_is_a_problem():
    second = native(m.ApiVersionsRequest(), cid=8)
    data = frame(METADATA) + frame(second)
    assert "correlation id 8" in judge(data, [answer(8, m.ApiVersionsResponse())], 0)


def test_native_undecodable_or_foreign_answer_is_a_problem():
    assert "does not decode" in judge(frame(METADATA), [b"\xc1\xc1"], 0)
    # a Fetch response body where a Metadata response belongs
    wrong = encode_response_payload(7, {"throttle_time_ms": "soon"})
    assert "does not decode" in judge(frame(METADATA), [wrong], 0)


def test_native_unreadable_envelope_must_not_be_answered():
    bad = b"\x95\x03\x00"                 # an array of 5 with two elements
    assert "answers to 0 answerable requests" in judge(frame(bad), [METADATA_ANSWER], 0)


def test_native_refused_body_must_get_a_request_error():
    refused = encode_request_payload(3, 0, 9, "oracle", {"topics": "not a list"})
    error = encode_response_payload(9, m.RequestErrorResponse(error_code=42).to_body(0))
    assert judge(frame(refused), [error], 0) is None
    assert "refused" in judge(frame(refused), [answer(9, m.MetadataResponse())], 0)


def test_native_acks_0_produce_is_never_answered():
    produce = native(m.ProduceRequest(acks=0, topic_data={"t": {0: b"x"}}), cid=3)
    data = frame(produce) + frame(METADATA)
    assert judge(data, [METADATA_ANSWER], 0) is None
    produced = answer(3, m.ProduceResponse())
    assert judge(data, [produced, METADATA_ANSWER], 0) is not None


API_VERSIONS_V3 = codec.encode_request(18, 3, 5, "oracle", {"client_software_name": "o",
                                                          "client_software_version": "1"})
API_VERSIONS_V3_ANSWER = codec.encode_response(18, 3, 5, {"error_code": 0, "api_keys": [],
                                                          "throttle_time": 0})
RANGES = {18: (0, 3), 3: (0, 11), 0: (3, 9)}


def kafka_judge(data, frames, result="answered"):
    """judge() with the expectation kio's child process gives the frames of ``data``."""
    return judge(data, frames, 0, result, expect(classify(complete_frames(data), RANGES)))


def test_kafka_answers_are_checked_too():
    data = frame(API_VERSIONS_V3)
    assert kafka_judge(data, [API_VERSIONS_V3_ANSWER]) is None
    wrong_id = struct.pack(">i", 6) + API_VERSIONS_V3_ANSWER[4:]
    assert "correlation id" in kafka_judge(data, [wrong_id])
    assert "does not decode" in kafka_judge(data, [API_VERSIONS_V3_ANSWER[:6]])


def test_kio_decides_what_kafka_answers_and_where_it_closes():
    metadata = codec.encode_request(3, 11, 3, "oracle", {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    # a compact array claiming 2**32-2 topics: kio's reader aborts its process (Kafka's parser
    # refuses it), the child is started again past it
    header = 2 + 2 + 4 + 2 + len("oracle") + 1        # header v2: ... client id, no tags
    huge = metadata[:header] + b"\xff\xff\xff\xff\x0f" + metadata[header + 1:]
    unknown_version = metadata[:2] + struct.pack(">h", 12) + metadata[4:]
    # ApiVersions v3 whose client_software_name is null: kio reads it, Kafka refuses it
    null_name = API_VERSIONS_V3[:header] + b"\x00" + API_VERSIONS_V3[header + 2:]
    verdicts = classify([metadata, huge, unknown_version, null_name, metadata[:12]], RANGES)
    assert [v.kind for v in verdicts] == ["answer", "close", "close", "close", "close"], verdicts
    assert "killed" in verdicts[1].why
    old_api_versions = API_VERSIONS_V3[:2] + struct.pack(">h", 9) + API_VERSIONS_V3[4:]
    assert classify([old_api_versions], RANGES)[0][:3] == ("answer", 18, 0)   # answered v0
    heavy = codec.encode_request(19, 7, 4, "oracle", {"topics": [
        {"name": "t", "num_partitions": 1 << 30, "replication_factor": 1, "assignments": [],
         "configs": []}], "timeout": 1000, "validate_only": True})
    assert classify([heavy], {19: (0, 7)})[0].heavy


def test_a_closed_connection_is_a_problem_unless_the_frame_was_malformed():
    data = frame(API_VERSIONS_V3)
    assert "closed after 0 of the 1 answers" in kafka_judge(data, [], "closed")
    assert kafka_judge(data, [], "silent") is None               # slow, not judged
    unserved = codec.encode_request(3, 11, 8, "oracle", {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    assert kafka_judge(frame(unserved), [], "closed") is not None
    assert kafka_judge(frame(unserved[:10]), [], "closed") is None          # kio cannot read it
    # answered first, then a frame Kafka closes on
    assert kafka_judge(frame(API_VERSIONS_V3) + frame(unserved[:10]), [API_VERSIONS_V3_ANSWER],
                       "closed") is None
    assert "closed after 0" in kafka_judge(frame(API_VERSIONS_V3) + frame(unserved[:10]), [],
                                           "closed")
    # a length prefix no broker reads: framing-level, a close may come at any point
    assert kafka_judge(data + struct.pack(">i", -1), [], "closed") is None
    # native: a readable envelope is owed an answer, an unreadable one closes
    assert "closed after 0 of the 1" in judge(frame(METADATA), [], 0, "closed")
    assert judge(frame(b"\x95\x03\x00"), [], 0, "closed") is None
    ahead = frame(METADATA) + frame(b"\x95\x03\x00")      # the first is answered, then close
    assert judge(ahead, [METADATA_ANSWER], 0, "closed") is None
    assert "closed after 0 of the 1" in judge(ahead, [], 0, "closed")


def test_answers_to_no_protocol_or_incomplete_frames_are_problems():
    assert "neither Kafka nor native" in judge(frame(b"\x42hello"), [METADATA_ANSWER], 0)
    assert "missing" in judge(struct.pack(">i", 1000) + METADATA, [METADATA_ANSWER], 0)
    assert "incomplete" in judge(frame(METADATA), [], 3)


def test_frames_and_sniffing_follow_the_broker():
    assert complete_frames(frame(b"ab") + struct.pack(">i", -1) + frame(b"cd")) == [b"ab"]
    assert complete_frames(struct.pack(">i", 104_857_601) + b"x") == []
    assert [sniff(b"\x00\x03"), sniff(b"\x95"), sniff(b"\xdc"), sniff(b"\x80"), sniff(b"")] == [
        "kafka", "native", "native", None, None]


def test_left_out_only_the_exact_identity_and_absurd_partition_counts(monkeypatch):
    def leader_and_isr(controller_id, epoch, broker_epoch):
        return native(m.LeaderAndIsrRequest(controller_id=controller_id, controller_epoch=epoch,
                                            broker_epoch=broker_epoch))
    assert left_out([leader_and_isr(2, 5, 4096)], 1, VIEW) == "impersonation"
    for near_miss in ((2, 5, 4100), (2, 6, 4096), (3, 5, 4096), (2, 5, -1)):
        assert left_out([leader_and_isr(*near_miss)], 1, VIEW) is None, near_miss
    shutdown = native(m.ControlledShutdownRequest(broker_id=3, broker_epoch=4200))
    assert left_out([shutdown], 2, VIEW) == "impersonation"
    assert left_out([native(m.ControlledShutdownRequest(broker_id=3, broker_epoch=-1))], 2,
                    VIEW) is None
    monkeypatch.setitem(KNOWN_BUGS, "shutdown-bug",
                        lambda key, request, broker_id, view: key == 7 and broker_id == 2)
    assert left_out([native(m.ControlledShutdownRequest(broker_id=3, broker_epoch=-1))], 2,
                    VIEW, frozenset({"shutdown-bug"})) == "known bug shutdown-bug"
    huge = native(m.CreatePartitionsRequest(topics=[m.CreatePartitionsTopic("t", 10**6, None)]))
    assert left_out([huge], 1, VIEW) == "resource-heavy"


def test_controller_seeds_never_carry_the_identity_zookeeper_backs():
    seeds = controller_seeds(VIEW, {"live": 2})
    assert seeds and all(left_out([s.payload], s.broker_id, VIEW) is None for s in seeds)


def test_native_cases_are_deterministic_and_mostly_stay_native():
    seeds = [Seed("metadata", METADATA, 1)] + controller_seeds(VIEW, {"live": 1})

    def make(seed):
        rnd = random.Random(seed)
        return [make_native_case(rnd, seeds, context_ints(VIEW), probe_payloads()).data
                for _ in range(20)]
    assert make(5) == make(5) != make(6)
    rnd = random.Random(1)
    cases = [make_native_case(rnd, seeds, context_ints(VIEW), probe_payloads())
             for _ in range(500)]
    native_share = sum(1 for c in cases if complete_frames(c.data)
                       and sniff(complete_frames(c.data)[0]) == "native") / len(cases)
    assert native_share > 0.7
    assert {c.kind.split("-")[0] for c in cases} >= {"msgpack", "flip", "length", "pipelined",
                                                     "valid"}
    assert all(isinstance(msgpack.unpackb(s.payload), list) for s in seeds)


def test_no_deleting_request_is_aimed_at_a_live_topic():
    delete = native(m.DeleteRecordsRequest(topics=[m.DeleteRecordsTopic(
        "live", [m.DeleteRecordsPartition(0, 1)])]))
    assert left_out([delete], 1, VIEW, protected=frozenset({"live"})) == "aimed at a live topic"
    assert left_out([delete], 1, VIEW, protected=frozenset({"other"})) is None
    # client seeds are never mutated with parts of controller seeds, which name the live topics
    client = Seed("delete records", native(m.DeleteRecordsRequest(topics=[
        m.DeleteRecordsTopic("fz", [m.DeleteRecordsPartition(0, 1)])])), 1)
    seeds = [client] + controller_seeds(VIEW, {"live": 1})
    rnd = random.Random(3)
    for _ in range(3000):
        case = make_native_case(rnd, seeds, context_ints(VIEW), probe_payloads())
        if case.seed == client.name:
            assert b"live" not in case.data, case


def _recorded_controller_seeds():
    from controller_frames import recorded_seeds

    states = [m.LeaderAndIsrPartitionState("fz-ctl", 0, 5, 1, 0, [1, 9], 0, [1, 9], True)]
    requests = [
        m.LeaderAndIsrRequest(controller_id=2, controller_epoch=5, broker_epoch=777,
                              partition_states=states),
        m.UpdateMetadataRequest(controller_id=2, controller_epoch=5, broker_epoch=777,
                                partition_states=[m.UpdateMetadataPartitionState(
                                    "fz-ctl", 0, 5, 1, 0, [1, 9], 0, [1, 9], [])]),
        m.StopReplicaRequest(controller_id=2, controller_epoch=5, broker_epoch=777,
                             delete_partitions=True, partitions=[m.TopicPartition("fz-ctl", 0)])]
    return recorded_seeds([native(r, cid=7) for r in requests])


LIVE_VIEW = ControllerView(2, 5, {1: 4096, 2: 4100, 3: 4200},
                           {("live", 0): (0, [1, 2, 3]), ("live", 1): (2, [1, 2, 3])})


def test_the_controllers_own_frames_are_mutated_in_their_fields():
    from kafkalite.protocol.envelope import decode_request_envelope, parse_request_body

    seeds = _recorded_controller_seeds()
    rnd = random.Random(4)
    claims, sent_exact = collections.Counter(), []
    for _ in range(600):
        case = make_native_case(rnd, seeds, context_ints(LIVE_VIEW), probe_payloads(), LIVE_VIEW)
        if "fields-" not in case.kind:
            continue
        sent = complete_frames(case.data)
        request = parse_request_body(*decode_request_envelope(sent[1 if len(sent) == 3 else 0]))
        claims[case.seed.rsplit("(", 1)[1][:-1]] += 1
        reason = left_out(sent, case.broker_id, LIVE_VIEW)
        if case.seed.endswith("(exact)"):
            # only a LeaderAndIsr, every state one of the target's partitions, none newer than
            # ZooKeeper's: Kafka ignores it, so it is sent, not left out
            assert isinstance(request, m.LeaderAndIsrRequest) and reason is None, request
            assert (request.controller_id, request.controller_epoch, request.broker_epoch) == (
                2, 5, LIVE_VIEW.broker_epochs[case.broker_id])
            sent_exact.append(request)
        else:
            assert reason is None, (case.seed, request)
    assert set(claims) >= {"exact", "deposed epoch", "next epoch", "not the controller",
                           "stale broker epoch", "as recorded"}, claims
    states = [s for r in sent_exact for s in r.partition_states]
    assert all(s.leader_epoch <= LIVE_VIEW.partitions[(s.topic, s.partition)][0]
               for s in states)
    assert any(s.isr == [33] for s in states)          # the incident's ISR


def test_an_exact_leader_and_isr_with_a_newer_epoch_is_left_out():
    def lai(epoch, topic="live"):
        return native(m.LeaderAndIsrRequest(
            controller_id=2, controller_epoch=5, broker_epoch=4096, partition_states=[
                m.LeaderAndIsrPartitionState(topic, 1, 5, 33, epoch, [33], 0, [1, 33])]))
    assert left_out([lai(2)], 1, LIVE_VIEW) is None            # ZooKeeper's epoch: ignored
    assert left_out([lai(3)], 1, LIVE_VIEW) == "impersonation"    # newer: the controller's right
    assert left_out([lai(0, "other")], 1, LIVE_VIEW) == "impersonation"   # not hosted


def test_a_partition_advertised_without_its_leader_hosting_it_is_a_problem():
    from types import SimpleNamespace as NS

    from fuzz_invariants import unhosted

    def code(n):
        return NS(value=n)
    metadata = NS(topics=[NS(name="t", error_code=code(0), partitions=[
        NS(partition_index=0, leader_id=1, error_code=code(0)),
        NS(partition_index=64, leader_id=1, error_code=code(0)),
        NS(partition_index=1, leader_id=-1, error_code=code(5))])])
    asked = []

    def call(port, api_key, version, values):
        asked.append((port, api_key, values))
        return NS(topics=[NS(name="t", partitions=[
            NS(partition_index=0, error_code=code(0)),
            NS(partition_index=64, error_code=code(6))])])
    problems = unhosted(metadata, {1: 9001, 2: 9002}, 2, call)
    assert problems == ["broker 2 advertises t-64 with leader 1, which answers "
                        "NOT_LEADER_OR_FOLLOWER"]
    assert [(port, key) for port, key, _ in asked] == [(9001, 2)]


def _token_answer(error_code: int) -> bytes:
    from kafkalite.protocol.kafka.convert.delegation_tokens import CREATE_DELEGATION_TOKEN

    values = CREATE_DELEGATION_TOKEN.response(
        m.CreateDelegationTokenResponse(error_code=error_code), 2)
    return codec.encode_response(38, 2, 11, values)


def test_kafkas_own_minus_one_timestamps_in_a_token_error_answer_pass():
    """Kafka 2.8 answers a refused CreateDelegationToken with timestamps of -1, which kio will
    not read (the 1,000,000-case run of 2026-11-26 reported it); only in an error answer."""
    request = codec.encode_request(38, 2, 11, "oracle", {"renewers": [], "max_lifetime": -1})
    data = frame(request)
    ranges = {**RANGES, 38: (1, 2)}
    expected = expect(classify(complete_frames(data), ranges))
    assert judge(data, [_token_answer(65)], 0, "answered", expected) is None   # TOKEN_DISABLED
    problem = judge(data, [_token_answer(0)], 0, "answered", expected)
    assert problem is not None and "negative timestamp" in problem


def test_frames_after_an_acks_0_produce_are_answered_unless_it_closed():
    """Kafka answers nothing to an acks=0 Produce and closes the connection only when it fails;
    otherwise it goes on. The 1,000,000-case run of 2026-11-26 (seed 1137478552) counted the
    Metadata answered behind a successful acks=0 Produce as a problem."""
    produce = codec.encode_request(0, 9, 6, "oracle", {
        "transactional_id": None, "acks": 0, "timeout": 5000, "topic_data": []})
    metadata = codec.encode_request(3, 11, 3, "oracle", {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    metadata_answer = codec.encode_response(3, 11, 3, {
        "throttle_time": 0, "brokers": [], "cluster_id": None, "controller_id": 1,
        "topics": [], "cluster_authorized_operations": -2147483648})
    data = frame(API_VERSIONS_V3) + frame(produce) + frame(metadata)
    assert kafka_judge(data, [API_VERSIONS_V3_ANSWER, metadata_answer]) is None   # it went on
    assert kafka_judge(data, [API_VERSIONS_V3_ANSWER], "closed") is None          # it failed
    assert "closed after 0 of the 1" in kafka_judge(data, [], "closed")
    answered_produce = codec.encode_response(0, 9, 6, {"responses": [], "throttle_time": 0})
    assert "correlation id 6" in kafka_judge(data, [API_VERSIONS_V3_ANSWER, answered_produce])
