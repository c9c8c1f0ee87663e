"""``kafkalite topics``: Kafka's kafka-topics tool.

Either Kafka's flag style or a subcommand word::

    kafkalite topics --create --topic t --partitions 3 --replication-factor 2 [--config k=v]
    kafkalite topics create --topic t --replica-assignment 1:2,2:3,3:1
    kafkalite topics --list
    kafkalite topics describe [--topic t] [--under-replicated-partitions] [--unavailable-partitions]
    kafkalite topics --describe --topic t --offsets
    kafkalite topics alter --topic t --config retention.ms=60000 [--delete-config k]
    kafkalite topics --alter --topic t --partitions 6 [--replica-assignment ...]
    kafkalite topics delete --topic t

``--bootstrap-server`` alone is enough to list, describe, create and delete, as with Kafka 2.2+'s
kafka-topics: partitions, leaders, replicas, ISR and topic ids come from the brokers' Metadata,
config overrides from DescribeConfigs (brokers read them from ``/config/topics``). What only
ZooKeeper holds needs ``--zookeeper``:

* topics marked for deletion (``/admin/delete_topics``): shown (``- marked for deletion``,
  ``MarkedForDeletion: true``) only when ZooKeeper was chosen, as Kafka's tool shows them only
  with ``--zookeeper``; brokers drop a topic from Metadata once its deletion starts.

``--alter --config`` / ``--delete-config`` write ``/config/topics/<t>`` directly with
``--zookeeper``, and otherwise ask a broker to (IncrementalAlterConfigs), as kafka-configs does
with ``--bootstrap-server``. With neither flag, the brokers at 127.0.0.1:9092 are asked. ``--describe`` prints exactly what kafka-topics prints::

    Topic: t	TopicId: X	PartitionCount: 3	ReplicationFactor: 2	Configs: k=v
    	Topic: t	Partition: 0	Leader: 1	Replicas: 1,2	Isr: 1,2

``--offsets`` (kafkalite's addition, so that the default output stays Kafka's) appends each
partition's high watermark and last stable offset, both asked of its leader with ListOffsets
(latest; read_uncommitted gives the HW, read_committed the LSO: the first offset of the earliest
open transaction, or the HW when none is open)::

    	Topic: t	Partition: 0	Leader: 1	Replicas: 1,2	Isr: 1,2	HighWatermark: 30	LastStableOffset: 20
"""

from __future__ import annotations

import re

import click

from kafkalite.cli.options import (
    ActionCommand,
    CliError,
    Endpoints,
    admin_client,
    bootstrap_option,
    parse_properties,
    pick_action,
    quiet_client_logs,
    zookeeper_option,
)
from kafkalite.errors import (
    KafkaError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

ACTIONS = ("create", "list", "describe", "alter", "delete")
NO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"   # Kafka prints the zero UUID for a topic without an id


def _validate_configs(configs: dict[str, str]) -> None:
    from kafkalite.config import TopicConfig

    TopicConfig.from_dict(configs)     # ConfigError naming the key, the value and what's allowed


def _select(names: list[str], pattern: str | None) -> list[str]:
    """Kafka's --topic takes a name or a regular expression (``t.*``, ``a|b``)."""
    if pattern is None:
        return names
    if pattern in names:
        return [pattern]
    if re.fullmatch(r"[A-Za-z0-9._-]+", pattern):
        return []                      # a plain name that does not exist
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise CliError(f"--topic {pattern!r} is neither a topic name nor a valid regular "
                       f"expression ({exc})", exit_code=2) from None
    return [n for n in names if regex.fullmatch(n)]


def format_topic_line(name: str, topic_id: str | None, partitions: list, configs: dict,
                      marked: bool = False) -> str:
    rf = len(partitions[0].replicas) if partitions else 0
    line = (f"Topic: {name}\tTopicId: {topic_id or NO_TOPIC_ID}\tPartitionCount: "
            f"{len(partitions)}\tReplicationFactor: {rf}\tConfigs: "
            + ",".join(f"{k}={v}" for k, v in sorted(configs.items())))
    if marked:
        line += "\tMarkedForDeletion: true"
    return line


def format_partition_line(name: str, p, marked: bool = False,
                          offsets: tuple[int | None, int | None] | None = None) -> str:
    """``offsets``: (high watermark, last stable offset) for ``--offsets`` (None: not asked;
    an offset None: its leader did not answer, printed ``none``)."""
    leader = p.leader if p.leader is not None and p.leader >= 0 else "none"
    line = (f"\tTopic: {name}\tPartition: {p.partition}\tLeader: {leader}\tReplicas: "
            f"{','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}")
    if offsets is not None:
        hw, lso = ("none" if o is None else o for o in offsets)
        line += f"\tHighWatermark: {hw}\tLastStableOffset: {lso}"
    if marked:
        line += "\tMarkedForDeletion: true"
    return line


@click.command("topics", cls=ActionCommand, actions=ACTIONS,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--create", is_flag=True, help="create a topic")
@click.option("--list", "list_", is_flag=True, help="list the topics")
@click.option("--describe", is_flag=True, help="partitions, leaders, replicas, ISR and configs")
@click.option("--alter", is_flag=True,
              help="add partitions (--partitions) or change a topic's config overrides")
@click.option("--delete", is_flag=True, help="delete a topic")
@click.option("--topic", help="topic name (or, for --list/--describe/--delete, a regex)")
@click.option("--partitions", type=int,
              help="number of partitions (--create; --alter: the new, larger total)")
@click.option("--replication-factor", type=int, help="replicas per partition (--create)")
@click.option("--replica-assignment", metavar="1:2,2:3",
              help="explicit replicas: partition i's broker ids, ':'-separated, comma between "
                   "partitions (--create; --alter with --partitions: the new partitions')")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="topic config override (repeatable; --create, --alter)")
@click.option("--delete-config", "delete_configs", multiple=True, metavar="KEY",
              help="remove a config override (repeatable; --alter)")
@click.option("--if-not-exists", is_flag=True, help="--create: no error if it exists")
@click.option("--if-exists", is_flag=True, help="--alter/--delete: no error if it is missing")
@click.option("--under-replicated-partitions", is_flag=True,
              help="--describe: only partitions whose ISR is smaller than their replicas")
@click.option("--unavailable-partitions", is_flag=True,
              help="--describe: only partitions without a live leader")
@click.option("--topics-with-overrides", is_flag=True,
              help="--describe: only topics that have config overrides")
@click.option("--offsets", "with_offsets", is_flag=True,
              help="--describe: each partition's high watermark and last stable offset (LSO, "
                   "below the HW while a transaction is open; a kafkalite addition)")
@click.option("--exclude-internal", is_flag=True, hidden=True, help="accepted for Kafka habits")
@bootstrap_option
@zookeeper_option
@click.pass_context
def command(ctx, create, list_, describe, alter, delete, topic, partitions, replication_factor,
            replica_assignment, configs, delete_configs, if_not_exists, if_exists,
            under_replicated_partitions, unavailable_partitions, topics_with_overrides,
            with_offsets, exclude_internal, bootstrap_server, zookeeper):
    """Create, list, describe, alter and delete topics (Kafka's kafka-topics)."""
    action = pick_action({"create": create, "list": list_, "describe": describe,
                          "alter": alter, "delete": delete}, "topics")
    quiet_client_logs()
    endpoints = Endpoints(ctx, bootstrap_server, zookeeper)
    zk = endpoints.zookeeper            # optional details (deletion marks), when chosen
    with admin_client(endpoints, zk) as admin:
        if action == "create":
            _create(admin, topic, partitions, replication_factor, replica_assignment,
                    configs, if_not_exists)
        elif action == "list":
            _list(admin, topic, zk is not None)
        elif action == "describe":
            _describe(admin, topic, under_replicated_partitions, unavailable_partitions,
                      topics_with_overrides, zk is not None, with_offsets)
        elif action == "alter":
            _alter(admin, topic, partitions, configs, delete_configs, if_exists,
                   replica_assignment)
        else:
            _delete(admin, topic, if_exists)


def _need_topic(topic: str | None, action: str) -> str:
    if not topic:
        raise CliError(f"topics --{action} needs --topic NAME", exit_code=2)
    return topic


def _create(admin, topic, partitions, replication_factor, replica_assignment, configs,
            if_not_exists):
    from kafkalite.client.structs import NewTopic
    from kafkalite.controller.assignment import parse_replica_assignment

    topic = _need_topic(topic, "create")
    overrides = parse_properties(configs, "--config")
    _validate_configs(overrides)
    if replica_assignment:
        if partitions is not None or replication_factor is not None:
            raise CliError("--replica-assignment already fixes the partitions and replicas; "
                           "leave out --partitions and --replication-factor", exit_code=2)
        assignment = parse_replica_assignment(replica_assignment)
        new = NewTopic(topic, replica_assignments=assignment, topic_configs=overrides)
    else:
        for name, value in (("--partitions", partitions),
                            ("--replication-factor", replication_factor)):
            if value is not None and value < 1:
                raise CliError(f"{name} must be at least 1, got {value}", exit_code=2)
        new = NewTopic(topic, partitions if partitions is not None else -1,
                       replication_factor if replication_factor is not None else -1,
                       topic_configs=overrides)
    try:
        admin.create_topics([new])
    except TopicAlreadyExistsError:
        if if_not_exists:
            return
        raise CliError(f"topic '{topic}' already exists (add --if-not-exists to ignore "
                       f"that)") from None
    click.echo(f"Created topic {topic}.")


def _list(admin, pattern, with_zookeeper: bool = False):
    names = _select(admin.list_topics(), pattern)
    marked = set(admin.list_topics_marked_for_deletion()) if with_zookeeper else set()
    for name in names:
        click.echo(f"{name} - marked for deletion" if name in marked else name)


def _describe(admin, pattern, under_replicated, unavailable, with_overrides,
              with_zookeeper: bool = False, with_offsets: bool = False):
    names = _select(admin.list_topics(), pattern)
    if pattern is not None and not names:
        raise UnknownTopicOrPartitionError(f"topic '{pattern}' does not exist (see "
                                           f"'kafkalite topics --list')")
    if not names:
        return
    descriptions = admin.describe_topics(names)
    marked = set(admin.list_topics_marked_for_deletion()) if with_zookeeper else set()
    live = {b.node_id for b in admin.describe_cluster().brokers}
    report_partitions_only = under_replicated or unavailable
    all_configs = {}
    if with_overrides or not report_partitions_only:
        all_configs = _topic_configs(admin, [d.name for d in descriptions])
    offsets = _partition_offsets(admin, descriptions) if with_offsets else None
    for desc in descriptions:
        is_marked = desc.name in marked
        configs = all_configs.get(desc.name, {})
        if with_overrides:
            if configs:
                click.echo(format_topic_line(desc.name, desc.topic_id, desc.partitions,
                                             configs, is_marked))
            continue
        if not report_partitions_only:
            click.echo(format_topic_line(desc.name, desc.topic_id, desc.partitions,
                                         configs, is_marked))
        for p in desc.partitions:
            no_leader = p.leader is None or p.leader < 0 or p.leader not in live
            if under_replicated and not len(p.isr) < len(p.replicas):
                continue
            if unavailable and not no_leader:
                continue
            got = None if offsets is None else offsets.get((desc.name, p.partition), (None, None))
            click.echo(format_partition_line(desc.name, p, is_marked, got))


def _partition_offsets(admin, descriptions) -> dict[tuple[str, int], tuple]:
    """``{(topic, partition): (high watermark, last stable offset)}`` from the leaders:
    ListOffsets latest, read_uncommitted then read_committed (Kafka's answer to a
    read_committed "latest" is the LSO). A partition whose leader does not answer in time is
    left out (printed ``none``)."""
    from kafkalite.client.structs import TopicPartition
    from kafkalite.protocol.messages import READ_COMMITTED

    tps = [TopicPartition(d.name, p.partition) for d in descriptions for p in d.partitions
           if p.leader is not None and p.leader >= 0]
    if not tps:
        return {}
    high = admin._list_offsets(tps, -1)   # noqa: SLF001 - the admin client's leader lookup
    stable = admin._list_offsets(tps, -1, isolation_level=READ_COMMITTED)  # noqa: SLF001
    return {(tp.topic, tp.partition): (high.get(tp), stable.get(tp)) for tp in tps}


def _topic_configs(admin, names: list[str]) -> dict[str, dict[str, str]]:
    """Config overrides of ``names`` from a broker; a topic deleted meanwhile has none."""
    try:
        return admin.describe_topic_configs(names)
    except UnknownTopicOrPartitionError:
        out = {}
        for name in names:
            try:
                out[name] = admin.describe_topic_config(name)
            except UnknownTopicOrPartitionError:
                out[name] = {}
        return out


def _alter(admin, topic, partitions, configs, delete_configs, if_exists,
           replica_assignment=None):
    topic = _need_topic(topic, "alter")
    updates: dict[str, str | None] = dict(parse_properties(configs, "--config"))
    for key in delete_configs:
        updates[key] = None
    if replica_assignment and partitions is None:
        raise CliError("topics --alter --replica-assignment needs --partitions N (the new "
                       "total)", exit_code=2)
    if not updates and partitions is None:
        raise CliError("topics --alter needs --partitions N, --config KEY=VALUE or "
                       "--delete-config KEY", exit_code=2)
    if partitions is not None:
        if not _add_partitions(admin, topic, partitions, replica_assignment, if_exists):
            return
        if not updates:
            return
    try:
        admin.alter_topic_config(topic, updates)
    except UnknownTopicOrPartitionError:
        if if_exists:
            return
        raise UnknownTopicOrPartitionError(
            f"topic '{topic}' does not exist (see 'kafkalite topics --list')") from None
    click.echo(f"Updated config for topic {topic}.")


def _add_partitions(admin, topic, partitions, replica_assignment, if_exists) -> bool:
    """``--alter --partitions N``: grow the topic to N partitions (CreatePartitions). False when
    the topic is missing and ``--if-exists`` was given."""
    from kafkalite.client.structs import NewPartitions
    from kafkalite.controller.assignment import parse_replica_assignment
    from kafkalite.errors import InvalidPartitionsError

    if partitions < 1:
        raise CliError(f"--partitions must be at least 1, got {partitions}", exit_code=2)
    try:
        current = len(admin.describe_topics([topic])[0].partitions)
    except UnknownTopicOrPartitionError:
        if if_exists:
            return False
        raise UnknownTopicOrPartitionError(
            f"topic '{topic}' does not exist (see 'kafkalite topics --list')") from None
    new_assignments = None
    if replica_assignment:
        # Kafka 2.8's kafka-topics: the list covers every partition and the entries past the
        # existing ones are the new partitions'; a list of just the new ones is taken too
        assignment = parse_replica_assignment(replica_assignment)
        lists = [assignment[p] for p in sorted(assignment)]
        if len(lists) == partitions:
            lists = lists[current:]
        elif len(lists) != partitions - current:
            raise CliError(f"--replica-assignment lists {len(lists)} partition(s): give all "
                           f"{partitions} (the existing {current} and the new ones) or only the "
                           f"{max(partitions - current, 0)} new one(s)", exit_code=2)
        new_assignments = lists
    try:
        admin.create_partitions({topic: NewPartitions(partitions, new_assignments)})
    except InvalidPartitionsError as exc:
        raise InvalidPartitionsError(f"topic '{topic}': {exc.message} The number of partitions "
                                     f"can only be increased.") from None
    except UnknownTopicOrPartitionError:
        if if_exists:
            return False
        raise
    click.echo("WARNING: If partitions are increased for a topic that has a key, the partition "
               "logic or ordering of the messages will be affected")
    click.echo("Adding partitions succeeded!")
    return True


def _delete(admin, pattern, if_exists):
    pattern = _need_topic(pattern, "delete")
    names = _select(admin.list_topics(), pattern)
    if not names:
        if if_exists:
            return
        raise UnknownTopicOrPartitionError(
            f"topic '{pattern}' does not exist (see 'kafkalite topics --list')")
    results = admin.delete_topics(names, raise_on_error=False)
    failed: list[str] = []
    for name, error in results.items():
        if error is None:
            click.echo(f"Deleted topic {name}.")
        elif isinstance(error, RequestTimedOutError):
            click.echo(f"Topic {name} is marked for deletion.")
        else:
            failed.append(f"topic '{name}': {error}")
    if failed:
        raise KafkaError("; ".join(failed))
