"""``kafkalite delete-records``: Kafka's kafka-delete-records tool.

    kafkalite delete-records --bootstrap-server h:9092 --offset-json-file offsets.json

with ``offsets.json`` as Kafka's (offset -1: the high watermark)::

    {"partitions": [{"topic": "t", "partition": 0, "offset": 3}], "version": 1}

Every record below each offset is deleted (the partitions' log start offsets move up) and the
output is Kafka's::

    Executing records delete operation
    Records delete operation completed:
    partition: t-0	low_watermark: 3

A partition that failed prints ``partition: t-1	error: ...`` and the exit status is 1.
"""

from __future__ import annotations

import click

from kafkalite.cli.options import (
    CliError,
    admin_client,
    bootstrap_option,
    brokers_from,
    quiet_client_logs,
    read_partition_entries,
    zookeeper_option,
)

JSON_FORMAT = '{"partitions":[{"topic":"t","partition":0,"offset":3}],"version":1}'


def read_offsets(path: str) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for item in read_partition_entries(path, JSON_FORMAT, ("partition", "offset")):
        tp = (item["topic"], item["partition"])
        if tp in out:
            raise CliError(f"Offset json file contains duplicate topic partitions: "
                           f"{tp[0]}-{tp[1]}")
        out[tp] = item["offset"]
    return out


@click.command("delete-records", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--offset-json-file", required=True, type=click.Path(dir_okay=False),
              help=f"partitions and offsets, e.g. {JSON_FORMAT}")
@click.option("--timeout-ms", type=int, default=30000, show_default=True,
              help="how long the leaders may wait for their followers")
@bootstrap_option
@zookeeper_option
@click.pass_context
def command(ctx, offset_json_file, timeout_ms, bootstrap_server, zookeeper):
    """Delete the records below given offsets (Kafka's kafka-delete-records)."""
    offsets = read_offsets(offset_json_file)
    quiet_client_logs()
    with admin_client(brokers_from(ctx, bootstrap_server, zookeeper)) as admin:
        click.echo("Executing records delete operation")
        results = admin.delete_records(offsets, timeout_ms=timeout_ms, raise_on_error=False)
    click.echo("Records delete operation completed:")
    failed = False
    for tp, result in results.items():
        if isinstance(result, Exception):
            failed = True
            click.echo(f"partition: {tp.topic}-{tp.partition}\terror: {result}")
        else:
            click.echo(f"partition: {tp.topic}-{tp.partition}\tlow_watermark: {result}")
    if failed:
        ctx.exit(1)
