"""``kafkalite acls``: Kafka's kafka-acls, with its flags and its output.

    kafkalite acls --bootstrap-server H:P --command-config admin.properties \\
        --add --allow-principal User:alice --operation Read --operation Write --topic orders
    kafkalite acls --authorizer-properties zookeeper.connect=127.0.0.1:2181/kafkalite \\
        --add --allow-principal User:alice --consumer --topic orders --group billing
    kafkalite acls --bootstrap-server H:P --list [--topic orders] [--principal User:alice]
    kafkalite acls --bootstrap-server H:P --remove --force --topic orders

``--bootstrap-server`` goes through the brokers (CreateAcls, DescribeAcls, DeleteAcls: the
client needs Alter, or Describe, on the cluster); ``--authorizer-properties
zookeeper.connect=...`` writes ZooKeeper's /kafka-acl directly, as Kafka 2.x's tool did by
default (for a cluster with zookeeper.set.acl, with ``zookeeper.auth.digest`` in
``--command-config`` or KAFKALITE_ZOOKEEPER_AUTH_DIGEST). Either way every broker sees the
change through /kafka-acl-changes.
"""

from __future__ import annotations

import click

from kafkalite.cli.client_security import command_config_option, load_command_config
from kafkalite.cli.options import (
    ActionCommand, CliError, admin_client, bootstrap_option, parse_properties, pick_action,
    quiet_client_logs,
)
from kafkalite.security.acl import (
    CLUSTER_NAME, WILDCARD_HOST, AccessControlEntry, AccessControlEntryFilter, AclBinding,
    AclBindingFilter, AclOperation, AclPermissionType, KafkaPrincipal, PatternType,
    ResourcePattern, ResourcePatternFilter, ResourceType,
)
from kafkalite.cli.acl_backends import AdminBackend, ZooKeeperBackend

NEWLINE = "\n"
ACTIONS = ("add", "remove", "list")
_PRODUCER_TOPIC = (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE)
_CONSUMER_TOPIC = (AclOperation.READ, AclOperation.DESCRIBE)


def _operations(names) -> tuple[AclOperation, ...]:
    try:
        return tuple(AclOperation.parse(n) for n in names)
    except ValueError as exc:
        raise CliError(str(exc), exit_code=2) from None


def _principals(values) -> tuple[str, ...]:
    try:
        return tuple(str(KafkaPrincipal.parse(v)) for v in values)
    except ValueError as exc:
        raise CliError(str(exc), exit_code=2) from None


def resource_filters(pattern_type: PatternType, topics, groups, cluster: bool,
                     transactional_ids) -> list[ResourcePatternFilter]:
    out = [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), pattern_type) for t in topics]
    if cluster and pattern_type == PatternType.LITERAL:
        out.append(ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    out += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), pattern_type) for g in groups]
    out += [ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, pattern_type)
            for t in transactional_ids]
    return out


def entries(operations, allow_principals, deny_principals, allow_hosts, deny_hosts
            ) -> set[AccessControlEntry]:
    """Kafka's getAcl: every principal x operation x host, for allow and for deny."""
    out = set()
    for principals, hosts, permission in (
            (allow_principals, allow_hosts or (WILDCARD_HOST,), AclPermissionType.ALLOW),
            (deny_principals, deny_hosts or (WILDCARD_HOST,), AclPermissionType.DENY)):
        out |= {AccessControlEntry(p, h.strip(), op, permission)
                for p in principals for op in operations for h in hosts}
    return out


def bindings_to_add(filters, operations, producer, consumer, idempotent, principals_hosts
                    ) -> dict[ResourcePattern, set[AccessControlEntry]]:
    """resource -> entries, for --add (Kafka's getResourceToAcls, with --producer/--consumer)."""
    out: dict[ResourcePattern, set[AccessControlEntry]] = {}

    def add(f: ResourcePatternFilter, ops):
        pattern = ResourcePattern(f.resource_type, f.name, f.pattern_type)
        out.setdefault(pattern, set()).update(entries(ops, *principals_hosts))

    if not producer and not consumer:
        for f in filters:
            add(f, operations)
    if producer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                add(f, _PRODUCER_TOPIC)
            elif f.resource_type == ResourceType.TRANSACTIONAL_ID:
                add(f, (AclOperation.WRITE, AclOperation.DESCRIBE))
        if idempotent:
            add(ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL),
                (AclOperation.IDEMPOTENT_WRITE,))
    if consumer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                add(f, _CONSUMER_TOPIC)
            elif f.resource_type == ResourceType.GROUP:
                add(f, (AclOperation.READ,))
    if not out or any(not acls for acls in out.values()):
        raise CliError("You must specify one of: --allow-principal, --deny-principal when "
                       "trying to add ACLs.", exit_code=2)
    return out


def print_resource_acls(resource, acls, verb: str = "Current ACLs for resource") -> None:
    lines = NEWLINE.join("\t" + str(a) for a in sorted(acls))
    click.echo(f"{verb} `{resource}`: {NEWLINE} {lines} {NEWLINE}")


def _grouped(bindings: list[AclBinding]) -> dict:
    out: dict = {}
    for b in bindings:
        out.setdefault(b.pattern, set()).add(b.entry)
    return out


@click.command("acls", cls=ActionCommand, actions=ACTIONS,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--add", is_flag=True, help="add ACLs")
@click.option("--remove", is_flag=True, help="remove ACLs")
@click.option("--list", "list_", is_flag=True, help="list ACLs")
@click.option("--topic", "topics", multiple=True, help="topic (repeatable; * for every topic)")
@click.option("--group", "groups", multiple=True, help="consumer group (repeatable)")
@click.option("--cluster", is_flag=True, help="the cluster resource")
@click.option("--transactional-id", "transactional_ids", multiple=True)
@click.option("--resource-pattern-type", default="LITERAL", show_default=True,
              help="LITERAL or PREFIXED (and, for --list/--remove, ANY or MATCH)")
@click.option("--allow-principal", "allow_principals", multiple=True, metavar="User:NAME")
@click.option("--deny-principal", "deny_principals", multiple=True, metavar="User:NAME")
@click.option("--allow-host", "allow_hosts", multiple=True, help="default * with a principal")
@click.option("--deny-host", "deny_hosts", multiple=True, help="default * with a principal")
@click.option("--operation", "operations", multiple=True,
              help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                   "DescribeConfigs, AlterConfigs, IdempotentWrite, All (repeatable)")
@click.option("--principal", "list_principals", multiple=True,
              help="--list: only these principals' ACLs")
@click.option("--producer", is_flag=True, help="Write, Describe, Create on the topics")
@click.option("--consumer", is_flag=True, help="Read, Describe on the topics, Read on the groups")
@click.option("--idempotent", is_flag=True, help="with --producer: IdempotentWrite on the cluster")
@click.option("--force", is_flag=True, help="do not ask before removing")
@click.option("--authorizer-properties", "authorizer_properties", multiple=True,
              metavar="zookeeper.connect=H:P/chroot", help="write ZooKeeper directly")
@bootstrap_option
@command_config_option
def command(add, remove, list_, topics, groups, cluster, transactional_ids,
            resource_pattern_type, allow_principals, deny_principals, allow_hosts, deny_hosts,
            operations, list_principals, producer, consumer, idempotent, force,
            authorizer_properties, bootstrap_server, command_config):
    """Add, remove and list ACLs (Kafka's kafka-acls)."""
    action = pick_action({"add": add, "remove": remove, "list": list_}, "acls")
    try:
        pattern_type = PatternType.parse(resource_pattern_type)
    except ValueError as exc:
        raise CliError(str(exc), exit_code=2) from None
    if action == "add" and not pattern_type.is_specific:
        raise CliError(f"A '--resource-pattern-type' value of '{pattern_type.name}' is not "
                       "valid when adding acls.", exit_code=2)
    filters = resource_filters(pattern_type, topics, groups, cluster or idempotent,
                               transactional_ids)
    if action != "list" and not filters:
        raise CliError("You must provide at least one resource: --topic <topic> or --cluster "
                       "or --group <group>", exit_code=2)
    if (producer or consumer) and action == "list":
        raise CliError("--producer and --consumer go with --add or --remove", exit_code=2)
    principals_hosts = (_principals(allow_principals), _principals(deny_principals),
                        allow_hosts, deny_hosts)
    ops = _operations(operations or ("All",))
    security, digest = load_command_config(command_config)
    quiet_client_logs()
    props = parse_properties(authorizer_properties, "--authorizer-properties")
    if props:
        if "zookeeper.connect" not in props:
            raise CliError("--authorizer-properties needs zookeeper.connect=H:P/chroot",
                           exit_code=2)
        with ZooKeeperBackend(props["zookeeper.connect"], digest) as backend:
            _run(backend, action, filters, ops, producer, consumer, idempotent,
                 principals_hosts, _principals(list_principals), force)
        return
    with admin_client(bootstrap_server, **security) as admin:
        _run(AdminBackend(admin), action, filters, ops, producer, consumer, idempotent,
             principals_hosts, _principals(list_principals), force)


def _run(backend, action, filters, ops, producer, consumer, idempotent, principals_hosts,
         list_principals, force) -> None:
    if action == "add":
        to_add = bindings_to_add(filters, ops, producer, consumer, idempotent, principals_hosts)
        for resource, acls in to_add.items():
            print_resource_acls(resource, acls, "Adding ACLs for resource")
        backend.add([AclBinding(r, e) for r, acls in to_add.items() for e in acls])
        _list(backend, [ResourcePatternFilter(r.resource_type, r.name, r.pattern_type)
                        for r in to_add], ())
    elif action == "remove":
        has_entries = any(principals_hosts[0] + principals_hosts[1])
        if producer or consumer or has_entries:
            removing = bindings_to_add(filters, ops, producer, consumer, idempotent,
                                       principals_hosts)
            targets = [AclBindingFilter(ResourcePatternFilter(r.resource_type, r.name,
                                                              r.pattern_type),
                                        AccessControlEntryFilter(e.principal, e.host,
                                                                 e.operation,
                                                                 e.permission_type))
                       for r, acls in removing.items() for e in acls]
            question = ("Are you sure you want to remove ACLs: " + NEWLINE + " "
                        + NEWLINE.join("\t" + str(t.entry_filter) for t in targets) + " "
                        + NEWLINE + " from the resources? (y/n)")
        else:
            targets = [AclBindingFilter(f) for f in filters]
            question = ("Are you sure you want to delete all ACLs for resource filter "
                        + ", ".join(f"`{f}`" for f in filters) + "? (y/n)")
        if not force and not click.confirm(question.replace(" (y/n)", ""), default=False):
            return
        backend.remove(targets)
        _list(backend, filters, ())
    else:
        _list(backend, filters, list_principals)


def _list(backend, filters, principals) -> None:
    bindings = backend.describe(filters or [ResourcePatternFilter()])
    if principals:
        for principal in principals:
            mine = [b for b in bindings if b.entry.principal == principal]
            click.echo(f"ACLs for principal `{principal}`")
            for resource, acls in _grouped(mine).items():
                print_resource_acls(resource, acls)
        return
    for resource, acls in _grouped(bindings).items():
        print_resource_acls(resource, acls)
