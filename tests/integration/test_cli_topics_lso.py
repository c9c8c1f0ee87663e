"""``kafkalite topics --describe --offsets`` against three real brokers: each partition's high
watermark and last stable offset, with a transaction of confluent-kafka (librdkafka, an
independent client) left open on one partition -- its LSO stays at the transaction's first
offset while the HW moves past it -- and both equal again once it commits. Without
``--offsets`` the lines stay Kafka's."""

from __future__ import annotations

import re

import pytest

from cli_tools import run, wait_for

pytestmark = pytest.mark.integration

LINE = re.compile(r"^\tTopic: orders\tPartition: (\d)\tLeader: \d\tReplicas: [\d,]+\tIsr: [\d,]+"
                  r"\tHighWatermark: (\d+|none)\tLastStableOffset: (\d+|none)$")


def _offsets(capsys, bootstrap) -> dict[int, tuple[str, str]]:
    code, out, err = run(capsys, "topics", "--describe", "--topic", "orders", "--offsets",
                         "--bootstrap-server", bootstrap)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Topic: orders\t")
    rows = [LINE.match(line) for line in lines[1:]]
    assert all(rows), lines
    return {int(m.group(1)): (m.group(2), m.group(3)) for m in rows}


def test_lso_stays_below_the_hw_while_a_transaction_is_open(kafkalite_cluster_factory, capsys):
    from confluent_kafka import Producer

    from kafkalite.client.admin import AdminClient
    from kafkalite.client.structs import NewTopic

    cluster = kafkalite_cluster_factory(3, transaction_state_log_num_partitions=5)
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("orders", 2, 3)])
    plain = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for n in range(3):
        plain.produce("orders", b"before-%d" % n, partition=0)
    plain.flush(30)
    wait_for(lambda: _offsets(capsys, bootstrap) == {0: ("3", "3"), 1: ("0", "0")},
             what="HW = LSO = 3 on orders-0 before any transaction")

    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "lso-open",
                    "transaction.timeout.ms": 120000})
    txn.init_transactions(60)
    txn.begin_transaction()
    for n in range(4):
        txn.produce("orders", b"txn-%d" % n, partition=0)
    txn.flush(60)
    # a non-transactional write after the open transaction's records: the HW moves, the LSO
    # stays at the transaction's first offset (3)
    plain.produce("orders", b"after", partition=0)
    plain.flush(30)
    open_rows = wait_for(lambda: (r := _offsets(capsys, bootstrap))[0][0] == "8" and r,
                         what="the HW of orders-0 at 8")
    assert open_rows == {0: ("8", "3"), 1: ("0", "0")}

    txn.commit_transaction(60)
    # the COMMIT marker takes offset 8: HW and LSO both 9
    wait_for(lambda: _offsets(capsys, bootstrap) == {0: ("9", "9"), 1: ("0", "0")},
             what="HW = LSO = 9 on orders-0 after the commit")

    code, out, err = run(capsys, "topics", "--describe", "--topic", "orders",
                         "--bootstrap-server", bootstrap)
    assert code == 0, err
    assert not any("HighWatermark" in line or "LastStableOffset" in line
                   for line in out.splitlines())
