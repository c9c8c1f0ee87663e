"""Transactions in a partition over a real log (tmp_path) and a real ReplicaManager (task.Clock):
the last stable offset through high watermark moves and truncation, read_committed fetches and
ListOffsets, markers only from the coordinator, the .txnindex entries of aborts, and
WriteTxnMarkers through its handler."""

import time
from types import SimpleNamespace

import pytest

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch
from kafkalite.record.control import build_control_batch
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.offset_values import OffsetQuery
from kafkalite.server.partition import epoch_starts_from_log
from kafkalite.server.producer_state import ProducerStateTable
from kafkalite.server.producer_txns import rebuild
from kafkalite.server.request_authz import RequestAuthz
from kafkalite.server.txn_marker_apis import handle_write_txn_markers

from handler_fakes import ClusterAuthorizer
from test_server_replica_manager import TP, Harness, _batch, _resolved

COMMITTED, UNCOMMITTED = 1, 0


def _txn(pid, seq, n=2, epoch=0):
    now = int(time.time() * 1000)
    return build_batch([(now, None, b"p%d-%d" % (pid, seq + i), None) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       transactional=True)


class Txns:
    """A leader of t-0 with replicas 1, 2: the HW moves only when broker 2 fetches."""

    def __init__(self, tmp_path):
        self.h = Harness(tmp_path)
        self.h.lead([1, 2], [1, 2])
        self.partition = self.h.manager.partitions[TP]

    def produce(self, batch, origin="client"):
        result = _resolved(self.h.manager.append_records(5000, 1, False, {TP: batch},
                                                         origin=origin))
        return result[TP]

    def marker(self, pid, commit, epoch=0, coordinator_epoch=0):
        return self.produce(build_control_batch(pid, epoch, commit, coordinator_epoch, 1000),
                            origin="coordinator")

    def replicate(self):
        """Broker 2 fetches up to the log end: the HW moves there."""
        _resolved(self.h.fetch(self.partition.log_end_offset, replica_id=2))

    def fetch(self, offset, isolation):
        results = _resolved(self.h.manager.fetch(
            FetchParams(-1, 0, 1, 1 << 20, isolation), {TP: PartitionData(offset)}))
        return results[TP]

    def latest(self, isolation):
        return self.h.manager.list_offsets(-1, isolation, {TP: OffsetQuery(-1)})[TP].offset


def test_lso_follows_transactions_and_the_high_watermark(tmp_path):
    t = Txns(tmp_path)
    assert t.produce(_batch(2)).error_code == 0             # 0-1 plain
    assert t.produce(_txn(7, 0)).base_offset == 2           # 2-3 txn 7 begins
    t.replicate()
    assert (t.partition.high_watermark, t.partition.last_stable_offset) == (4, 2)
    assert t.marker(7, commit=True).base_offset == 4        # 4 commit marker
    # decided, but the marker is not replicated yet: still unstable
    assert t.partition.last_stable_offset == 2
    t.replicate()
    assert t.partition.last_stable_offset == 5 == t.partition.high_watermark


def test_read_committed_fetch_and_list_offsets_stop_at_the_lso(tmp_path):
    t = Txns(tmp_path)
    t.produce(_batch(2))                                      # 0-1
    t.produce(_txn(7, 0))                                     # 2-3 open
    t.produce(_batch(1))                                      # 4
    t.replicate()
    committed, uncommitted = t.fetch(0, COMMITTED), t.fetch(0, UNCOMMITTED)
    assert committed.last_stable_offset == 2 and committed.high_watermark == 5
    assert committed.aborted_transactions == [] and uncommitted.aborted_transactions is None
    assert len(committed.records) < len(uncommitted.records)
    assert t.fetch(2, COMMITTED).records == b""               # at the LSO: nothing yet
    assert (t.latest(COMMITTED), t.latest(UNCOMMITTED)) == (2, 5)


def test_aborted_transactions_are_indexed_and_returned(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0))                                     # 0-1 txn 7
    t.produce(_txn(8, 0))                                     # 2-3 txn 8
    t.marker(7, commit=False)                                 # 4 abort 7
    t.marker(8, commit=True)                                  # 5 commit 8
    t.produce(_txn(7, 2))                                     # 6-7 txn 7 again
    t.marker(7, commit=False)                                 # 8 abort 7
    t.replicate()
    assert t.partition.last_stable_offset == 9
    # the index holds each abort with the LSO once its marker was written
    indexed = t.partition.log.collect_aborted_transactions(0, 9)
    assert [tuple(a) for a in indexed] == [(7, 0, 4, 2), (7, 6, 8, 9)]
    fetched = t.fetch(0, COMMITTED)
    assert fetched.aborted_transactions == [(7, 0), (7, 6)]
    assert t.fetch(5, COMMITTED).aborted_transactions == [(7, 6)]


def test_client_control_batches_are_invalid_records(tmp_path):
    t = Txns(tmp_path)
    result = t.produce(build_control_batch(7, 0, True, 0, 1000))
    assert result.error_code == errors.InvalidRecordError.code
    no_sequence = build_batch([(1000, None, b"x", None)], producer_id=7, producer_epoch=0)
    assert t.produce(no_sequence).error_code == errors.InvalidRecordError.code
    assert t.partition.log_end_offset == 0


@pytest.mark.parametrize("epoch,coordinator_epoch,error", [
    (0, 3, errors.InvalidProducerEpochError),
    (1, 2, errors.TransactionCoordinatorFencedError),
])
def test_fenced_markers_are_refused(tmp_path, epoch, coordinator_epoch, error):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0, epoch=1))
    assert t.marker(7, True, epoch=1, coordinator_epoch=3).error_code == 0
    t.produce(_txn(7, 2, epoch=1))
    assert t.marker(7, False, epoch=epoch, coordinator_epoch=coordinator_epoch).error_code \
        == error.code
    assert t.partition.producer_states.producers[7].current_txn_first_offset == 3


def test_data_outside_the_transaction_is_invalid_txn_state(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0))
    plain = build_batch([(1000, None, b"x", None)], producer_id=7, producer_epoch=0,
                        base_sequence=2)
    assert t.produce(plain).error_code == errors.InvalidTxnStateError.code


def test_truncation_reopens_a_transaction_whose_marker_was_cut(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0))                                     # 0-1
    t.marker(7, commit=False)                                 # 2
    t.produce(_txn(8, 0))                                     # 3-4
    t.replicate()
    assert t.partition.last_stable_offset == 3
    t.partition.truncate_to(2)                                # the abort and txn 8 are cut
    assert t.partition.producer_states.ongoing == {0: 7}
    assert 8 not in t.partition.producer_states.producers
    assert t.partition.last_stable_offset == 0


def test_replaying_the_log_rebuilds_the_same_state(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0))
    t.produce(_txn(8, 0))
    t.marker(7, commit=True, coordinator_epoch=4)
    t.produce(_batch(1))
    live = t.partition.producer_states
    replayed = ProducerStateTable()
    epoch_starts_from_log(t.partition.log, producer_states=replayed)
    rebuilt = ProducerStateTable()
    rebuild(rebuilt, t.partition.log)
    for table in (replayed, rebuilt):
        assert table.producers == live.producers
        assert table.ongoing == live.ongoing == {2: 8}


def test_a_follower_replays_markers_into_its_index(tmp_path):
    t = Txns(tmp_path / "leader")
    t.produce(_txn(7, 0))
    t.marker(7, commit=False)
    shipped = t.partition.log.read(0, 1 << 20).records
    follower = Harness(tmp_path / "follower", broker_id=2)
    follower.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=1, partition_states=[m.LeaderAndIsrPartitionState(
            "t", 0, 1, 1, 0, [1, 2], 0, [1, 2])]))
    replica = follower.manager.partitions[TP]
    replica.append_as_follower(shipped, 3)
    assert [tuple(a) for a in replica.log.collect_aborted_transactions(0, 3)] == [(7, 0, 2, 3)]
    assert replica.producer_states.producers == t.partition.producer_states.producers


# --- WriteTxnMarkers ---------------------------------------------------------------------------

class FakeGroupCoordinator:
    def __init__(self):
        self.completed = []

    def complete_txn_offsets(self, producer_id, partitions, commit):
        self.completed.append((producer_id, partitions, commit))


def _markers_request(commit=True, topics=(("t", [0, 5]),), pid=7):
    return m.WriteTxnMarkersRequest(markers=[m.WritableTxnMarker(
        pid, 0, commit, [m.WritableTxnMarkerTopic(name, parts) for name, parts in topics], 0)])


def _broker(t, deny_cluster=False):
    groups = FakeGroupCoordinator()
    broker = SimpleNamespace(replica_manager=t.h.manager, group_coordinator=groups,
                             config=SimpleNamespace(request_timeout_ms=5000),
                             clock_ms=lambda: 1000)
    ctx = SimpleNamespace(authz=RequestAuthz(ClusterAuthorizer(deny_cluster), "User:b", "h"))
    return broker, ctx, groups


def _codes(response):
    return {(r.producer_id, topic.name, p.partition_index): p.error_code
            for r in response.markers for topic in r.topics for p in topic.partitions}


def test_write_txn_markers_appends_a_marker_per_partition(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0))
    broker, ctx, groups = _broker(t)
    answer = handle_write_txn_markers(broker, ctx, _markers_request(commit=False))
    assert not _resolved(answer)                  # acks=all: waits for broker 2
    t.replicate()
    assert _codes(_resolved(answer)) == {
        (7, "t", 0): 0, (7, "t", 5): errors.UnknownTopicOrPartitionError.code}
    assert t.partition.producer_states.ongoing == {}
    assert [tuple(a) for a in t.partition.log.collect_aborted_transactions(0, 3)] == [
        (7, 0, 2, 3)]
    assert groups.completed == []


def test_write_txn_markers_needs_cluster_action(tmp_path):
    t = Txns(tmp_path)
    broker, ctx, _groups = _broker(t, deny_cluster=True)
    with pytest.raises(errors.ClusterAuthorizationFailedError):
        handle_write_txn_markers(broker, ctx, _markers_request())
    assert t.partition.log_end_offset == 0


def test_write_txn_markers_answers_the_append_errors(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0, epoch=2))
    broker, ctx, _groups = _broker(t)
    response = _resolved(handle_write_txn_markers(broker, ctx, _markers_request()))
    assert _codes(response)[(7, "t", 0)] == errors.InvalidProducerEpochError.code


def test_write_txn_markers_completes_transactional_offsets(tmp_path):
    t = Txns(tmp_path)
    h = t.h
    h.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=1, partition_states=[m.LeaderAndIsrPartitionState(
            "__consumer_offsets", 3, 1, 1, 0, [1], 0, [1])]))
    broker, ctx, groups = _broker(t)
    response = _resolved(handle_write_txn_markers(
        broker, ctx, _markers_request(topics=(("__consumer_offsets", [3]),))))
    assert _codes(response) == {(7, "__consumer_offsets", 3): 0}
    assert groups.completed == [(7, {3}, True)]


# --- producer snapshots ------------------------------------------------------------------------

def test_the_state_survives_a_restart_through_the_snapshot(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0))                                     # 0-1 open
    t.produce(_txn(8, 0))                                     # 2-3
    t.marker(8, commit=True, coordinator_epoch=6)             # 4
    t.partition.log.roll()                                    # snapshot at 5
    assert t.partition.log.latest_producer_snapshot()[0] == 5
    t.produce(_txn(8, 2))                                     # 5-6 open again
    before = {pid: (e.epoch, e.last_sequence, e.coordinator_epoch, e.current_txn_first_offset)
              for pid, e in t.partition.producer_states.producers.items()}
    t.h.manager.stop()
    t.h.logs.stopService()                                    # clean shutdown: snapshot at 7
    again = Txns(tmp_path)
    table = again.partition.producer_states
    assert {pid: (e.epoch, e.last_sequence, e.coordinator_epoch, e.current_txn_first_offset)
            for pid, e in table.producers.items()} == before
    assert table.ongoing == {0: 7, 5: 8}
    assert again.produce(_txn(8, 4)).error_code == 0          # sequences go on
    assert again.produce(_txn(7, 5)).error_code == errors.OutOfOrderSequenceNumberError.code


def test_rebuild_starts_at_the_latest_snapshot(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0))
    t.partition.log.roll()
    t.produce(_txn(8, 0))
    table = ProducerStateTable()
    assert rebuild(table, t.partition.log) == 2
    assert table.ongoing == t.partition.producer_states.ongoing == {0: 7, 2: 8}


def test_transactional_records_need_a_transactional_id(tmp_path):
    from kafkalite.server.data_apis import handle_produce
    t = Txns(tmp_path)
    ctx = SimpleNamespace(authz=RequestAuthz(ClusterAuthorizer(False), "User:p", "h"))
    broker = SimpleNamespace(replica_manager=t.h.manager)
    refused = handle_produce(broker, ctx, m.ProduceRequest(
        acks=1, topic_data={"t": {0: _txn(7, 0)}}))
    assert refused.responses["t"][0].error_code == \
        errors.TransactionalIdAuthorizationFailedError.code
    served = _resolved(handle_produce(broker, ctx, m.ProduceRequest(
        acks=1, transactional_id="tx", topic_data={"t": {0: _txn(7, 0)}})))
    assert served.responses["t"][0].error_code == 0


def test_a_full_truncation_forgets_every_producer(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0))
    t.partition.truncate_fully_and_start_at(100)
    assert t.partition.log_end_offset == 100
    assert t.partition.producer_states.producers == {}
    assert t.partition.producer_states.ongoing == {}


def test_idle_producers_expire_but_not_open_transactions(tmp_path):
    t = Txns(tmp_path)
    old = [(0, None, b"x", None)]          # written at time 0 (the harness clock is ~1000 s)
    t.produce(build_batch(old, producer_id=5, producer_epoch=0, base_sequence=0))
    t.produce(build_batch(old, producer_id=6, producer_epoch=0, base_sequence=0,
                          transactional=True))
    t.h.manager.producer_id_expiration_ms = 1_500_000
    t.h.clock.advance(599)
    assert set(t.partition.producer_states.producers) == {5, 6}
    t.h.clock.advance(1)                   # the 10-minute check, 1600 s after time 0
    assert set(t.partition.producer_states.producers) == {6}
    # forgotten: its next batch starts anew at any sequence, as an unknown producer's
    assert t.produce(build_batch(old, producer_id=5, producer_epoch=0,
                                 base_sequence=7)).error_code == 0


def test_a_waiting_read_committed_fetch_watches_the_lso(tmp_path):
    t = Txns(tmp_path)
    t.produce(_txn(7, 0))                                     # 0-1 open
    t.replicate()
    waiting = t.h.manager.fetch(FetchParams(-1, 5000, 1, 1 << 20, COMMITTED),
                                {TP: PartitionData(0)})
    assert _resolved(waiting) is None
    t.produce(_batch(1))                                      # 2: the HW moves, the LSO not
    t.replicate()
    assert _resolved(waiting) is None
    t.marker(7, commit=True)                                  # 3
    t.replicate()                                             # the LSO passes the marker
    answer = _resolved(waiting)[TP]
    assert answer.last_stable_offset == 4 and answer.records
    assert answer.aborted_transactions == []
