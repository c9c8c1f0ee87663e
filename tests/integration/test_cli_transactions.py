"""``kafkalite transactions list|describe`` against real brokers: before any transactional
producer (no ``__transaction_state`` yet), and with transactions made by confluent-kafka (an
independent client, librdkafka) -- one committed, one left open, one aborted -- each shown with
the coordinator, producer id and epoch, state and partitions the log holds."""

from __future__ import annotations

import pytest

from cli_tools import run, wait_for

pytestmark = pytest.mark.integration

LIST_HEADER = "TransactionalId\tCoordinator\tProducerId\tTransactionState\t"
DESCRIBE_HEADER = ("CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\t"
                   "TransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\t"
                   "TopicPartitions\t")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("\t")[:-1]]


def _listing(capsys, bootstrap) -> dict[str, list[str]]:
    code, out, err = run(capsys, "transactions", "--bootstrap-server", bootstrap, "list")
    assert code == 0, err
    lines = out.splitlines()
    assert _cells(lines[0]) == _cells(LIST_HEADER)
    return {cells[0]: cells for cells in map(_cells, lines[1:])}


def _describe(capsys, bootstrap, transactional_id) -> list[str]:
    code, out, err = run(capsys, "transactions", "describe", "--transactional-id",
                         transactional_id, "--bootstrap-server", bootstrap)
    assert code == 0, err
    header, row = out.splitlines()
    assert _cells(header) == _cells(DESCRIBE_HEADER)
    return _cells(row)


def test_no_transactions_yet(kafkalite_broker, capsys):
    bootstrap = kafkalite_broker.bootstrap_servers
    code, out, err = run(capsys, "transactions", "--bootstrap-server", bootstrap, "list")
    assert (code, out) == (0, LIST_HEADER + "\n"), err
    code, out, err = run(capsys, "transactions", "--bootstrap-server", bootstrap, "describe",
                         "--transactional-id", "nobody")
    assert code == 1 and out == ""
    assert "Failed to describe transaction state of transactional-id `nobody`" in err
    assert "could not be found" in err


def _coordinator_partition(transactional_id: str, partitions: int) -> int:
    from kafkalite.jvm_hashing import java_string_hash

    h = java_string_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions     # Kafka's Utils.abs


def test_transactions_of_confluent_kafka(kafkalite_cluster_factory, capsys):
    from confluent_kafka import Producer

    from kafkalite.client.admin import AdminClient
    from kafkalite.client.structs import NewTopic

    cluster = kafkalite_cluster_factory(3, transaction_state_log_num_partitions=5)
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("orders", 2, 3)])

    def producer(transactional_id):
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                      "transaction.timeout.ms": 120000})
        p.init_transactions(60)
        return p

    committed = producer("tx-committed")
    committed.begin_transaction()
    committed.produce("orders", b"v", partition=0)
    committed.produce("orders", b"v", partition=1)
    committed.commit_transaction(60)

    aborted = producer("tx-aborted")
    aborted.begin_transaction()
    aborted.produce("orders", b"v", partition=1)
    aborted.flush(60)
    aborted.abort_transaction(60)

    open_ = producer("tx-open")
    open_.begin_transaction()
    open_.produce("orders", b"v", partition=1)
    open_.flush(60)         # delivered, so its partition was added: the transaction is Ongoing

    def completed():
        # the coordinator writes CompleteCommit/CompleteAbort once the markers are written
        rows = _listing(capsys, bootstrap)
        states = {tid: row[3] for tid, row in rows.items()}
        wanted = {"tx-committed": "CompleteCommit", "tx-aborted": "CompleteAbort",
                  "tx-open": "Ongoing"}
        return rows if states == wanted else None

    listing = wait_for(completed, timeout_s=60, what="the three transactions in the log")
    for tid, row in listing.items():
        leader = cluster.leader_of("__transaction_state", _coordinator_partition(tid, 5))
        assert row[1] == str(leader), tid
    assert len({row[2] for row in listing.values()}) == 3     # a producer id each

    row = _describe(capsys, bootstrap, "tx-open")
    assert row[:6] == [listing["tx-open"][1], "tx-open", listing["tx-open"][2], "0", "Ongoing",
                       "120000"]
    assert int(row[6]) > 0 and int(row[7]) >= 0
    assert row[8] == "orders-1"

    row = _describe(capsys, bootstrap, "tx-committed")
    assert row[1:6] == ["tx-committed", listing["tx-committed"][2], "0", "CompleteCommit",
                        "120000"]
    assert int(row[6]) > 0 and row[8] == ""     # a completed transaction keeps no partitions

    # a second producer with the same id fences the first: the coordinator aborts the open
    # transaction with a bumped epoch, then gives the new producer the next one (Empty)
    producer("tx-open")

    def reinitialized():
        described = _describe(capsys, bootstrap, "tx-open")
        return described if described[4] == "Empty" else None

    row = wait_for(reinitialized, timeout_s=60, what="tx-open re-initialized")
    assert int(row[3]) >= 2 and row[6:9] == ["None", "None", ""]
    assert row[2] == listing["tx-open"][2]      # the same producer id, a newer epoch
