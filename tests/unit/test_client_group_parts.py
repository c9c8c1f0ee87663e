"""The group pieces split out of BrokerCoordinator and AdminClient, on an injected clock: the
coordinator link's retries (against the fake broker, time passing only through the fake sleep),
and the offset-reset planning the AdminClient does for both kinds of groups (pure)."""

from __future__ import annotations

import pytest
from test_client_fakebroker import FakeCluster

from kafkalite import errors
from kafkalite.client import admin_groups as ag
from kafkalite.client.broker_coordinator import BrokerCoordinator
from kafkalite.client.structs import OffsetAndMetadata, TopicPartition
from kafkalite.protocol.api_keys import ApiKey


class FakeClock:
    def __init__(self):
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def cluster():
    c = FakeCluster(1)
    yield c
    c.close()


def test_commit_retries_a_missing_coordinator_until_the_api_timeout_on_the_fake_clock(cluster):
    clock = FakeClock()
    cluster.coordinator_errors = [errors.CoordinatorNotAvailableError.code] * 100
    member = BrokerCoordinator("g", bootstrap_servers=cluster.bootstrap, retry_backoff_ms=200,
                               default_api_timeout_ms=1000, clock=clock, sleep=clock.sleep)
    try:
        with pytest.raises(errors.KafkaTimeoutError, match="committing offsets.*1000 ms"):
            member.commit({TopicPartition("t", 0): OffsetAndMetadata(5, "")})
        assert clock.slept == [0.2] * 5 and clock.now == pytest.approx(1001.0)
        lookups = sum(1 for _n, key, _r in cluster.request_log
                      if key == ApiKey.FIND_COORDINATOR)
        assert lookups == 6                      # one per attempt, none after the deadline
        cluster.coordinator_errors = [errors.CoordinatorLoadInProgressError.code]
        member.commit({TopicPartition("t", 0): OffsetAndMetadata(7, "")})
        assert member.committed([("t", 0)]) == {TopicPartition("t", 0): OffsetAndMetadata(7, "")}
        assert clock.slept[-1] == 0.2 and len(clock.slept) == 6
    finally:
        member.close()


def test_reset_targets_every_committed_topic_or_named_partitions():
    committed = {("a", 0): 5, ("b", 1): 3}
    known = {"a": [0, 1], "b": [0, 1, 2]}
    assert ag.reset_targets("g", None, None, committed, lambda ts: {t: known[t] for t in ts}) \
        == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]
    assert ag.reset_targets("g", "b", [2], committed, lambda ts: known) == [("b", 2)]
    with pytest.raises(errors.UnknownTopicOrPartitionError, match="no partition 7"):
        ag.reset_targets("g", "b", [7], committed, lambda ts: known)
    with pytest.raises(errors.InvalidRequestError, match="one topic"):
        ag.reset_targets("g", ["a", "b"], [0], committed, lambda ts: known)
    with pytest.raises(errors.GroupIdNotFoundError, match="name the topic"):
        ag.reset_targets("g", None, None, {}, lambda ts: known)


def test_plan_offsets_reset_clamps_into_the_log_and_shifts_from_the_committed_offset():
    a0, a1 = TopicPartition("a", 0), TopicPartition("a", 1)
    earliest, latest = {a0: 10, a1: 0}, {a0: 20, a1: 4}
    committed = {("a", 0): 12}
    plan = ag.plan_offsets_reset([a0, a1], earliest, latest, committed, to_earliest=False,
                                 to_latest=False, to_offset=15, shift_by=None)
    assert plan == {a0: 15, a1: 4}
    assert ag.plan_offsets_reset([a0], earliest, latest, committed, to_earliest=False,
                                 to_latest=False, to_offset=None, shift_by=-5) == {a0: 10}
    assert ag.plan_offsets_reset([a0, a1], earliest, latest, committed, to_earliest=False,
                                 to_latest=True, to_offset=None, shift_by=None) == \
        {a0: 20, a1: 4}
    with pytest.raises(errors.InvalidRequestError, match="no committed offset"):
        ag.plan_offsets_reset([a1], earliest, latest, committed, to_earliest=False,
                              to_latest=False, to_offset=None, shift_by=1)


def test_importing_the_clients_leaves_the_group_protocol_schemas_unloaded():
    # kio's schemas import hypothesis (seconds under load): group members that start many
    # processes at once (tests/system/test_consumer_groups.py) waited on it
    import subprocess
    import sys

    from kafkalite.client import consumer_protocol

    assert ag._CONSUMER_PROTOCOL_TYPE == consumer_protocol.PROTOCOL_TYPE
    code = ("import sys; from kafkalite import AdminClient, Consumer, Producer; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'kio', 'hypothesis'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
