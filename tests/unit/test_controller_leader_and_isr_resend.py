"""A LeaderAndIsr the leader could not apply is sent again (issue 24, bug 2).

After CreatePartitions, the UpdateMetadata queued behind a new partition's LeaderAndIsr advertises
the partition whatever the LeaderAndIsr's answer was. If the leader failed it (a request-level
error frame, e.g. its topic config unreadable while it restarted, or a per-partition error), the
partition stayed advertised with a leader that answered "does not host" forever. The controller
now re-sends the state after a backoff until the broker applies it, and does not where another
path re-sends it (a stale broker epoch: the bounce does) or where the broker holds it already.
Against the in-memory ZooKeeper and the recording channel manager; time is a task.Clock.
"""

import logging
from types import SimpleNamespace

import pytest

from kafkalite import errors

from controller_fakes import ControllerHarness

LEADER_AND_ISR_RESEND_MAX_S = 30.0     # broker_requests' cap: every resend is due within it


def grow_topic_held(h, controller):
    """Topic t of 1 partition on broker 1 grows to 3; answers held. The new LeaderAndIsr's
    pending entry."""
    h.admin.create_topic("t", {0: [1]})
    h.settle()
    channels = controller.channels
    channels.clear()
    channels.hold = True
    h.admin.add_partitions("t", {1: [1], 2: [1]})
    h.settle()
    lais = [e for e in channels.pending if type(e[1]).__name__ == "LeaderAndIsrRequest"]
    assert [sorted((s.topic, s.partition) for s in e[1].partition_states) for e in lais] == [
        [("t", 1), ("t", 2)]]
    # the UpdateMetadata advertising them is queued behind it
    assert any(type(e[1]).__name__ == "UpdateMetadataRequest" for e in channels.pending)
    return lais[0]


def resent(controller, broker_id=1):
    return [sorted((s.topic, s.partition) for s in r.partition_states)
            for r in controller.channels.requests("LeaderAndIsrRequest", broker_id)]


def answer_pending(channels):
    for _b, _r, d in list(channels.pending):
        if not d.called:
            d.callback(SimpleNamespace(error_code=0, partition_errors=[]))
    channels.pending.clear()


def test_a_failed_leader_and_isr_is_sent_again_until_applied(caplog):
    caplog.set_level(logging.WARNING, logger="kafkalite.controller.broker_requests")
    h = ControllerHarness(brokers=(1,))
    controller, _ = h.controller(1)
    _b, request, d = grow_topic_held(h, controller)
    channels = controller.channels
    channels.clear()
    d.errback(errors.UnknownServerError("cannot read the config of topic t"))
    assert resent(controller) == []
    h.clock.advance(LEADER_AND_ISR_RESEND_MAX_S)
    assert resent(controller) == [[("t", 1), ("t", 2)]]
    assert "not applied" in caplog.text          # and it is reported
    again = channels.requests("LeaderAndIsrRequest", 1)[0]
    assert [s.leader for s in again.partition_states] == [1, 1]
    # fails again (one partition): only that one goes once more
    _b2, _r2, d2 = next(e for e in channels.pending if e[1] is again)
    channels.clear()
    d2.callback(SimpleNamespace(error_code=0, partition_errors=[
        SimpleNamespace(topic="t", partition=1, error_code=0),
        SimpleNamespace(topic="t", partition=2, error_code=errors.UnknownServerError.code)]))
    h.clock.advance(LEADER_AND_ISR_RESEND_MAX_S)
    assert resent(controller) == [[("t", 2)]]
    answer_pending(channels)
    channels.clear()
    h.clock.advance(LEADER_AND_ISR_RESEND_MAX_S * 4)
    assert resent(controller) == []            # applied: nothing more


@pytest.mark.parametrize("code", [errors.StaleControllerEpochError.code,
                                  errors.StaleBrokerEpochError.code])
def test_no_resend_where_it_cannot_help(code):
    h = ControllerHarness(brokers=(1,))
    controller, _ = h.controller(1)
    _b, _request, d = grow_topic_held(h, controller)
    controller.channels.clear()
    d.callback(SimpleNamespace(error_code=code, partition_errors=[]))
    h.clock.advance(LEADER_AND_ISR_RESEND_MAX_S * 4)
    assert resent(controller) == []


def test_no_resend_after_the_broker_bounced():
    h = ControllerHarness(brokers=(1, 2))
    controller, _ = h.controller(1)
    h.admin.create_topic("t", {0: [2]})
    h.settle()
    channels = controller.channels
    channels.hold = True
    h.admin.add_partitions("t", {1: [2]})
    h.settle()
    _b, request, d = next(e for e in channels.pending
                          if type(e[1]).__name__ == "LeaderAndIsrRequest")
    d.errback(errors.UnknownServerError("restarting"))
    h.kill_broker(2)
    h.start_broker(2)                   # a new registration: its startup sends the state
    h.settle()
    channels.hold = False
    answer_pending(channels)
    channels.clear()
    h.clock.advance(LEADER_AND_ISR_RESEND_MAX_S * 4)
    h.settle()
    assert all(r.broker_epoch != request.broker_epoch
               for r in channels.requests("LeaderAndIsrRequest", 2))
