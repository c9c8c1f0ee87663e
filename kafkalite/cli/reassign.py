"""``kafkalite reassign``: Kafka's kafka-reassign-partitions tool, with its JSON formats.

    kafkalite reassign --generate --topics-to-move-json-file topics.json --broker-list 1,2,3
    kafkalite reassign --execute --reassignment-json-file plan.json
    kafkalite reassign --verify --reassignment-json-file plan.json
    kafkalite reassign --cancel --reassignment-json-file plan.json
    kafkalite reassign --list

(or as a word: ``kafkalite reassign generate ...``). The files:

* topics to move: ``{"topics":[{"topic":"t"}],"version":1}``
* a reassignment: ``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],
  "log_dirs":["any","any"]}]}`` (``log_dirs`` is optional and must be ``any``)

With ``--bootstrap-server`` the tool asks the controller through the brokers, as Kafka's does
(KIP-455): ``--execute`` sends AlterPartitionReassignments (printing the current assignment
first, to keep for a rollback), ``--cancel`` cancels the plan's partitions that are still moving
(their original replicas stay), ``--list`` and ``--verify`` read ListPartitionReassignments
(``--list`` shows each move's replicas and those being added and removed). Given
``--zookeeper`` (or KAFKALITE_ZOOKEEPER alone), ``--execute``, ``--list`` and ``--verify`` use
``/admin/reassign_partitions`` instead, as Kafka's ZooKeeper-era tool did; ``--cancel`` exists
only through the brokers. ``--verify`` compares each partition's replicas and ISR with the plan.
"""

from __future__ import annotations

import json

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

ACTIONS = ("generate", "execute", "verify", "cancel", "list")
TOPICS_FORMAT = '{"topics":[{"topic":"t"}],"version":1}'
PLAN_FORMAT = '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'


def _load_json(path: str, what: str, example: str):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise CliError(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{what} {path} is not valid JSON ({exc.msg} at line {exc.lineno} "
                       f"column {exc.colno}); expected e.g. {example}") from None


def read_topics_to_move(path: str) -> list[str]:
    data = _load_json(path, "topics-to-move file", TOPICS_FORMAT)
    items = data.get("topics") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise CliError(f"topics-to-move file {path} must list topics like {TOPICS_FORMAT}")
    topics = []
    for item in items:
        name = item.get("topic") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            raise CliError(f"topics-to-move file {path}: each entry needs a \"topic\" name, got "
                           f"{json.dumps(item)}; expected e.g. {TOPICS_FORMAT}")
        if name not in topics:
            topics.append(name)
    return topics


def read_reassignment(path: str) -> dict[tuple[str, int], list[int]]:
    data = _load_json(path, "reassignment file", PLAN_FORMAT)
    items = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise CliError(f"reassignment file {path} must list partitions like {PLAN_FORMAT}")
    plan: dict[tuple[str, int], list[int]] = {}
    for item in items:
        ok = (isinstance(item, dict) and isinstance(item.get("topic"), str)
              and type(item.get("partition")) is int and isinstance(item.get("replicas"), list)
              and all(type(b) is int for b in item["replicas"]))
        if not ok:
            raise CliError(f"reassignment file {path}: bad entry {json.dumps(item)}; each needs "
                           f"\"topic\", \"partition\" and \"replicas\" (broker ids), e.g. "
                           f"{PLAN_FORMAT}")
        tp = (item["topic"], item["partition"])
        if tp in plan:
            raise CliError(f"reassignment file {path} lists partition {tp[0]}-{tp[1]} twice")
        log_dirs = item.get("log_dirs")
        if log_dirs is not None and (not isinstance(log_dirs, list)
                                     or any(d != "any" for d in log_dirs)):
            raise CliError(f"reassignment file {path}: partition {tp[0]}-{tp[1]}: moving "
                           f"replicas between log dirs is not supported; use \"any\" or leave "
                           f"out log_dirs")
        plan[tp] = list(item["replicas"])
    return plan


def format_plan(assignment: dict) -> str:
    """Kafka's one-line JSON for a {(topic, partition): replicas} assignment."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(r)}
        for (t, p), r in sorted(assignment.items())]}, separators=(",", ":"))


def _parse_broker_list(text: str | None) -> list[int]:
    if not text:
        raise CliError("--generate needs --broker-list, e.g. --broker-list 1,2,3", exit_code=2)
    try:
        brokers = [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise CliError(f"--broker-list {text!r}: expected broker ids like 1,2,3",
                       exit_code=2) from None
    if not brokers or len(set(brokers)) != len(brokers):
        raise CliError(f"--broker-list {text!r}: expected distinct broker ids like 1,2,3",
                       exit_code=2)
    return brokers


@click.command("reassign", cls=ActionCommand, actions=ACTIONS,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--generate", is_flag=True, help="propose an assignment over --broker-list")
@click.option("--execute", is_flag=True, help="start the reassignment in the JSON file")
@click.option("--verify", is_flag=True, help="check whether the reassignment is done")
@click.option("--cancel", is_flag=True, help="cancel the moves of the JSON file still running")
@click.option("--list", "list_", is_flag=True, help="reassignments in progress")
@click.option("--topics-to-move-json-file", type=click.Path(dir_okay=False),
              help=f"--generate: {TOPICS_FORMAT}")
@click.option("--broker-list", help="--generate: broker ids to spread the replicas over, 1,2,3")
@click.option("--reassignment-json-file", type=click.Path(dir_okay=False),
              help="--execute/--verify/--cancel: the plan (what --generate proposed)")
@bootstrap_option
@zookeeper_option
@click.pass_context
def command(ctx, generate, execute, verify, cancel, list_, topics_to_move_json_file,
            broker_list, reassignment_json_file, bootstrap_server, zookeeper):
    """Move partitions between brokers (Kafka's kafka-reassign-partitions)."""
    action = pick_action({"generate": generate, "execute": execute, "verify": verify,
                          "cancel": cancel, "list": list_}, "reassign")
    if action == "generate" and not topics_to_move_json_file:
        raise CliError("--generate needs --topics-to-move-json-file FILE", exit_code=2)
    if action in ("execute", "verify", "cancel") and not reassignment_json_file:
        raise CliError(f"--{action} needs --reassignment-json-file FILE", exit_code=2)
    endpoints = Endpoints(ctx, bootstrap_server, zookeeper)
    # optional: with it, /admin/reassign_partitions; without it, the brokers (KIP-455)
    zk = None if action == "cancel" else endpoints.zookeeper
    quiet_client_logs()
    with admin_client(endpoints, zk, connect_zookeeper=zk is not None) as admin:
        if action == "generate":
            _generate(admin, read_topics_to_move(topics_to_move_json_file),
                      _parse_broker_list(broker_list))
        elif action == "execute":
            _execute(admin, read_reassignment(reassignment_json_file))
        elif action == "verify":
            _verify(admin, read_reassignment(reassignment_json_file))
        elif action == "cancel":
            _cancel(admin, read_reassignment(reassignment_json_file))
        elif zk is not None:
            _list_zookeeper(admin.list_partition_reassignments())
        else:
            _list(admin.describe_partition_reassignments())


def _list_zookeeper(pending: dict) -> None:
    if not pending:
        click.echo("No partition reassignments found.")
        return
    click.echo("Current partition reassignments:")
    for tp, replicas in pending.items():
        click.echo(f"{tp}: replicas: {','.join(map(str, replicas))}")


def _list(ongoing: dict) -> None:
    """Kafka's listing: each move's replicas, and those being added and removed."""
    if not ongoing:
        click.echo("No partition reassignments found.")
        return
    click.echo("Current partition reassignments:")
    for tp, move in ongoing.items():
        click.echo(f"{tp}: replicas: {','.join(map(str, move.replicas))}."
                   + (f" adding: {','.join(map(str, move.adding))}." if move.adding else "")
                   + (f" removing: {','.join(map(str, move.removing))}." if move.removing
                      else ""))


def _cancel(admin, plan: dict) -> None:
    """Cancel the plan's partitions that are still moving (Kafka's --cancel)."""
    moving = sorted(admin.describe_partition_reassignments(list(plan)))
    if not moving:
        click.echo("None of the specified partition reassignments are active.")
        return
    results = admin.cancel_partition_reassignments(moving)
    failed = {tp: err for tp, err in results.items() if err is not None}
    if failed:
        raise CliError("Error cancelling partition reassignment(s) for: " + "; ".join(
            f"{tp}: {err.message}" for tp, err in sorted(failed.items())))
    click.echo(f"Successfully cancelled partition reassignment{'' if len(moving) == 1 else 's'}"
               f" for: {','.join(str(tp) for tp in moving)}")


def _current(admin, topics) -> dict[tuple[str, int], list[int]]:
    return {(d.name, p.partition): list(p.replicas)
            for d in admin.describe_topics(sorted(set(topics))) for p in d.partitions}


def _generate(admin, topics: list[str], brokers: list[int]) -> None:
    from kafkalite.controller.assignment import assign_replicas

    current = _current(admin, topics)
    proposed: dict[tuple[str, int], list[int]] = {}
    for topic in topics:
        parts = sorted(p for t, p in current if t == topic)
        rf = len(current[(topic, parts[0])])
        spread = assign_replicas(len(parts), rf, brokers)
        proposed.update({(topic, p): spread[i] for i, p in enumerate(parts)})
    click.echo("Current partition replica assignment")
    click.echo(format_plan(current))
    click.echo()
    click.echo("Proposed partition reassignment configuration")
    click.echo(format_plan(proposed))


def _execute(admin, plan: dict) -> None:
    current = admin.alter_partition_reassignments(plan)
    click.echo("Current partition replica assignment")
    click.echo()
    click.echo(format_plan({(tp.topic, tp.partition): r for tp, r in current.items()}))
    click.echo()
    click.echo("Save this to use as the --reassignment-json-file option during rollback")
    click.echo("Successfully started partition reassignments for "
               + ",".join(f"{t}-{p}" for t, p in sorted(plan)))


def _verify(admin, plan: dict) -> None:
    from kafkalite.errors import UnknownTopicOrPartitionError

    pending = {(tp.topic, tp.partition) for tp in admin.list_partition_reassignments()}
    descriptions = {}
    for topic in sorted({t for t, _ in plan}):
        try:
            descriptions[topic] = {p.partition: p for p in admin.describe_topics([topic])[0]
                                   .partitions}
        except UnknownTopicOrPartitionError:
            descriptions[topic] = {}
    click.echo("Status of partition reassignment:")
    for (topic, partition), target in sorted(plan.items()):
        p = descriptions[topic].get(partition)
        name = f"{topic}-{partition}"
        if (topic, partition) in pending:
            click.echo(f"Reassignment of partition {name} is still in progress.")
        elif p is not None and list(p.replicas) == target and set(target) <= set(p.isr):
            click.echo(f"Reassignment of partition {name} is completed.")
        elif p is not None and list(p.replicas) == target:
            click.echo(f"Reassignment of partition {name} is still in progress (replicas "
                       f"{','.join(map(str, sorted(set(target) - set(p.isr))))} not in the ISR "
                       f"yet).")
        else:
            have = ",".join(map(str, p.replicas)) if p is not None else "none (no such partition)"
            click.echo(f"Reassignment of partition {name} failed: its replicas are {have}, "
                       f"not {','.join(map(str, target))}.")
