"""``kafkalite zk tree [PATH]`` and ``kafkalite zk get PATH``: see what lives where in ZooKeeper.

These read ZooKeeper itself, so they take ``--zookeeper`` (or KAFKALITE_ZOOKEEPER) only; without
it they try 127.0.0.1:2181/kafkalite and, if that fails, say so and name the flag.
"""

from __future__ import annotations

import click

from kafkalite.cli.options import CliError, explicit, quiet_client_logs, zookeeper_option


def _connect(zookeeper: str):
    from kafkalite.errors import ZooKeeperError
    from kafkalite.zk import ZkClient
    from kafkalite.zk.errors import ZkConnectionLossError

    quiet_client_logs()
    try:
        return ZkClient(zookeeper, session_timeout_ms=10000, connection_timeout_s=10).start()
    except ZooKeeperError as exc:
        given = explicit(click.get_current_context(), "zookeeper")
        where = "" if given else " (the default: --zookeeper was not given)"
        detail = "" if isinstance(exc, ZkConnectionLossError) else f" ({exc})"
        raise CliError(f"cannot reach ZooKeeper at {zookeeper}{where}{detail}: is ZooKeeper "
                       f"running there? Pass --zookeeper HOST:PORT/chroot or set "
                       f"KAFKALITE_ZOOKEEPER") from None


def render_tree(zk, path: str, show_data: bool = True, max_data: int = 160) -> list[str]:
    """Lines of an indented znode tree with each node's payload, for teaching the layout."""
    lines: list[str] = []

    def walk(node: str, depth: int) -> None:
        got = zk.get_data(node)
        name = node if depth == 0 else node.rsplit("/", 1)[-1]
        text = ""
        if show_data and got is not None and got[0]:
            data = got[0].decode("utf-8", errors="replace")
            text = "  " + (data if len(data) <= max_data else data[:max_data] + "...")
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
def tree(path, zookeeper, no_data):
    """Print the znode tree under PATH with each znode's payload."""
    zk = _connect(zookeeper)
    try:
        if not zk.exists(path):
            raise click.ClickException(f"no znode at {path} (under {zookeeper})")
        for line in render_tree(zk, path, show_data=not no_data):
            click.echo(line)
    finally:
        zk.stop()


@command.command("get")
@click.argument("path")
@zookeeper_option
def get(path, zookeeper):
    """Print one znode's payload and version."""
    zk = _connect(zookeeper)
    try:
        got = zk.get_data(path)
        if got is None:
            raise click.ClickException(f"no znode at {path} (under {zookeeper})")
        data, version = got
        click.echo(data.decode("utf-8", errors="replace"))
        click.echo(f"(zkVersion {version})", err=True)
    finally:
        zk.stop()
