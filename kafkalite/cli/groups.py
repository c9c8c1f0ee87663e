"""``kafkalite groups``: Kafka's kafka-consumer-groups tool, for ZooKeeper-based groups.

    kafkalite groups list
    kafkalite groups describe --group G [--members]
    kafkalite groups reset-offsets --group G --topic T[:0,1] --to-earliest|--to-latest|
                                   --to-offset N|--shift-by N [--execute]
    kafkalite groups delete --group G

(or Kafka's flag style: ``--list``, ``--describe``, ``--reset-offsets``, ``--delete``).

Membership, owners and committed offsets are read from ZooKeeper (``/consumers/<g>``); log end
offsets from the partition leaders. These are Kafka 0.8's ZooKeeper groups, so every action needs
``--zookeeper`` (or KAFKALITE_ZOOKEEPER): with ``--bootstrap-server`` alone the command stops
with an error naming the flag (broker-side group coordinators do not exist in kafkalite yet).
With neither flag the ZooKeeper at 127.0.0.1:2181/kafkalite is used. ``describe`` prints Kafka's
columns, ``-`` where a value is missing::

    GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID

``reset-offsets`` without ``--execute`` only prints the plan (GROUP TOPIC PARTITION NEW-OFFSET);
it is refused while the group has live members, as in Kafka.
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
def command(ctx, list_, describe, reset_offsets, delete, group, all_groups, members, topics,
            all_topics, to_earliest, to_latest, to_offset, shift_by, execute, dry_run,
            bootstrap_server, zookeeper):
    """List, describe, reset and delete consumer groups (Kafka's kafka-consumer-groups)."""
    action = pick_action({"list": list_, "describe": describe, "reset-offsets": reset_offsets,
                          "delete": delete}, "groups")
    if action != "list" and not group and not (action == "describe" and all_groups):
        raise CliError(f"groups --{action} needs --group NAME", exit_code=2)
    endpoints = Endpoints(ctx, bootstrap_server, zookeeper)
    zk = endpoints.require_zookeeper(
        f"groups --{action}", "kafkalite's consumer groups are Kafka 0.8's, kept in ZooKeeper; "
        "there is no broker-side group coordinator yet")
    quiet_client_logs()
    with admin_client(endpoints, zk, connect_zookeeper=True) as admin:
        if action == "list":
            for name in admin.list_consumer_groups():
                click.echo(name)
        elif action == "describe":
            _describe(admin, admin.list_consumer_groups() if all_groups else [group],
                      members)
        elif action == "reset-offsets":
            _reset(admin, group, topics, all_topics, to_earliest, to_latest, to_offset,
                   shift_by, execute, dry_run)
        else:
            admin.delete_consumer_group(group)
            click.echo(f"Deletion of requested consumer groups ('{group}') was "
                       f"successful.")


def _describe(admin, groups, members_only):
    for group in groups:
        rows = admin.describe_consumer_group(group)
        live = admin.consumer_group_members(group)
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


def _reset(admin, group, topics, all_topics, to_earliest, to_latest, to_offset, shift_by,
           execute, dry_run):
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
                "shift_by": shift_by, "execute": execute}
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
