"""``kafkalite configs``: Kafka's kafka-configs tool (topic, broker and broker-logger configs).

    kafkalite configs --describe --entity-type topics --entity-name t [--all]
    kafkalite configs --describe --topic t                    # the same
    kafkalite configs --describe --entity-type brokers --entity-name 1 --all
    kafkalite configs --describe --entity-type brokers --entity-default
    kafkalite configs --describe --entity-type broker-loggers --entity-name 1
    kafkalite configs --alter --entity-type topics --entity-name t \\
        --add-config retention.ms=60000,cleanup.policy=[compact,delete] --delete-config segment.ms
    kafkalite configs --alter --broker-logger 1 --add-config kafkalite.server=DEBUG
    kafkalite configs --zookeeper H:P/chroot --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-512=[password=alice-secret]'      # configs_users

Output is kafka-configs' own::

    Dynamic configs for topic t are:
      retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000}
    Completed updating config for topic t.

``--describe`` lists only the entity's own (dynamic) configs; with ``--all`` every config with
its source. Everything goes through the brokers (DescribeConfigs, IncrementalAlterConfigs), which
keep topic overrides in ZooKeeper's ``/config/topics/<t>``. Broker configs are static in
kafkalite (server.properties): ``--alter`` on a broker says so.
"""

from __future__ import annotations

import re

import click

from kafkalite.cli.client_security import command_config_option, load_command_config
from kafkalite.cli.options import (
    ActionCommand,
    CliError,
    admin_client,
    bootstrap_option,
    brokers_from,
    explicit,
    pick_action,
    quiet_client_logs,
    zookeeper_option,
)

ACTIONS = ("describe", "alter")
ENTITY_TYPES = ("topics", "brokers", "broker-loggers", "clients", "users")
# the source an entity's own ("dynamic") configs have, per entity type
DYNAMIC_SOURCE = {"topics": "DYNAMIC_TOPIC_CONFIG", "brokers": "DYNAMIC_BROKER_CONFIG",
                  "broker-defaults": "DYNAMIC_DEFAULT_BROKER_CONFIG", "broker-loggers": None}
RESOURCE_TYPE = {"topics": "TOPIC", "brokers": "BROKER", "broker-loggers": "BROKER_LOGGER"}
DEFAULT_ENTITY = ""

# split on commas outside [...] (Kafka's "(?=[^\\]]*(?:\\[|$))")
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


def parse_add_config(text: str) -> dict[str, str]:
    """``k1=v1,k2=[a,b]`` into ``{"k1": "v1", "k2": "a,b"}`` (kafka-configs' --add-config)."""
    out: dict[str, str] = {}
    for item in re.split("," + _OUTSIDE_BRACKETS, text):
        pair = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item, maxsplit=1)
        if len(pair) != 2 or not pair[0].strip():
            raise CliError('Invalid entity config: all configs to be added must be in the format '
                           '"key=val".', exit_code=2)
        out[pair[0].strip()] = re.sub(r"\[?\]?", "", pair[1]).strip()
    return out


def format_entry(entry) -> str:
    synonyms = ", ".join(f"{s.source}:{s.name}={_shown(s.value)}" for s in entry.synonyms)
    return (f"  {entry.name}={_shown(entry.value)} sensitive={str(entry.is_sensitive).lower()} "
            f"synonyms={{{synonyms}}}")


def _shown(value) -> str:
    return "null" if value is None else value


@click.command("configs", cls=ActionCommand, actions=ACTIONS,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--describe", is_flag=True, help="list the configs of the given entity")
@click.option("--alter", is_flag=True, help="add or delete configs of the given entity")
@click.option("--entity-type", type=click.Choice(ENTITY_TYPES),
              help="topics, brokers, broker-loggers or users")
@click.option("--entity-name", help="topic name, broker id, or user name")
@click.option("--entity-default", is_flag=True,
              help="the cluster-wide default (brokers)")
@click.option("--topic", help="same as --entity-type topics --entity-name TOPIC")
@click.option("--broker", help="same as --entity-type brokers --entity-name ID")
@click.option("--broker-defaults", is_flag=True,
              help="same as --entity-type brokers --entity-default")
@click.option("--broker-logger", help="same as --entity-type broker-loggers --entity-name ID")
@click.option("--all", "describe_all", is_flag=True,
              help="--describe: every config with its source, not only the entity's own")
@click.option("--add-config", "add_configs", multiple=True, metavar="K=V,K2=[A,B]",
              help="--alter: configs to set (comma-separated; [...] for list values)")
@click.option("--delete-config", "delete_configs", multiple=True, metavar="K1,K2",
              help="--alter: configs to remove (comma-separated)")
@bootstrap_option
@zookeeper_option
@command_config_option
@click.pass_context
def command(ctx, describe, alter, entity_type, entity_name, entity_default, topic, broker,
            broker_defaults, broker_logger, describe_all, add_configs, delete_configs,
            bootstrap_server, zookeeper, command_config):
    """Describe and change topic, broker and broker-logger configs (Kafka's kafka-configs)."""
    action = pick_action({"describe": describe, "alter": alter}, "configs")
    entity_type, name = _entity(entity_type, entity_name, entity_default, topic, broker,
                                broker_defaults, broker_logger)
    if action == "alter":
        added: dict[str, str] = {}
        for text in add_configs:
            added.update(parse_add_config(text))
        deleted = [k.strip() for text in delete_configs for k in text.split(",") if k.strip()]
        if not added and not deleted:
            raise CliError("configs --alter needs --add-config and/or --delete-config",
                           exit_code=2)
        if name is None:
            raise CliError(f"configs --alter needs an entity: --entity-name"
                           f"{' or --entity-default' if entity_type == 'brokers' else ''}",
                           exit_code=2)
    elif add_configs or delete_configs:
        raise CliError("--add-config and --delete-config go with --alter", exit_code=2)
    quiet_client_logs()
    security, digest = load_command_config(command_config)
    if entity_type == "users":
        from kafkalite.cli import configs_users

        if explicit(ctx, "bootstrap_server") and not explicit(ctx, "zookeeper"):
            raise CliError("users' SCRAM credentials are written to ZooKeeper: pass "
                           "--zookeeper HOST:PORT/chroot (kafkalite does not serve "
                           "AlterUserScramCredentials)", exit_code=2)
        if action == "alter":
            configs_users.alter_user(zookeeper, digest, name, added, deleted)
        else:
            configs_users.describe_users(zookeeper, digest, name)
        return
    with admin_client(brokers_from(ctx, bootstrap_server, zookeeper), **security) as admin:
        if action == "describe":
            _describe(admin, entity_type, name, describe_all)
        else:
            _alter(admin, entity_type, name, added, deleted)


def _entity(entity_type, entity_name, entity_default, topic, broker, broker_defaults,
            broker_logger) -> tuple[str, str | None]:
    """(entity type, name): name "" is the brokers' cluster-wide default, None means all."""
    shortcuts = [(t, n) for t, n, given in (
        ("topics", topic, topic is not None), ("brokers", broker, broker is not None),
        ("brokers", DEFAULT_ENTITY, broker_defaults),
        ("broker-loggers", broker_logger, broker_logger is not None)) if given]
    if shortcuts:
        if len(shortcuts) > 1 or entity_type or entity_name is not None or entity_default:
            raise CliError("give the entity once: --entity-type/--entity-name, or one of "
                           "--topic, --broker, --broker-defaults, --broker-logger", exit_code=2)
        entity_type, name = shortcuts[0]
    else:
        if not entity_type:
            raise CliError("configs needs --entity-type (topics, brokers, broker-loggers) or "
                           "--topic/--broker/--broker-logger", exit_code=2)
        if entity_default and entity_name is not None:
            raise CliError("--entity-name and --entity-default exclude each other", exit_code=2)
        name = DEFAULT_ENTITY if entity_default else entity_name
    if entity_type == "clients":
        raise CliError("kafkalite keeps no client configs (quotas): only topics, brokers, "
                       "broker-loggers and users (SCRAM credentials)", exit_code=2)
    if name == DEFAULT_ENTITY and entity_type != "brokers":
        raise CliError("--entity-default is only for --entity-type brokers", exit_code=2)
    if entity_type in ("brokers", "broker-loggers") and name:
        try:
            int(name)
        except ValueError:
            raise CliError(f"The entity name for {entity_type} must be a valid integer broker "
                           f"id, found: {name}", exit_code=2) from None
    if entity_type == "topics" and name:
        from kafkalite.topics import validate_topic_name

        validate_topic_name(name)
    return entity_type, name


def _resource(entity_type: str, name: str):
    from kafkalite.client.admin_configs import ConfigResource

    return ConfigResource(RESOURCE_TYPE[entity_type], name)


def _describe(admin, entity_type: str, name: str | None, describe_all: bool) -> None:
    if name is not None:
        names = [name]
    elif entity_type == "topics":
        names = admin.list_topics()
    else:
        names = [str(b.node_id) for b in admin.describe_cluster().brokers] + [DEFAULT_ENTITY]
    for each in names:
        resource = _resource(entity_type, each)
        entries = admin.describe_configs([resource], include_synonyms=True)[resource.key]
        if each == DEFAULT_ENTITY:
            click.echo(f"Default configs for {entity_type} in the cluster are:")
            source = DYNAMIC_SOURCE["broker-defaults"]
        else:
            click.echo(f"{'All' if describe_all else 'Dynamic'} configs for "
                       f"{entity_type[:-1]} {each} are:")
            source = DYNAMIC_SOURCE[entity_type]
        for entry in entries.values():
            if describe_all or source is None or entry.source == source:
                click.echo(format_entry(entry))


def _alter(admin, entity_type: str, name: str, added: dict, deleted: list) -> None:
    from kafkalite.client.admin_configs import AlterConfigOp

    resource = _resource(entity_type, name)
    if entity_type == "brokers":
        configs = dict(added)
        admin.alter_configs([(resource.resource_type, name, configs)])  # the broker refuses
        return
    current = admin.describe_configs([resource])[resource.key]
    if entity_type == "topics":
        own = {k for k, e in current.items() if e.source == DYNAMIC_SOURCE["topics"]}
        invalid = [k for k in deleted if k not in own]
        if invalid:
            raise CliError(f"Invalid config(s): {','.join(invalid)}")
    else:
        invalid = [k for k in list(added) + deleted if k not in current]
        if invalid:
            raise CliError(f"Invalid broker logger(s): {','.join(invalid)}")
    ops = [AlterConfigOp(k, "SET", v) for k, v in added.items()] + \
          [AlterConfigOp(k, "DELETE") for k in deleted]
    admin.incremental_alter_configs({resource: ops})
    click.echo(f"Completed updating config for {entity_type[:-1]} {name}.")
