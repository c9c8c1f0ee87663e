"""``kafkalite reassign``: Kafka's kafka-reassign-partitions tool, with its JSON formats.

    kafkalite reassign --generate --topics-to-move-json-file topics.json --broker-list 1,2,3
    kafkalite reassign --execute --reassignment-json-file plan.json
    kafkalite reassign --verify --reassignment-json-file plan.json
    kafkalite reassign --list

(or as a word: ``kafkalite reassign generate ...``). The files:

* topics to move: ``{"topics":[{"topic":"t"}],"version":1}``
* a reassignment: ``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],
  "log_dirs":["any","any"]}]}`` (``log_dirs`` is optional and must be ``any``)

``--execute`` writes ``/admin/reassign_partitions`` for the controller (printing the current
assignment first, to keep for a rollback); ``--verify`` compares each partition's replicas and
ISR with the plan.

``--generate`` and ``--verify`` work with ``--bootstrap-server`` alone (replicas and ISR come from
the brokers' Metadata). Without ZooKeeper, ``--verify`` tells a reassignment in progress by its
replica list: while one runs, the controller lists the target replicas followed by the leaving
ones, so a partition whose replicas are the plan's plus more is reported as still in progress
(a plan that only drops the last replicas and was never started reads the same; ``--zookeeper``
tells them apart), and a partition whose replicas differ from the plan "has not started or
failed" (the brokers cannot tell a request the controller has not picked up yet from a
failure). ``--execute`` and ``--list`` read or write ``/admin/reassign_partitions`` and so need
``--zookeeper`` (kafkalite brokers do not serve AlterPartitionReassignments yet); without it they
stop with an error naming the flag.
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

ACTIONS = ("generate", "execute", "verify", "list")
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
@click.option("--list", "list_", is_flag=True, help="reassignments in progress")
@click.option("--topics-to-move-json-file", type=click.Path(dir_okay=False),
              help=f"--generate: {TOPICS_FORMAT}")
@click.option("--broker-list", help="--generate: broker ids to spread the replicas over, 1,2,3")
@click.option("--reassignment-json-file", type=click.Path(dir_okay=False),
              help="--execute/--verify: the plan (what --generate proposed)")
@bootstrap_option
@zookeeper_option
@click.pass_context
def command(ctx, generate, execute, verify, list_, topics_to_move_json_file, broker_list,
            reassignment_json_file, bootstrap_server, zookeeper):
    """Move partitions between brokers (Kafka's kafka-reassign-partitions)."""
    action = pick_action({"generate": generate, "execute": execute, "verify": verify,
                          "list": list_}, "reassign")
    if action == "generate" and not topics_to_move_json_file:
        raise CliError("--generate needs --topics-to-move-json-file FILE", exit_code=2)
    if action in ("execute", "verify") and not reassignment_json_file:
        raise CliError(f"--{action} needs --reassignment-json-file FILE", exit_code=2)
    endpoints = Endpoints(ctx, bootstrap_server, zookeeper)
    zk = endpoints.zookeeper            # optional (verify: the reassignments in progress)
    if action in ("execute", "list"):
        zk = endpoints.require_zookeeper(
            f"reassign --{action}", "reassignments are kept in /admin/reassign_partitions for "
            "the controller")
    quiet_client_logs()
    with admin_client(endpoints, zk, connect_zookeeper=zk is not None) as admin:
        if action == "generate":
            _generate(admin, read_topics_to_move(topics_to_move_json_file),
                      _parse_broker_list(broker_list))
        elif action == "execute":
            _execute(admin, read_reassignment(reassignment_json_file))
        elif action == "verify":
            _verify(admin, read_reassignment(reassignment_json_file), zk is not None)
        else:
            pending = admin.list_partition_reassignments()
            if not pending:
                click.echo("No partition reassignments found.")
            else:
                click.echo("Current partition reassignments:")
                for tp, replicas in pending.items():
                    click.echo(f"{tp}: replicas: {','.join(map(str, replicas))}")


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


def _verify(admin, plan: dict, with_zookeeper: bool = True) -> None:
    from kafkalite.errors import UnknownTopicOrPartitionError

    pending = ({(tp.topic, tp.partition) for tp in admin.list_partition_reassignments()}
               if with_zookeeper else set())
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
        # without ZooKeeper: while moving, the controller lists the target, then the leaving
        moving = (not with_zookeeper and p is not None and len(p.replicas) > len(target)
                  and list(p.replicas[:len(target)]) == target)
        if (topic, partition) in pending or moving:
            click.echo(f"Reassignment of partition {name} is still in progress.")
        elif p is not None and list(p.replicas) == target and set(target) <= set(p.isr):
            click.echo(f"Reassignment of partition {name} is completed.")
        elif p is not None and list(p.replicas) == target:
            click.echo(f"Reassignment of partition {name} is still in progress (replicas "
                       f"{','.join(map(str, sorted(set(target) - set(p.isr))))} not in the ISR "
                       f"yet).")
        else:
            have = ",".join(map(str, p.replicas)) if p is not None else "none (no such partition)"
            # without ZooKeeper, a request the controller has not picked up yet looks the same
            outcome = "failed" if with_zookeeper else "has not started or failed"
            click.echo(f"Reassignment of partition {name} {outcome}: its replicas are {have}, "
                       f"not {','.join(map(str, target))}.")
