"""The conformance harness without clusters: normalisation, verdicts and the report.

A verdict that went wrong here would let a difference through silently (or fail on noise), so
each rule of ``runner.judge`` is pinned: same, different, allowlisted, stale, intermittent, and
a scenario that could not run.
"""

from __future__ import annotations

from kafkalite.testing.conformance import report, runner
from kafkalite.testing.conformance.normalise import differences, normalise
from kafkalite.testing.conformance.scenario import Scenario, unique_prefix


def _scenario(name: str = "x") -> Scenario:
    return Scenario(name, "topics", ("Metadata",), lambda ctx: None)


def test_normalise_replaces_chance_and_identity():
    prefix = "cf-x-1234abcd"
    answer = {"port": 40123, "host": "127.0.0.1", "cluster_id": "abc", "throttle_time": 7,
              "member_id": "rdkafka-1", "leader": "rdkafka-2", "leader_id": 2,
              "topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "log_append_time": 1_764_000_000_000,
              "timestamp": 1000, "member_ids": [], "error_message": None,
              f"{prefix}-t": f"broker 127.0.0.1:9092 has {prefix}-t, id "
                             "123e4567-e89b-12d3-a456-426614174000"}
    assert normalise(answer, prefix) == {
        "port": "<port>", "host": "<host>", "cluster_id": "<cluster-id>",
        "throttle_time": "<throttle>", "member_id": "<member-id>", "leader": "<member-id>",
        "leader_id": 2, "topic_id": "<topic-id>", "log_append_time": "<wallclock>",
        "timestamp": 1000, "member_ids": [], "error_message": None,
        "{p}-t": "broker <address> has {p}-t, id <uuid>"}


def test_normalise_masks_wall_clock_milliseconds_inside_messages():
    # an INVALID_TIMESTAMP record error names a window from the broker's own clock
    message = ("Timestamp 1000 of message with offset 0 is out of range. The timestamp should "
               "be within [1795680891792, 1795680893792]")
    assert normalise({"message": message}) == {"message": message.replace(
        "1795680891792", "<wallclock>").replace("1795680893792", "<wallclock>")}
    assert normalise({"message": "offset 123456789012 of 4"}) == \
        {"message": "offset 123456789012 of 4"}     # 12 digits: not a wall-clock time


def test_normalise_keeps_unset_values_and_list_items():
    assert normalise({"member_id": "", "leader": -1, "leader_epoch": 0}) == \
        {"member_id": "", "leader": -1, "leader_epoch": 0}
    # a scenario's own key does not turn the items of its list into ids
    assert normalise({"leader": [["NONE", 0, 3]]}) == {"leader": [["NONE", 0, 3]]}


def test_differences_name_paths():
    assert differences({"a": [1, 2], "b": 1}, {"a": [1, 3], "c": 1}) == [
        "$.a[1]: kafka 2 / kafkalite 3", "$.b: missing in kafkalite", "$.c: missing in kafka"]


def test_verdicts(monkeypatch):
    monkeypatch.setattr(runner, "ALLOWLIST", {"listed": "issue 24: x", "timing": "issue 24: y"})
    monkeypatch.setattr(runner, "INTERMITTENT", frozenset({"timing"}))
    assert runner.judge(_scenario(), 1, 1).verdict == "same"
    assert runner.judge(_scenario(), 1, 2).verdict == "different"
    assert runner.judge(_scenario("listed"), 1, 2).verdict == "allowlisted"
    assert runner.judge(_scenario("listed"), 1, 1).verdict == "stale"
    assert runner.judge(_scenario("timing"), 1, 1).verdict == "allowlisted"
    failed = runner.judge(_scenario(), runner._Failed("boom"), runner._Failed("boom"))
    assert failed.verdict == "error" and failed.failed
    assert "boom" in failed.explain()


def test_missing_cluster_pair_is_an_error():
    scenario = Scenario("acl", "security", ("CreateAcls",), lambda ctx: None,
                        cluster="authorizer")
    row = runner.run_scenario(scenario, {"kafka": "a:1", "kafkalite": "b:2"})
    assert row.verdict == "error"
    assert "authorizer" in row.explain()


def test_report_counts_and_escapes():
    rows = [runner.judge(_scenario("a"), {"x": "1|2"}, {"x": "1|2"}),
            runner.judge(_scenario("b"), 1, 2)]
    text = report.markdown(rows, 3.0)
    assert "| same | 1 |" in text and "| different | 1 |" in text
    assert "1\\|2" in text


def test_unique_prefix_is_a_legal_topic_name_start():
    prefix = unique_prefix("Some Scenario/Name!")
    assert prefix.startswith("cf-some-scenario-name-")
    assert len(prefix) < 60 and prefix != unique_prefix("Some Scenario/Name!")
