"""``kafkalite transactions list|describe``: Kafka 3.0's kafka-transactions tool, for kafkalite's
(and Kafka 2.8's) transaction coordinators.

    kafkalite transactions [--bootstrap-server h:9092] list
    kafkalite transactions [--bootstrap-server h:9092] describe --transactional-id ID

Kafka 3.0's tool asks the coordinators (ListTransactions, DescribeTransactions: KIP-664, which
Kafka 2.8 does not have). This one reads what those answers are made of, the coordinators'
log: it assigns every partition of ``__transaction_state``, reads each from its start to its
end offset with kafkalite's Consumer, keeps the newest value per transactional id (a tombstone
removes the id) and decodes it with kafkalite.txn.log_records, byte for byte Kafka's format --
so it reads a Kafka 2.8 cluster too. The coordinator of an id is the leader of its partition.

The output is Kafka 3.0's: the same headers, each column padded to its widest cell and followed
by a tab (its ``prettyPrintTable``)::

    TransactionalId	Coordinator	ProducerId	TransactionState
    my-txn         	1          	4000      	Ongoing

    CoordinatorId	TransactionalId	ProducerId	ProducerEpoch	TransactionState
    TransactionTimeoutMs	CurrentTransactionStartTimeMs	TransactionDurationMs	TopicPartitions

(describe's nine columns on one line). What differs from asking a live coordinator: the state
is the last one written (Kafka writes each state before taking it, so they agree once the
write is acknowledged); an Empty id shows start time ``None``, as Kafka shows it after the id's
coordinator has reloaded the log (its memory keeps the older start until then); ids listed in
the order of their coordinator, then name (Kafka: per broker, in its hash map's order); the
partitions sorted. A Dead id is left out, as Kafka leaves it out.
"""

from __future__ import annotations

import time

import click

from kafkalite.cli.client_security import environment_security
from kafkalite.cli.options import CliError, admin_client, bootstrap_option, quiet_client_logs
from kafkalite.errors import CorruptRecordError, UnknownTopicOrPartitionError
from kafkalite.txn import log_records
from kafkalite.txn.log_records import TxnLogEntry
from kafkalite.txn.metadata import TxnState

TOPIC = "__transaction_state"
LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                    "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
                    "TransactionDurationMs", "TopicPartitions")
#: how long reading the log to its end may take before the tool gives up
READ_TIMEOUT_S = 60.0


# --- pure parts: folding the log, Kafka's table -------------------------------------------------

def fold(records, warn=None) -> dict[str, tuple[int, TxnLogEntry]]:
    """``{transactional_id: (partition, entry)}`` from ``(partition, offset, key, value)``
    records in offset order per partition: the newest value per id, a tombstone removing it.
    A record that does not decode is skipped (``warn(message)`` is told), as a tool should not
    stop on one bad record."""
    state: dict[str, tuple[int, TxnLogEntry]] = {}
    for partition, offset, key, value in records:
        try:
            transactional_id, entry = log_records.parse(key, value)
        except CorruptRecordError as exc:
            if warn is not None:
                warn(f"skipped the record at {TOPIC}-{partition} offset {offset}: {exc}")
            continue
        if entry is None:
            state.pop(transactional_id, None)
        else:
            state[transactional_id] = (partition, entry)
    return state


def table_lines(headers, rows) -> list[str]:
    """Kafka 3.0 TransactionsCommand's prettyPrintTable: every cell padded to its column's
    width, each followed by a tab (the last one too)."""
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(headers)]
    return ["".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths))
            for row in [tuple(headers)] + [tuple(r) for r in rows]]


def list_rows(state: dict[str, tuple[int, TxnLogEntry]],
              leaders: dict[int, int]) -> list[tuple[str, ...]]:
    rows = []
    for transactional_id, (partition, entry) in state.items():
        if entry.state == TxnState.DEAD:
            continue
        rows.append((transactional_id, str(leaders.get(partition, -1)), str(entry.producer_id),
                     str(entry.state)))
    return sorted(rows, key=lambda row: (int(row[1]), row[0]))


def describe_row(transactional_id: str, partition: int, entry: TxnLogEntry,
                 leaders: dict[int, int], now_ms: int) -> tuple[str, ...]:
    if entry.start_ms >= 0:
        start, duration = str(entry.start_ms), str(now_ms - entry.start_ms)
    else:
        start = duration = "None"
    partitions = ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(entry.partitions))
    return (str(leaders.get(partition, -1)), transactional_id, str(entry.producer_id),
            str(entry.producer_epoch), str(entry.state), str(entry.transaction_timeout_ms),
            start, duration, partitions)


# --- reading __transaction_state through the brokers ------------------------------------------

def read_transaction_log(bootstrap_server: str, warn=None):
    """``(state, leaders)``: the folded log (see ``fold``) and ``{partition: leader id}``; both
    empty when the topic does not exist yet (no transactional producer has asked for a
    coordinator)."""
    from kafkalite.client.consumer import Consumer
    from kafkalite.topic_partition import TopicPartition

    with admin_client(bootstrap_server) as admin:
        try:
            (description,) = admin.describe_topics([TOPIC])
        except UnknownTopicOrPartitionError:
            return {}, {}
    leaders = {p.partition: p.leader for p in description.partitions}
    partitions = [TopicPartition(TOPIC, p) for p in sorted(leaders)]
    consumer = Consumer(bootstrap_servers=bootstrap_server, enable_auto_commit=False,
                        allow_auto_create_topics=False, **environment_security())
    try:
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        by_partition: dict[int, list] = {tp.partition: [] for tp in partitions}
        deadline = time.monotonic() + READ_TIMEOUT_S
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            if time.monotonic() > deadline:
                behind = sorted(str(tp) for tp, end in ends.items()
                                if consumer.position(tp) < end)
                raise CliError(f"could not read {TOPIC} to its end within {READ_TIMEOUT_S:.0f} "
                               f"s (still behind: {', '.join(behind)})")
            for tp, batch in consumer.poll(timeout_ms=500).items():
                by_partition[tp.partition].extend(
                    (tp.partition, r.offset, r.key, r.value) for r in batch
                    if r.offset < ends[tp])
    finally:
        consumer.close(autocommit=False)
    records = [r for p in sorted(by_partition) for r in by_partition[p]]
    return fold(records, warn), leaders


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


# --- the command --------------------------------------------------------------------------------

@click.group("transactions", context_settings={"help_option_names": ["-h", "--help"]})
@bootstrap_option
@click.pass_context
def command(ctx, bootstrap_server):
    """Analyze the transactional state in the cluster (Kafka 3.0's kafka-transactions):
    list the transactional ids, or describe one."""
    ctx.obj = bootstrap_server


def _bootstrap(ctx, own: str | None) -> str:
    # --bootstrap-server goes before the subcommand as in Kafka's tool, or after it
    return own if own is not None else ctx.obj


_sub_bootstrap = click.option("--bootstrap-server", "own_bootstrap", default=None,
                              help="as the group's --bootstrap-server, given after the "
                                   "subcommand")


@command.command("list")
@_sub_bootstrap
@click.pass_context
def list_command(ctx, own_bootstrap):
    """List the transactional ids and their states."""
    quiet_client_logs()
    state, leaders = read_transaction_log(_bootstrap(ctx, own_bootstrap), _warn)
    for line in table_lines(LIST_HEADERS, list_rows(state, leaders)):
        click.echo(line)


@command.command("describe")
@click.option("--transactional-id", "transactional_id", required=True, help="transactional id")
@_sub_bootstrap
@click.pass_context
def describe_command(ctx, transactional_id, own_bootstrap):
    """Describe the state of an active transactional id."""
    quiet_client_logs()
    state, leaders = read_transaction_log(_bootstrap(ctx, own_bootstrap), _warn)
    found = state.get(transactional_id)
    if found is None or found[1].state == TxnState.DEAD:
        raise CliError(f"Failed to describe transaction state of transactional-id "
                       f"`{transactional_id}`: The transactionalId could not be found.")
    partition, entry = found
    row = describe_row(transactional_id, partition, entry, leaders, int(time.time() * 1000))
    for line in table_lines(DESCRIBE_HEADERS, [row]):
        click.echo(line)
