"""``kafkalite zk tree [PATH]``, ``kafkalite zk get PATH`` and ``kafkalite zk getacl PATH``: see
what lives where in ZooKeeper, and who may change it (``zookeeper.set.acl``).

With ``zookeeper.set.acl=true`` a znode's ACL is ``digest:<user>:<hash>:cdrwa`` (the cluster's
identity may do everything) and ``world:anyone:r`` (everyone reads); credentials are readable by
the cluster's identity alone. ``--zk-auth-digest user:password`` (or
``KAFKALITE_ZOOKEEPER_AUTH_DIGEST``) reads as that identity.

These read ZooKeeper itself, so they take ``--zookeeper`` (or KAFKALITE_ZOOKEEPER) only; without
it they try 127.0.0.1:2181/kafkalite and, if that fails, say so and name the flag.
"""

from __future__ import annotations

import click

from kafkalite.cli.options import CliError, explicit, quiet_client_logs, zookeeper_option


zk_auth_option = click.option(
    "--zk-auth-digest", "zk_auth_digest", envvar="KAFKALITE_ZOOKEEPER_AUTH_DIGEST",
    metavar="USER:PASSWORD", help="ZooKeeper digest identity (the brokers' "
    "zookeeper.auth.digest) for a cluster with zookeeper.set.acl=true "
    "(env KAFKALITE_ZOOKEEPER_AUTH_DIGEST)")


def _connect(zookeeper: str, digest: str | None = None):
    from kafkalite.errors import ZooKeeperError
    from kafkalite.zk.errors import ZkConnectionLossError
    from kafkalite.zk.znode_acls import secure_zk_client

    quiet_client_logs()
    try:
        return secure_zk_client(zookeeper, session_timeout_ms=10000, connection_timeout_s=10,
                                digest=digest, set_acl=False).start()
    except ZooKeeperError as exc:
        given = explicit(click.get_current_context(), "zookeeper")
        where = "" if given else " (the default: --zookeeper was not given)"
        detail = "" if isinstance(exc, ZkConnectionLossError) else f" ({exc})"
        raise CliError(f"cannot reach ZooKeeper at {zookeeper}{where}{detail}: is ZooKeeper "
                       f"running there? Pass --zookeeper HOST:PORT/chroot or set "
                       f"KAFKALITE_ZOOKEEPER") from None


def render_tree(zk, path: str, show_data: bool = True, max_data: int = 160,
                show_acl: bool = False) -> list[str]:
    """Lines of an indented znode tree with each node's payload (and ACL), for teaching the
    layout. A znode this identity may not read says so instead of its payload."""
    from kafkalite.errors import ZooKeeperError
    from kafkalite.zk.znode_acls import describe_acl, get_acls

    lines: list[str] = []

    def walk(node: str, depth: int) -> None:
        try:
            got = zk.get_data(node)
        except ZooKeeperError:
            got = (b"(not readable with this ZooKeeper identity)", -1)
        name = node if depth == 0 else node.rsplit("/", 1)[-1]
        text = ""
        if show_data and got is not None and got[0]:
            data = got[0].decode("utf-8", errors="replace")
            text = "  " + (data if len(data) <= max_data else data[:max_data] + "...")
        if show_acl:
            text += "  [" + " ".join(describe_acl(a) for a in get_acls(zk, node)) + "]"
        lines.append("  " * depth + name + text)
        for child in zk.get_children(node):
            walk(node.rstrip("/") + "/" + child, depth + 1)

    walk(path, 0)
    return lines


@click.group("zk")
def command():
    """Look at the cluster's metadata in ZooKeeper (Kafka's znode layout)."""


@command.command("tree")
@click.argument("path", default="/")
@zookeeper_option
@click.option("--no-data", is_flag=True, help="names only, without payloads")
@click.option("--acl", "show_acl", is_flag=True, help="also each znode's ZooKeeper ACL")
@zk_auth_option
def tree(path, zookeeper, no_data, show_acl, zk_auth_digest):
    """Print the znode tree under PATH with each znode's payload."""
    zk = _connect(zookeeper, zk_auth_digest)
    try:
        if not zk.exists(path):
            raise click.ClickException(f"no znode at {path} (under {zookeeper})")
        for line in render_tree(zk, path, show_data=not no_data, show_acl=show_acl):
            click.echo(line)
    finally:
        zk.stop()


@command.command("get")
@click.argument("path")
@zookeeper_option
@zk_auth_option
def get(path, zookeeper, zk_auth_digest):
    """Print one znode's payload and version."""
    zk = _connect(zookeeper, zk_auth_digest)
    try:
        got = zk.get_data(path)
        if got is None:
            raise click.ClickException(f"no znode at {path} (under {zookeeper})")
        data, version = got
        click.echo(data.decode("utf-8", errors="replace"))
        click.echo(f"(zkVersion {version})", err=True)
    finally:
        zk.stop()


@command.command("getacl")
@click.argument("path")
@zookeeper_option
@zk_auth_option
def getacl(path, zookeeper, zk_auth_digest):
    """Print one znode's ZooKeeper ACL, one entry a line (zkCli's getAcl)."""
    from kafkalite.zk.znode_acls import describe_acl, get_acls

    zk = _connect(zookeeper, zk_auth_digest)
    try:
        if not zk.exists(path):
            raise click.ClickException(f"no znode at {path} (under {zookeeper})")
        for acl in get_acls(zk, path):
            click.echo(describe_acl(acl))
    finally:
        zk.stop()
