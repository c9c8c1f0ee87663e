"""kafkalite's transactional Producer against the fake broker (test_client_fakebroker) with a
small in-memory transaction coordinator added: the requests a transaction makes and their order
(FindCoordinator type 1, InitProducerId with the id, AddPartitionsToTxn before a partition's
first Produce, EndTxn after the last acknowledgement), the batches' transactional bit and id,
abort, fencing, abortable errors, KIP-360's epoch bump and the retries."""

from __future__ import annotations

import threading

import pytest

from kafkalite import errors
from kafkalite.client import ConsumerGroupMetadata, OffsetAndMetadata, Producer, TopicPartition
from kafkalite.client.transaction_manager import TransactionAbortedError
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.record.header import HEADER, TRANSACTIONAL_BIT

from test_client_fakebroker import FakeCluster


class FakeTxnCoordinator:
    """Transactional ids -> producer id, epoch and the partitions of the open transaction;
    ``inject[api_key] = [codes]`` answers the next requests of that API with errors."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ids: dict[str, dict] = {}
        self.next_pid = 5000
        self.inject: dict[int, list[int]] = {}
        self.ended: list[tuple[str, bool, list]] = []
        self.offsets: list[tuple] = []
        self.violations: list[str] = []
        self.init_requests: list = []

    def install(self, cluster: FakeCluster) -> None:
        for broker in cluster.brokers:
            original = broker.handle

            def handle(api_key, request, client_id=None, original=original):
                answer = self.handle(api_key, request)
                return original(api_key, request, client_id) if answer is None else answer

            broker.handle = handle

    def _injected(self, api_key):
        codes = self.inject.get(api_key)
        return codes.pop(0) if codes else 0

    def _check(self, r) -> int:
        state = self.ids.get(r.transactional_id)
        if state is None or state["pid"] != r.producer_id:
            return errors.InvalidProducerIdMappingError.code
        if state["epoch"] != r.producer_epoch:
            return errors.ProducerFencedError.code
        return 0

    def handle(self, api_key, r):
        with self.lock:
            if api_key == ApiKey.INIT_PRODUCER_ID and r.transactional_id is not None:
                self.init_requests.append(r)
                code = self._injected(api_key)
                if code:
                    return m.InitProducerIdResponse(error_code=code)
                state = self.ids.get(r.transactional_id)
                if state is None:
                    state = self.ids[r.transactional_id] = {"pid": self.next_pid, "epoch": -1,
                                                            "parts": set()}
                    self.next_pid += 1
                elif r.producer_id >= 0 and (r.producer_id, r.producer_epoch) != (
                        state["pid"], state["epoch"]):
                    return m.InitProducerIdResponse(error_code=errors.ProducerFencedError.code)
                state["epoch"] += 1
                state["parts"] = set()
                return m.InitProducerIdResponse(producer_id=state["pid"],
                                                producer_epoch=state["epoch"])
            if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
                code = self._injected(api_key) or self._check(r)
                if not code:
                    self.ids[r.transactional_id]["parts"].update(
                        (t.name, p) for t in r.topics for p in t.partitions)
                return m.AddPartitionsToTxnResponse(results=[
                    m.AddPartitionsToTxnTopicResult(t.name, [
                        m.AddPartitionsToTxnPartitionResult(p, code) for p in t.partitions])
                    for t in r.topics])
            if api_key == ApiKey.ADD_OFFSETS_TO_TXN:
                return m.AddOffsetsToTxnResponse(error_code=self._injected(api_key)
                                                 or self._check(r))
            if api_key == ApiKey.TXN_OFFSET_COMMIT:
                code = self._injected(api_key)
                if not code:
                    self.offsets.append((r.group_id, r.generation_id, r.member_id, sorted(
                        (t.name, p.partition_index, p.committed_offset)
                        for t in r.topics for p in t.partitions)))
                return m.TxnOffsetCommitResponse(topics=[
                    m.TxnOffsetCommitResponseTopic(t.name, [
                        m.TxnOffsetCommitResponsePartition(p.partition_index, code)
                        for p in t.partitions]) for t in r.topics])
            if api_key == ApiKey.END_TXN:
                code = self._injected(api_key) or self._check(r)
                if not code:
                    state = self.ids[r.transactional_id]
                    self.ended.append((r.transactional_id, r.committed, sorted(state["parts"])))
                    state["parts"] = set()
                return m.EndTxnResponse(error_code=code)
            if api_key == ApiKey.PRODUCE and r.transactional_id is not None:
                state = self.ids.get(r.transactional_id, {"parts": set()})
                for topic, parts in r.topic_data.items():
                    for p, data in parts.items():
                        header = HEADER.unpack_from(data, 0)
                        if (topic, p) not in state["parts"]:
                            self.violations.append(f"{topic}-{p} produced before it was added")
                        if not header[5] & TRANSACTIONAL_BIT or header[9] != state.get("pid"):
                            self.violations.append(f"{topic}-{p}: not a transactional batch")
            return None


@pytest.fixture
def fake():
    cluster = FakeCluster(2)
    cluster.create_topic("t", 2)
    coordinator = FakeTxnCoordinator()
    coordinator.install(cluster)
    cluster.txn = coordinator
    yield cluster
    cluster.close()


def producer(fake, tid="tid", **options) -> Producer:
    return Producer(fake.bootstrap, transactional_id=tid, retry_backoff_ms=10,
                    max_block_ms=10000, **options)


def count(fake, api_key) -> int:
    with fake.lock:
        return fake.count(api_key)


def test_commit_adds_partitions_before_their_data_and_ends_after_it(fake):
    with producer(fake) as p:
        p.init_transactions()
        p.begin_transaction()
        futures = [p.send("t", b"a", partition=0), p.send("t", b"b", partition=1),
                   p.send("t", b"c", partition=0)]
        p.commit_transaction()
        assert all(f.is_done for f in futures)
        assert [f.get(0).offset for f in futures] == [0, 0, 1]
    assert fake.txn.ended == [("tid", True, [("t", 0), ("t", 1)])]
    assert fake.txn.violations == []
    assert fake.values("t", 0) == [b"a", b"c"] and fake.values("t", 1) == [b"b"]
    with fake.lock:
        kinds = [k for _n, k, _r in fake.request_log]
        finds = [r for _n, k, r in fake.request_log if k == ApiKey.FIND_COORDINATOR]
    assert kinds.index(ApiKey.ADD_PARTITIONS_TO_TXN) < kinds.index(ApiKey.PRODUCE)
    last_produce = max(i for i, k in enumerate(kinds) if k == ApiKey.PRODUCE)
    assert kinds.index(ApiKey.END_TXN) > last_produce
    assert finds and all(r.key_type == 1 and r.key == "tid" for r in finds)


def test_two_transactions_in_a_row_restart_nothing(fake):
    with producer(fake) as p:
        p.init_transactions()
        for i in range(3):
            p.begin_transaction()
            p.send("t", b"%d" % i, partition=0)
            p.commit_transaction()
    assert [e[1] for e in fake.txn.ended] == [True, True, True]
    assert fake.values("t", 0) == [b"0", b"1", b"2"]
    assert count(fake, ApiKey.INIT_PRODUCER_ID) == 1


def test_abort_fails_unsent_records_and_sends_end_txn_abort(fake):
    # the partition cannot be added yet (CONCURRENT_TRANSACTIONS, retried): its batch waits
    fake.txn.inject[ApiKey.ADD_PARTITIONS_TO_TXN] = [errors.ConcurrentTransactionsError.code] * 1000
    with producer(fake) as p:
        p.init_transactions()
        p.begin_transaction()
        future = p.send("t", b"never", partition=0)
        p.abort_transaction()
        with pytest.raises(TransactionAbortedError):
            future.get(5)
        fake.txn.inject.clear()
        p.begin_transaction()                 # the producer goes on with a new transaction
        p.send("t", b"later", partition=0)
        p.commit_transaction()
    # the aborted transaction never reached the coordinator: no EndTxn for it (as Java's)
    assert [e[1] for e in fake.txn.ended] == [True]
    assert fake.values("t", 0) == [b"later"]


def test_sent_records_of_an_aborted_transaction_are_written_then_aborted(fake):
    with producer(fake) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send("t", b"x", partition=1).get(10)
        p.abort_transaction()
    assert fake.txn.ended == [("tid", False, [("t", 1)])]
    assert fake.values("t", 1) == [b"x"]      # written; read_committed readers skip it


def test_a_second_producer_fences_the_first(fake):
    first = producer(fake)
    second = producer(fake)
    try:
        first.init_transactions()
        first.begin_transaction()
        first.send("t", b"old", partition=0).get(10)
        second.init_transactions()            # bumps the epoch
        with pytest.raises(errors.ProducerFencedError):
            first.commit_transaction()
        for call in (first.begin_transaction, first.abort_transaction):
            with pytest.raises(errors.ProducerFencedError):
                call()
        with pytest.raises(errors.ProducerFencedError):
            first.send("t", b"more")
        second.begin_transaction()
        second.send("t", b"new", partition=0)
        second.commit_transaction()
    finally:
        first.close()
        second.close()
    assert fake.txn.ended == [("tid", True, [("t", 0)])]


def test_sends_outside_a_transaction_are_refused(fake):
    with producer(fake) as p:
        with pytest.raises(errors.IllegalStateError, match="init_transactions"):
            p.send("t", b"x")
        p.init_transactions()
        with pytest.raises(errors.IllegalStateError, match="begin_transaction"):
            p.send("t", b"x")
        with pytest.raises(errors.IllegalStateError):
            p.commit_transaction()
    with Producer(fake.bootstrap) as plain:
        with pytest.raises(errors.IllegalStateError, match="transactional_id"):
            plain.begin_transaction()


def test_send_offsets_to_transaction_with_group_metadata(fake):
    with producer(fake) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send("t", b"x", partition=0)
        meta = ConsumerGroupMetadata("g", 4, "member-1")
        p.send_offsets_to_transaction({TopicPartition("in", 0): OffsetAndMetadata(10, ""),
                                       TopicPartition("in", 1): 20}, meta)
        p.commit_transaction()
        p.begin_transaction()
        p.send_offsets_to_transaction({TopicPartition("in", 0): 11}, "g")
        p.commit_transaction()
    assert fake.txn.offsets == [("g", 4, "member-1", [("in", 0, 10), ("in", 1, 20)]),
                                ("g", -1, "", [("in", 0, 11)])]
    with fake.lock:
        kinds = [k for _n, k, _r in fake.request_log]
    assert kinds.index(ApiKey.ADD_OFFSETS_TO_TXN) < kinds.index(ApiKey.TXN_OFFSET_COMMIT)


def test_an_abortable_error_makes_commit_raise_and_abort_recover(fake):
    fake.txn.inject[ApiKey.ADD_OFFSETS_TO_TXN] = [errors.GroupAuthorizationFailedError.code]
    with producer(fake) as p:
        p.init_transactions()
        p.begin_transaction()
        with pytest.raises(errors.GroupAuthorizationFailedError):
            p.send_offsets_to_transaction({TopicPartition("in", 0): 1}, "g")
        with pytest.raises(errors.GroupAuthorizationFailedError):
            p.commit_transaction()
        p.abort_transaction()
        p.begin_transaction()
        p.send("t", b"ok", partition=0)
        p.commit_transaction()
    assert [e[1] for e in fake.txn.ended] == [True]     # nothing was added before the abort


def test_a_failed_batch_aborts_with_an_epoch_bump_and_sequences_restart(fake):
    fake.produce_errors[("t", 0)] = [errors.CorruptRecordError.code + 1000]   # unknown: fatal
    with producer(fake) as p:
        p.init_transactions()
        p.begin_transaction()
        future = p.send("t", b"bad", partition=0)
        with pytest.raises(errors.KafkaError):
            future.get(10)
        with pytest.raises(errors.KafkaError, match="must be aborted"):
            p.commit_transaction()
        p.abort_transaction()
        bump = fake.txn.init_requests[-1]
        assert (bump.producer_id, bump.producer_epoch) == (5000, 0)   # KIP-360: id and epoch
        p.begin_transaction()
        p.send("t", b"good", partition=0)
        p.commit_transaction()
    with fake.lock:
        produced = [r.topic_data["t"][0] for _n, k, r in fake.request_log
                    if k == ApiKey.PRODUCE and "t" in r.topic_data]
    last = HEADER.unpack_from(produced[-1], 0)
    assert (last[9], last[10], last[11]) == (5000, 1, 0)   # pid, the new epoch, sequence 0
    assert fake.values("t", 0) == [b"good"]


def test_coordinator_errors_are_retried(fake):
    fake.txn.inject[ApiKey.INIT_PRODUCER_ID] = [errors.CoordinatorLoadInProgressError.code,
                                                errors.NotCoordinatorError.code]
    fake.txn.inject[ApiKey.END_TXN] = [errors.ConcurrentTransactionsError.code]
    fake.coordinator_errors = [errors.CoordinatorNotAvailableError.code]
    with producer(fake) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send("t", b"x", partition=0)
        p.commit_transaction()
    assert len(fake.txn.init_requests) == 3
    assert fake.txn.ended == [("tid", True, [("t", 0)])]


def test_init_transactions_times_out_and_can_be_called_again(fake):
    fake.txn.inject[ApiKey.INIT_PRODUCER_ID] = [errors.ConcurrentTransactionsError.code] * 10000
    with producer(fake) as p:
        with pytest.raises(errors.KafkaTimeoutError):
            p.init_transactions(timeout=0.3)
        fake.txn.inject.clear()
        p.init_transactions()
        p.begin_transaction()


def test_a_fatal_init_error(fake):
    fake.txn.inject[ApiKey.INIT_PRODUCER_ID] = [
        errors.TransactionalIdAuthorizationFailedError.code]
    with producer(fake) as p:
        with pytest.raises(errors.TransactionalIdAuthorizationFailedError):
            p.init_transactions()
        with pytest.raises(errors.TransactionalIdAuthorizationFailedError):
            p.begin_transaction()


def test_transactional_configuration():
    with pytest.raises(errors.ConfigError, match="acks"):
        Producer("127.0.0.1:1", transactional_id="t", acks=1)
    with pytest.raises(errors.ConfigError, match="enable_idempotence"):
        Producer("127.0.0.1:1", transactional_id="t", enable_idempotence=False)
    with pytest.raises(errors.ConfigError, match="in_flight"):
        Producer("127.0.0.1:1", transactional_id="t", max_in_flight_requests_per_connection=6)
    p = Producer("127.0.0.1:1", transactional_id="t")
    try:
        assert p.config["acks"] == -1 and p.config["enable_idempotence"]
    finally:
        p.close()


def test_a_fatal_answer_while_adding_a_partition_fails_its_records(fake):
    # the add is told NOT_COORDINATOR; looking the coordinator up again is refused: fatal, on
    # the sender thread, which must neither die nor send the waiting batch
    fake.txn.inject[ApiKey.ADD_PARTITIONS_TO_TXN] = [errors.NotCoordinatorError.code]
    with producer(fake) as p:
        p.init_transactions()
        fake.coordinator_errors = [errors.TransactionalIdAuthorizationFailedError.code]
        p.begin_transaction()
        future = p.send("t", b"x", partition=0)
        with pytest.raises(errors.TransactionalIdAuthorizationFailedError):
            future.get(10)
        with pytest.raises(errors.TransactionalIdAuthorizationFailedError):
            p.commit_transaction()
        assert p._sender.is_alive()
    assert fake.values("t", 0) == [] and fake.txn.ended == []


def test_close_aborts_an_open_transaction_unless_forced(fake):
    p = producer(fake)
    p.init_transactions()
    p.begin_transaction()
    p.send("t", b"x", partition=0).get(10)
    p.close()                                  # as Java's: the open transaction is aborted
    assert fake.txn.ended == [("tid", False, [("t", 0)])]
    p = producer(fake)
    p.init_transactions()
    p.begin_transaction()
    p.send("t", b"y", partition=0).get(10)
    p.close(timeout=0)                         # forced: left to the coordinator's timeout
    assert len(fake.txn.ended) == 1


def test_a_transaction_with_nothing_in_it_ends_without_end_txn(fake):
    with producer(fake) as p:
        p.init_transactions()
        p.begin_transaction()
        p.commit_transaction()
        p.begin_transaction()
        p.abort_transaction()
        p.begin_transaction()
        p.send("t", b"x", partition=0)
        p.commit_transaction()
    assert count(fake, ApiKey.END_TXN) == 1
    assert fake.txn.ended == [("tid", True, [("t", 0)])]


def test_only_partitions_that_got_records_join_the_transaction(fake):
    # keyless records fill small sticky batches, so the partitioner moves between partitions;
    # the transaction holds exactly the partitions that got a record
    fake.create_topic("s", 4)
    with producer(fake, batch_size=200) as p:
        p.init_transactions()
        p.begin_transaction()
        for i in range(7):
            p.send("s", b"%03d" % i * 20)
        p.commit_transaction()
    [(_tid, _commit, parts)] = fake.txn.ended
    written = [("s", n) for n in range(4) if fake.values("s", n)]
    assert parts == written and len(written) > 1


def test_the_first_add_of_a_transaction_retries_concurrent_transactions_sooner(fake):
    # Java: the previous transaction's markers are still being written; its successor's first
    # AddPartitionsToTxn is retried after 20 ms, later ones after retry_backoff_ms
    with Producer(fake.bootstrap, transactional_id="tid", retry_backoff_ms=500) as p:
        p.init_transactions()
        tm, client = p._transaction_manager, p._txn_client
        tm.begin_transaction()
        fake.txn.inject[ApiKey.ADD_PARTITIONS_TO_TXN] = [
            errors.ConcurrentTransactionsError.code] * 2
        tm.maybe_add_partition(TopicPartition("t", 0))       # noted by hand: no sender race
        assert client.add_partitions_once() == pytest.approx(0.02)
        tm.added.add(TopicPartition("t", 9))                 # not the first add any more
        assert client.add_partitions_once() == pytest.approx(0.5)
        assert client.add_partitions_once() is None
        assert TopicPartition("t", 0) in tm.added
