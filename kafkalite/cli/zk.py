"""``kafkalite zk tree [PATH]`` and ``kafkalite zk get PATH``: see what lives where in ZooKeeper."""

from __future__ import annotations

import click

from kafkalite.cli.options import zookeeper_option


def _connect(zookeeper: str):
    from kafkalite.zk import ZkClient

    return ZkClient(zookeeper, session_timeout_ms=10000, connection_timeout_s=10).start()


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
