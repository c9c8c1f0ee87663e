"""``kafkalite groups``: Kafka's kafka-consumer-groups tool, for both generations of groups.

    kafkalite groups list [--state]
    kafkalite groups describe --group G | --all-groups [--members [--verbose] | --state]
    kafkalite groups reset-offsets --group G --topic T[:0,1] | --all-topics
                                   --to-earliest|--to-latest|--to-offset N|--shift-by N
                                   [--execute]
    kafkalite groups delete --group G

(or Kafka's flag style: ``--list``, ``--describe``, ``--reset-offsets``, ``--delete``).

Which groups, as Kafka 0.9-1.x's tool chose them: with ``--bootstrap-server`` (or no flag at
all: 127.0.0.1:9092) the groups of the brokers' group coordinator (Kafka 0.9+, every Kafka
client and kafkalite's ``Consumer(group_id=...)``); with ``--zookeeper`` (or
KAFKALITE_ZOOKEEPER) Kafka 0.8's groups kept in ZooKeeper (``Consumer(..., zookeeper=...)``).
A note on stderr says which kind a listing or description shows, as Kafka's tools printed.

``describe`` prints Kafka's columns, ``-`` where a value is missing::

    GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID

``--members``: ``GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS``
(``ASSIGNMENT`` with ``--verbose``); ``--state``: ``GROUP COORDINATOR (ID)
ASSIGNMENT-STRATEGY STATE #MEMBERS`` (coordinator groups). ``reset-offsets`` without
``--execute`` only prints the plan (GROUP TOPIC PARTITION NEW-OFFSET); it is refused while the
group has live members, as in Kafka. ``delete`` removes a group without live members.
"""

from __future__ import annotations

import click

from kafkalite.cli.options import (
    ActionCommand,
    CliError,
    Endpoints,
    admin_client,
    bootstrap_option,
    pick_action,
    quiet_client_logs,
    zookeeper_option,
)

ACTIONS = ("list", "describe", "reset-offsets", "delete")
DESCRIBE_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                    "CONSUMER-ID", "HOST", "CLIENT-ID")
RESET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
STATE_COLUMNS = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")

COORDINATOR_NOTE = "Note: This will not show information about old Zookeeper-based consumers."
ZOOKEEPER_NOTE = ("Note: This will only show information about consumers that use ZooKeeper "
                  "(not those using the Java consumer API).")


def _cell(value) -> str:
    return "-" if value is None else str(value)


def format_table(columns, rows, widths) -> list[str]:
    """Kafka's layout: left-aligned columns of at least ``widths`` (None = as wide as needed,
    at least 15), the last one unpadded."""
    cells = [list(columns)] + [[_cell(v) for v in row] for row in rows]
    sizes = []
    for i, width in enumerate(widths):
        longest = max(len(r[i]) for r in cells)
        sizes.append(max(width or 15, longest))
    lines = []
    for r in cells:
        parts = [r[i].ljust(sizes[i]) for i in range(len(r) - 1)] + [r[-1]]
        lines.append(" ".join(parts).rstrip())
    return lines


def describe_lines(rows) -> list[str]:
    return format_table(DESCRIBE_COLUMNS,
                        [(r.group, r.topic, r.partition, r.current_offset, r.log_end_offset,
                          r.lag, r.consumer_id, r.host, r.client_id) for r in rows],
                        (None, None, 10, 15, 15, 15, None, None, None))


def members_lines(group: str, members, verbose: bool = False) -> list[str]:
    """Kafka's ``--members`` table (GROUP-INSTANCE-ID only when a member has one, ASSIGNMENT
    with ``--verbose``: ``topic(0,1), other(2)``)."""
    static = any(x.group_instance_id for x in members)
    columns = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if static else []) + \
        ["HOST", "CLIENT-ID", "#PARTITIONS"] + (["ASSIGNMENT"] if verbose else [])
    widths = [None, None] + ([17] if static else []) + [None, None, 15] + \
        ([None] if verbose else [])
    rows = []
    for x in members:
        row = [group, x.member_id] + ([x.group_instance_id or ""] if static else []) + \
            [x.host or "", x.client_id or "", len(x.assignment)]
        if verbose:
            by_topic: dict[str, list[int]] = {}
            for tp in x.assignment:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            row.append(", ".join(f"{t}({','.join(map(str, sorted(ps)))})"
                                 for t, ps in sorted(by_topic.items())) or None)
        rows.append(row)
    return format_table(columns, rows, widths)


def state_lines(description) -> list[str]:
    c = description.coordinator
    coordinator = f"{c.host}:{c.port} ({c.node_id})" if c is not None else None
    width = max(25, len(coordinator or ""))
    return format_table(STATE_COLUMNS,
                        [(description.group_id, coordinator,
                          description.assignment_strategy or None, description.state,
                          len(description.members))],
                        (width, 25, 20, 15, None))


def reset_lines(group: str, plan: dict) -> list[str]:
    return format_table(RESET_COLUMNS,
                        [(group, tp.topic, tp.partition, offset)
                         for tp, offset in sorted(plan.items())],
                        (None, None, 10, None))


def _parse_topic_arg(text: str) -> tuple[str, list[int] | None]:
    """Kafka's ``--topic t`` or ``--topic t:0,1,2``."""
    name, sep, parts = text.partition(":")
    if not sep:
        return name, None
    try:
        return name, [int(p) for p in parts.split(",") if p.strip()]
    except ValueError:
        raise CliError(f"--topic {text!r}: expected TOPIC or TOPIC:PARTITION,PARTITION,...",
                       exit_code=2) from None


@click.command("groups", cls=ActionCommand, actions=ACTIONS,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--list", "list_", is_flag=True, help="list the consumer groups")
@click.option("--describe", is_flag=True, help="offsets, lag and owners of a group")
@click.option("--reset-offsets", is_flag=True, help="plan (or --execute) new offsets")
@click.option("--delete", is_flag=True, help="delete a group without live members")
@click.option("--group", help="the consumer group")
@click.option("--all-groups", is_flag=True, help="--describe: every group")
@click.option("--members", is_flag=True, help="--describe: the members, not the partitions")
@click.option("--state", is_flag=True,
              help="--describe: coordinator, strategy, state, members; --list: with states")
@click.option("--verbose", is_flag=True, help="--describe --members: each one's partitions")
@click.option("--offsets", is_flag=True, help="--describe: the partitions (the default)")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC[:P,P]",
              help="--reset-offsets: topic (and partitions) to reset (repeatable)")
@click.option("--all-topics", is_flag=True,
              help="--reset-offsets: every topic the group has offsets for")
@click.option("--to-earliest", is_flag=True)
@click.option("--to-latest", is_flag=True)
@click.option("--to-offset", type=int)
@click.option("--shift-by", type=int)
@click.option("--execute", is_flag=True, help="--reset-offsets: write the new offsets")
@click.option("--dry-run", is_flag=True, help="--reset-offsets: only print the plan (default)")
@bootstrap_option
@zookeeper_option
@click.pass_context
def command(ctx, list_, describe, reset_offsets, delete, group, all_groups, members, state,
            verbose, offsets, topics, all_topics, to_earliest, to_latest, to_offset, shift_by,
            execute, dry_run, bootstrap_server, zookeeper):
    """List, describe, reset and delete consumer groups (Kafka's kafka-consumer-groups):
    the brokers' groups with --bootstrap-server, Kafka 0.8's ZooKeeper groups with --zookeeper."""
    action = pick_action({"list": list_, "describe": describe, "reset-offsets": reset_offsets,
                          "delete": delete}, "groups")
    if action != "list" and not group and not (action == "describe" and all_groups):
        raise CliError(f"groups --{action} needs --group NAME", exit_code=2)
    if sum((members, state, offsets)) > 1:
        raise CliError("groups --describe takes one of --members, --state, --offsets",
                       exit_code=2)
    endpoints = Endpoints(ctx, bootstrap_server, zookeeper)
    from kafkalite.client.admin_groups import COORDINATOR, ZOOKEEPER

    # Kafka 0.9-1.x's rule: --zookeeper means the old (ZooKeeper) consumers' groups
    kind = ZOOKEEPER if endpoints.zookeeper is not None else COORDINATOR
    zk = None
    if kind == ZOOKEEPER:
        zk = endpoints.require_zookeeper(
            f"groups --{action}", "Kafka 0.8's consumer groups are kept in ZooKeeper")
        if state:
            raise CliError("--state describes groups of the brokers' group coordinator; "
                           "Kafka 0.8's ZooKeeper groups have no coordinator or state: pass "
                           "--bootstrap-server without --zookeeper", exit_code=2)
    quiet_client_logs()
    with admin_client(endpoints, zk, connect_zookeeper=zk is not None) as admin:
        if action in ("list", "describe"):
            click.echo(ZOOKEEPER_NOTE if kind == ZOOKEEPER else COORDINATOR_NOTE, err=True)
        if action == "list":
            listed = admin.list_consumer_groups(kind=kind)
            if state:
                for line in format_table(("GROUP", "STATE"),
                                         [(g, g.state) for g in listed], (None, None)):
                    click.echo(line)
            else:
                for name in listed:
                    click.echo(name)
        elif action == "describe":
            names = ([str(g) for g in admin.list_consumer_groups(kind=kind)] if all_groups
                     else [group])
            if kind == ZOOKEEPER:
                _describe_zookeeper(admin, names, members)
            else:
                _describe_coordinator(admin, names, members, state, verbose)
        elif action == "reset-offsets":
            _reset(admin, kind, group, topics, all_topics, to_earliest, to_latest, to_offset,
                   shift_by, execute, dry_run)
        else:
            admin.delete_consumer_group(group, kind=kind)
            click.echo(f"Deletion of requested consumer groups ('{group}') was "
                       f"successful.")


def _describe_coordinator(admin, groups, members_only, state_only, verbose):
    from kafkalite import errors

    for group in groups:
        [description] = admin.describe_consumer_groups([group], kind="coordinator")
        if description.state == "Dead":
            if members_only or state_only:
                raise errors.GroupIdNotFoundError(f"consumer group '{group}' does not exist")
        elif description.state == "Empty":
            click.echo(f"\nConsumer group '{group}' has no active members.", err=True)
        elif description.state in ("PreparingRebalance", "CompletingRebalance"):
            click.echo(f"\nWarning: Consumer group '{group}' is rebalancing.", err=True)
        if state_only:
            lines = state_lines(description)
        elif members_only:
            if not description.members:
                continue
            lines = members_lines(group, description.members, verbose)
        else:
            rows = admin.describe_consumer_group(group, kind="coordinator")
            if not rows:
                continue
            lines = describe_lines(rows)
        click.echo()
        for line in lines:
            click.echo(line)


def _describe_zookeeper(admin, groups, members_only):
    for group in groups:
        rows = admin.describe_consumer_group(group, kind="zookeeper")
        live = admin.consumer_group_members(group, kind="zookeeper")
        click.echo()
        if not live:
            click.echo(f"Consumer group '{group}' has no active members.")
            if members_only:
                continue
            click.echo()
        if members_only:
            counts: dict[str, int] = {m: 0 for m in live}
            hosts: dict[str, str | None] = {}
            for r in rows:
                if r.consumer_id is not None:
                    hosts[r.consumer_id] = r.host
                    if r.partition is not None:
                        counts[r.consumer_id] = counts.get(r.consumer_id, 0) + 1
            for line in format_table(("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID",
                                      "#PARTITIONS"),
                                     [(group, m, hosts.get(m), None, n)
                                      for m, n in sorted(counts.items())],
                                     (None, None, None, None, None)):
                click.echo(line)
            continue
        for line in describe_lines(rows):
            click.echo(line)


def _reset(admin, kind, group, topics, all_topics, to_earliest, to_latest, to_offset,
           shift_by, execute, dry_run):
    chosen = [name for name, on in (("--to-earliest", to_earliest), ("--to-latest", to_latest),
                                    ("--to-offset", to_offset is not None),
                                    ("--shift-by", shift_by is not None)) if on]
    if len(chosen) != 1:
        raise CliError("groups --reset-offsets needs exactly one of --to-earliest, "
                       "--to-latest, --to-offset N, --shift-by N"
                       + (f" (got {', '.join(chosen)})" if chosen else ""), exit_code=2)
    if execute and dry_run:
        raise CliError("--execute and --dry-run contradict each other", exit_code=2)
    if bool(topics) == bool(all_topics):
        raise CliError("groups --reset-offsets needs --topic TOPIC[:PARTITIONS] (repeatable) "
                       "or --all-topics", exit_code=2)
    strategy = {"to_earliest": to_earliest, "to_latest": to_latest, "to_offset": to_offset,
                "shift_by": shift_by, "execute": execute, "kind": kind}
    plan: dict = {}
    if all_topics:
        plan.update(admin.reset_consumer_group_offsets(group, None, **strategy))
    else:
        # plan every topic first, so a bad one changes nothing
        parsed = [_parse_topic_arg(t) for t in topics]
        dry = {**strategy, "execute": False}
        for name, partitions in parsed:
            plan.update(admin.reset_consumer_group_offsets(group, name, partitions=partitions,
                                                           **dry))
        if execute:
            for name, partitions in parsed:
                admin.reset_consumer_group_offsets(group, name, partitions=partitions,
                                                   **strategy)
    click.echo()
    for line in reset_lines(group, plan):
        click.echo(line)
    if not execute:
        click.echo("\nThis was a dry run: nothing changed. Add --execute to write these "
                   "offsets.", err=True)
