"""``kafkalite leader-election``: Kafka's kafka-leader-election tool.

    kafkalite leader-election --preferred --topic t --partition 0
    kafkalite leader-election --preferred --topic t            # every partition of t
    kafkalite leader-election --preferred --all-topic-partitions
    kafkalite leader-election --election-type PREFERRED --path-to-json-file partitions.json
    kafkalite leader-election --election-type UNCLEAN --topic t --partition 0

The request goes to the controller as ElectLeaders (KIP-460), with ``--bootstrap-server``
alone, as Kafka's tool sends it; given ``--zookeeper`` (or KAFKALITE_ZOOKEEPER), a preferred
election goes through ``/admin/preferred_replica_election`` instead (Kafka's ZooKeeper-era
path). The tool waits for the controller and reports, as Kafka does::

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2

A partition that cannot be elected (preferred: its preferred replica is not live or not in the
ISR; unclean: no replica is live) is reported as an error and the exit status is 1. An unclean
election may make a replica that is not in sync the leader: the records it lacks are lost.
"""

from __future__ import annotations

import click

from kafkalite.cli.options import (
    CliError,
    Endpoints,
    admin_client,
    bootstrap_option,
    quiet_client_logs,
    read_partition_entries,
    zookeeper_option,
)
from kafkalite.client.admin_reassignment import UNCLEAN
from kafkalite.errors import ElectionNotNeededError

JSON_FORMAT = '{"partitions":[{"topic":"t","partition":0}]}'


def _read_partitions(path: str) -> list[tuple[str, int]]:
    return [(item["topic"], item["partition"])
            for item in read_partition_entries(path, JSON_FORMAT, ("partition",))]


@click.command("leader-election", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--preferred", is_flag=True, help="elect each partition's preferred replica")
@click.option("--election-type", type=click.Choice(["preferred", "unclean"],
                                                   case_sensitive=False),
              help="PREFERRED (as --preferred) or UNCLEAN (a live replica out of the ISR may "
                   "lead when no in-sync one is live)")
@click.option("--topic", help="the topic (all its partitions unless --partition)")
@click.option("--partition", type=click.IntRange(min=0), help="one partition of --topic")
@click.option("--all-topic-partitions", is_flag=True, help="every partition of every topic")
@click.option("--path-to-json-file", type=click.Path(dir_okay=False),
              help=f"the partitions, as {JSON_FORMAT}")
@click.option("--timeout-ms", type=click.IntRange(min=0), default=30000, show_default=True,
              help="how long to wait for the controller")
@bootstrap_option
@zookeeper_option
@click.pass_context
def command(ctx, preferred, election_type, topic, partition, all_topic_partitions,
            path_to_json_file, timeout_ms, bootstrap_server, zookeeper):
    """Elect partition leaders, preferred or unclean (Kafka's kafka-leader-election)."""
    unclean = election_type is not None and election_type.lower() == "unclean"
    if preferred and unclean:
        raise CliError("--preferred and --election-type UNCLEAN contradict each other",
                       exit_code=2)
    if not preferred and election_type is None:
        raise CliError("say which election: --preferred (or --election-type PREFERRED)",
                       exit_code=2)
    sources = [name for name, on in (("--topic", topic is not None),
                                     ("--all-topic-partitions", all_topic_partitions),
                                     ("--path-to-json-file", path_to_json_file is not None))
               if on]
    if len(sources) != 1:
        raise CliError("name the partitions with exactly one of --topic [--partition], "
                       "--all-topic-partitions, --path-to-json-file", exit_code=2)
    if partition is not None and topic is None:
        raise CliError("--partition needs --topic", exit_code=2)
    endpoints = Endpoints(ctx, bootstrap_server, zookeeper)
    # an unclean election has no ZooKeeper path: it always goes to the brokers
    zk = None if unclean else endpoints.zookeeper
    quiet_client_logs()
    with admin_client(endpoints, zk, connect_zookeeper=zk is not None) as admin:
        if all_topic_partitions:
            partitions = None
        elif path_to_json_file is not None:
            partitions = _read_partitions(path_to_json_file)
        elif partition is not None:
            partitions = [(topic, partition)]
        else:
            [desc] = admin.describe_topics([topic])
            partitions = [(topic, p.partition) for p in desc.partitions]
        if unclean:
            results = admin.elect_leaders(UNCLEAN, partitions, timeout_ms=timeout_ms)
        else:
            results = admin.elect_preferred_leaders(partitions, timeout_ms=timeout_ms)
    kind = "UNCLEAN" if unclean else "PREFERRED"
    elected = [str(tp) for tp, err in results.items() if err is None]
    not_needed = [str(tp) for tp, err in results.items()
                  if isinstance(err, ElectionNotNeededError)]
    failed = {tp: err for tp, err in results.items()
              if err is not None and not isinstance(err, ElectionNotNeededError)}
    if elected:
        click.echo(f"Successfully completed leader election ({kind}) for partitions "
                   f"{', '.join(elected)}")
    if not_needed:
        click.echo(f"Valid replica already elected for partitions {', '.join(not_needed)}")
    for tp, err in failed.items():
        click.echo(f"Error completing leader election ({kind}) for partition: {tp}: "
                   f"{err.message}")
    if failed:
        raise CliError(f"{len(failed)} replica(s) could not be elected")
