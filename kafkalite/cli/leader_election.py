"""``kafkalite leader-election``: Kafka's kafka-leader-election tool (preferred elections).

    kafkalite leader-election --preferred --topic t --partition 0
    kafkalite leader-election --preferred --topic t            # every partition of t
    kafkalite leader-election --preferred --all-topic-partitions
    kafkalite leader-election --election-type PREFERRED --path-to-json-file partitions.json

The request goes to the controller through ``/admin/preferred_replica_election`` (Kafka's
ZooKeeper-era path); the tool waits for the controller and reports, as Kafka does::

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2

A partition whose preferred replica is not live or not in the ISR is reported as an error and
the exit status is 1. Unclean elections are not offered. Since the request is a znode, the tool
needs ``--zookeeper`` (or KAFKALITE_ZOOKEEPER); with ``--bootstrap-server`` alone it stops with an
error naming the flag (kafkalite brokers do not serve ElectLeaders yet).
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
from kafkalite.errors import ElectionNotNeededError

JSON_FORMAT = '{"partitions":[{"topic":"t","partition":0}]}'


def _read_partitions(path: str) -> list[tuple[str, int]]:
    return [(item["topic"], item["partition"])
            for item in read_partition_entries(path, JSON_FORMAT, ("partition",))]


@click.command("leader-election", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--preferred", is_flag=True, help="elect each partition's preferred replica")
@click.option("--election-type", type=click.Choice(["preferred", "unclean"],
                                                   case_sensitive=False),
              help="Kafka's spelling of --preferred")
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
    """Move leadership back to preferred replicas (Kafka's kafka-leader-election)."""
    if election_type is not None and election_type.lower() == "unclean":
        raise CliError("unclean leader election is not offered by kafkalite; set "
                       "unclean.leader.election.enable=true on the topic instead", exit_code=2)
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
    zk = endpoints.require_zookeeper(
        "leader-election", "the election request is written to "
        "/admin/preferred_replica_election for the controller")
    quiet_client_logs()
    with admin_client(endpoints, zk, connect_zookeeper=True) as admin:
        if all_topic_partitions:
            partitions = None
        elif path_to_json_file is not None:
            partitions = _read_partitions(path_to_json_file)
        elif partition is not None:
            partitions = [(topic, partition)]
        else:
            [desc] = admin.describe_topics([topic])
            partitions = [(topic, p.partition) for p in desc.partitions]
        results = admin.elect_preferred_leaders(partitions, timeout_ms=timeout_ms)
    elected = [str(tp) for tp, err in results.items() if err is None]
    not_needed = [str(tp) for tp, err in results.items()
                  if isinstance(err, ElectionNotNeededError)]
    failed = {tp: err for tp, err in results.items()
              if err is not None and not isinstance(err, ElectionNotNeededError)}
    if elected:
        click.echo(f"Successfully completed leader election (PREFERRED) for partitions "
                   f"{', '.join(elected)}")
    if not_needed:
        click.echo(f"Valid replica already elected for partitions {', '.join(not_needed)}")
    for tp, err in failed.items():
        click.echo(f"Error completing leader election (PREFERRED) for partition: {tp}: "
                   f"{err.message}")
    if failed:
        raise CliError(f"{len(failed)} replica(s) could not be elected")
