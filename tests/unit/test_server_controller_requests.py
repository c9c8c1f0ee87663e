"""The broker's gate for controller requests: the pure judgement and its ZooKeeper reads. (Which
listener may carry them is the API table's listener rule: tests/unit/test_api_table.py.)"""

import pytest
from hypothesis import given, strategies as st
from twisted.internet import defer

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.server.controller_requests import (ControllerIdentity, ControllerRequestGate,
                                                  judge, read_controller_identity)

ZK = ControllerIdentity(controller_id=2, epoch=5)
MINE = 1234


def test_the_controller_zookeeper_names_is_obeyed():
    assert judge(2, 5, MINE, ZK, MINE) is None


@pytest.mark.parametrize("claim, error", [
    ((7, 33, MINE), errors.StaleControllerEpochError),    # the forgery
    ((2, 6, MINE), errors.StaleControllerEpochError),     # real id, an epoch no one held
    ((2, 4, MINE), errors.StaleControllerEpochError),     # a deposed controller
    ((3, 5, MINE), errors.NotControllerError),            # another broker, the real epoch
    ((2, 5, MINE - 1), errors.StaleBrokerEpochError),     # for an earlier registration
    ((2, 5, -1), errors.StaleBrokerEpochError),           # Kafka lets -1 through; not here
])
def test_claims_zookeeper_does_not_back_are_refused(claim, error):
    refusal = judge(*claim, ZK, MINE)
    assert refusal is not None and refusal.error is error, refusal


def test_no_controller_in_zookeeper_refuses_everyone():
    assert judge(2, 5, MINE, None, MINE).error is errors.NotControllerError


@given(st.integers(-1, 9), st.integers(-1, 40), st.integers(-2, 2000))
def test_only_the_exact_claim_passes(controller_id, epoch, broker_epoch):
    accepted = judge(controller_id, epoch, broker_epoch, ZK, MINE) is None
    assert accepted == ((controller_id, epoch, broker_epoch) == (2, 5, MINE))


def leader_and_isr(controller_id=2, epoch=5, broker_epoch=MINE):
    return m.LeaderAndIsrRequest(controller_id=controller_id, controller_epoch=epoch,
                                 broker_epoch=broker_epoch, partition_states=[
                                     m.LeaderAndIsrPartitionState("t", 0, epoch, 1, 3, [1], 0,
                                                                  [1])])


def make_gate(identities, broker_epoch=MINE, registered=MINE):
    """A gate whose ZooKeeper reads answer from ``identities`` (one Deferred per read)."""
    reads = []

    def read_identity():
        d = defer.Deferred()
        reads.append(d)
        return d
    gate = ControllerRequestGate(read_identity, lambda: broker_epoch,
                                 lambda: defer.succeed(registered))
    return gate, reads


def test_requests_are_applied_in_arrival_order_while_zookeeper_is_read():
    gate, reads = make_gate([])
    applied = []
    first = gate.admit(leader_and_isr(), lambda r: applied.append("first") or "r1")
    second = gate.admit(leader_and_isr(), lambda r: applied.append("second") or "r2")
    assert len(reads) == 1 and applied == []       # the second waits behind the first
    reads[0].callback(ZK)
    assert applied == ["first"] and len(reads) == 2
    reads[1].callback(ZK)
    assert applied == ["first", "second"]
    assert first.result == "r1" and second.result == "r2"


def test_a_refusal_answers_with_the_error_and_applies_nothing():
    gate, reads = make_gate([])
    applied = []
    d = gate.admit(leader_and_isr(controller_id=7, epoch=33), applied.append)
    reads[0].callback(ZK)
    assert applied == []
    assert d.result.error_code == errors.StaleControllerEpochError.code
    assert all(e.error_code == errors.StaleControllerEpochError.code
               for e in d.result.partition_errors)
    assert gate.refused == 1


def test_zookeeper_unreachable_judges_by_the_last_confirmed_controller():
    gate, reads = make_gate([])
    gate.admit(leader_and_isr(), lambda r: "ok")
    reads[0].callback(ZK)
    accepted = gate.admit(leader_and_isr(), lambda r: "ok")
    reads[1].errback(errors.KafkaError("connection loss"))
    assert accepted.result == "ok"
    forged = gate.admit(leader_and_isr(controller_id=7, epoch=33), lambda r: "ok")
    reads[2].errback(errors.KafkaError("connection loss"))
    assert forged.result.error_code == errors.StaleControllerEpochError.code


def test_a_newer_broker_epoch_is_checked_against_the_registration():
    """The controller can see a new registration before the broker hears back from its own
    create: the gate reads the registration rather than refusing."""
    gate, reads = make_gate([], broker_epoch=MINE, registered=MINE + 10)
    d = gate.admit(leader_and_isr(broker_epoch=MINE + 10), lambda r: "ok")
    reads[0].callback(ZK)
    assert d.result == "ok"
    gate, reads = make_gate([], broker_epoch=MINE, registered=MINE)
    d = gate.admit(leader_and_isr(broker_epoch=MINE + 10), lambda r: "ok")
    reads[0].callback(ZK)
    assert d.result.error_code == errors.StaleBrokerEpochError.code


class FakeTzk:
    """Answers /controller and /controller_epoch reads from scripted values."""

    def __init__(self, epochs, controllers):
        self.epochs, self.controllers = list(epochs), list(controllers)

    def get_controller_epoch(self):
        epoch = self.epochs.pop(0)
        return defer.succeed(None if epoch is None else type("E", (), {"epoch": epoch})())

    def get_controller_id(self):
        return defer.succeed(self.controllers.pop(0))


def test_identity_is_read_as_one_consistent_pair():
    # the controller moved between the first epoch read and /controller: read again
    deferred_zk = FakeTzk(epochs=[4, 5, 5, 5], controllers=[2, 2])
    assert read_controller_identity(deferred_zk).result == ControllerIdentity(2, 5)
    assert read_controller_identity(FakeTzk([None, None], [None])).result is None
    moving = FakeTzk(epochs=[1, 2, 3, 4, 5, 6], controllers=[1, 2, 3])
    failure = read_controller_identity(moving)
    failure.addErrback(lambda f: f.trap(errors.NotControllerError) and "moving")
    assert failure.result == "moving"
