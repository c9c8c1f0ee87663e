"""A deposed controller writes nothing: once /controller_epoch moved on (another broker was
elected, as far as ZooKeeper is concerned), each of its writes fails the epoch zkVersion check
inside its own transaction, and it resigns. One test per kind of controller write; the
in-memory ZooKeeper records every committed change, so "no write" is checked exactly."""

import logging

import pytest

import zk_schema

from controller_fakes import ControllerHarness


def deposed(h, controller, caplog, since):
    """The controller's writes since ``since`` (none), and it stepped down."""
    assert h.tree.writes[since:] == []
    assert not controller.is_active
    assert any("fenced while handling" in r.getMessage() for r in caplog.records)


@pytest.fixture
def h():
    return ControllerHarness(brokers=(1, 2, 3))


@pytest.fixture(autouse=True)
def warnings_captured(caplog):
    caplog.set_level(logging.WARNING, logger="kafkalite.controller")


def test_no_partition_state_write_after_a_broker_failure(h, caplog):
    h.admin.create_topic("t", {0: [1, 2]})
    h.set_state("t", 0, leader=1, isr=[1, 2])
    controller, _ = h.controller(3)
    before = h.state("t", 0)
    h.bump_controller_epoch()
    h.kill_broker(1)
    since = len(h.tree.writes)
    h.settle()
    deposed(h, controller, caplog, since)
    assert h.state("t", 0) == before


def test_no_partition_state_created_for_a_new_topic(h, caplog):
    controller, _ = h.controller(1)
    h.bump_controller_epoch()
    h.admin.create_topic("n", {0: [1, 2]})
    since = len(h.tree.writes)
    h.settle()
    deposed(h, controller, caplog, since)
    assert not h.admin.exists(zk_schema.topics.partitions_path("n"))   # not even the parents


def test_no_reassignment_write_of_any_kind(h, caplog):
    h.admin.create_topic("r", {0: [1, 2]})
    h.set_state("r", 0, leader=1, isr=[1, 2])
    controller, _ = h.controller(1)
    h.admin.create_partition_reassignment({("r", 0): [3, 2]})
    h.settle()
    assert h.admin.get_topic_assignment("r").partitions[0] == (3, 2, 1)     # phase 1 ran
    h.bump_controller_epoch()
    h.set_state("r", 0, leader=1, isr=[1, 2, 3], leader_epoch=1)           # 3 caught up
    h.admin.create_isr_change_notification([("r", 0)])
    since = len(h.tree.writes)
    h.settle()
    deposed(h, controller, caplog, since)
    assert h.admin.get_partition_reassignments() == {("r", 0): (3, 2)}
    assert h.admin.get_topic_assignment("r").partitions[0] == (3, 2, 1)


def test_no_deletion_of_a_malformed_reassignment_request(h, caplog):
    controller, _ = h.controller(1)
    h.bump_controller_epoch()
    h.admin.create(zk_schema.REASSIGN_PARTITIONS_PATH, b"{not json")
    since = len(h.tree.writes)
    h.settle()
    deposed(h, controller, caplog, since)
    assert h.admin.get_data(zk_schema.REASSIGN_PARTITIONS_PATH)[0] == b"{not json"


def test_no_deletion_of_the_preferred_election_request(h, caplog):
    h.admin.create_topic("p", {0: [1, 2]})
    h.set_state("p", 0, leader=1, isr=[1, 2])            # already led by its preferred replica
    controller, _ = h.controller(1)
    h.bump_controller_epoch()
    h.admin.create_preferred_replica_election([("p", 0)])
    since = len(h.tree.writes)
    h.settle()
    deposed(h, controller, caplog, since)
    assert h.admin.preferred_replica_election_pending()


def test_no_preferred_election_write(h, caplog):
    h.admin.create_topic("p", {0: [1, 2]})
    h.set_state("p", 0, leader=2, isr=[2, 1])
    controller, _ = h.controller(1)
    h.bump_controller_epoch()
    h.admin.create_preferred_replica_election([("p", 0)])
    since = len(h.tree.writes)
    h.settle()
    deposed(h, controller, caplog, since)
    assert h.state("p", 0).leader == 2 and h.admin.preferred_replica_election_pending()


def test_no_topic_znode_deleted_when_a_deletion_completes(h, caplog):
    h.admin.create_topic("doomed", {0: [1, 2]})
    controller, _ = h.controller(1)
    controller.channels.hold = True
    h.admin.mark_topic_for_deletion("doomed")
    h.settle()
    answers = [d for _, r, d in controller.channels.pending
               if type(r).__name__ == "StopReplicaRequest"]
    assert len(answers) == 2
    h.bump_controller_epoch()
    since = len(h.tree.writes)
    for answer in answers:
        answer.callback(None)
    h.settle()
    deposed(h, controller, caplog, since)
    assert h.admin.topic_exists("doomed") and h.admin.get_partition_state("doomed", 0)
    assert h.admin.topics_marked_for_deletion() == ["doomed"]


def test_no_deletion_marker_removed(h, caplog):
    controller, _ = h.controller(1)
    h.bump_controller_epoch()
    h.admin.create(zk_schema.delete_topic_path("ghost"))       # marks a topic that is not there
    since = len(h.tree.writes)
    h.settle()
    deposed(h, controller, caplog, since)
    assert h.admin.topics_marked_for_deletion() == ["ghost"]


def test_no_isr_change_notification_deleted(h, caplog):
    h.admin.create_topic("t", {0: [1, 2]})
    controller, _ = h.controller(1)
    h.bump_controller_epoch()
    h.set_state("t", 0, leader=1, isr=[1])
    name = h.admin.create_isr_change_notification([("t", 0)])
    since = len(h.tree.writes)
    h.settle()
    deposed(h, controller, caplog, since)
    assert list(h.admin.get_isr_change_notifications()) == [name]


def test_the_controller_it_lost_to_writes_fine(h, caplog):
    """The fence is the epoch's zkVersion, not a flag: the broker elected after the first one
    resigned does its work (the first one's session ended, so /controller was free)."""
    h.admin.create_topic("t", {0: [1, 2]})
    h.set_state("t", 0, leader=1, isr=[1, 2])
    first, _ = h.controller(1)
    h.tree.expire(1)                   # its session ends: /controller goes
    second, _ = h.controller(2)
    h.settle()
    assert second.is_active and second.epoch == first.epoch + 1
    h.kill_broker(1)
    h.settle()
    assert h.state("t", 0).leader == 2 and h.state("t", 0).controller_epoch == second.epoch
