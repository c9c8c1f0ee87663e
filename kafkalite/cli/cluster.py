"""``kafkalite cluster up --brokers N``: ZooKeeper plus N brokers on this machine.

Each broker is a real process with its own log dir; ZooKeeper is the real Java server (Debian's
package or ZOOKEEPER_HOME). It prints the connection strings, then runs until Ctrl-C or SIGTERM and
stops everything it started: brokers first (a clean, controlled shutdown), ZooKeeper last.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

import click


@click.group("cluster")
def command():
    """Run a local kafkalite cluster."""


@command.command("up")
@click.option("--brokers", "num_brokers", default=1, show_default=True, type=click.IntRange(1, 9))
@click.option("--data-dir", default="./kafkalite-data", show_default=True,
              type=click.Path(file_okay=False), help="ZooKeeper data and broker log dirs")
@click.option("--zookeeper", default=None,
              help="use this ZooKeeper (host:port[/chroot]) instead of starting one")
@click.option("--zk-port", default=2181, show_default=True, type=int)
@click.option("--base-port", default=9092, show_default=True, type=int,
              help="broker i listens on base-port + i - 1")
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="broker config for every broker (repeatable)")
@click.option("--demo", is_flag=True, help="create a topic, produce and consume a few records")
@click.option("--exit-after-demo", is_flag=True, help="stop everything once the demo ran")
def up(num_brokers, data_dir, zookeeper, zk_port, base_port, overrides, demo, exit_after_demo):
    """Start ZooKeeper and N brokers; Ctrl-C stops them all."""
    from rich.console import Console

    from kafkalite.config import parse_overrides
    from kafkalite.testing.cluster import ClusterError, LocalCluster

    # the launcher probes ZooKeeper while it starts; kazoo would report each refused probe
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    console = Console(stderr=True)
    data_dir = os.path.abspath(data_dir)
    os.makedirs(data_dir, exist_ok=True)
    zk_server = None
    stop_event = threading.Event()

    def on_signal(signum, frame):
        stop_event.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    cluster = None
    try:
        if zookeeper is None:
            from kafkalite.testing.zookeeper import ZooKeeperServer

            with console.status("starting ZooKeeper..."):
                zk_server = ZooKeeperServer(os.path.join(data_dir, "zookeeper"), port=zk_port)
                zk_server.start()
            zookeeper = f"{zk_server.connect_string}/kafkalite"
            console.print(f"ZooKeeper   [bold]{zk_server.connect_string}[/] "
                          f"(log: {zk_server.log_path})")
        cluster = LocalCluster(zookeeper, num_brokers, workdir=data_dir,
                               overrides=parse_overrides(overrides), base_port=base_port)
        with console.status(f"starting {num_brokers} broker(s)..."):
            cluster.start()
        for broker in cluster.brokers.values():
            console.print(f"broker {broker.broker_id}    [bold]{broker.address}[/] "
                          f"(data: {broker.log_dir}, log: {broker.log_path})")
        console.print(f"controller  broker {cluster.controller_id()}")
        click.echo(f"KAFKALITE_BOOTSTRAP_SERVER={cluster.bootstrap_servers}")
        click.echo(f"KAFKALITE_ZOOKEEPER={zookeeper}")
        if demo:
            from kafkalite.cli.demo import run_demo

            run_demo(cluster.bootstrap_servers, zookeeper, min(3, num_brokers))
        if exit_after_demo:
            return
        console.print("running; press Ctrl-C to stop")
        while not stop_event.wait(0.5):
            dead = [b.broker_id for b in cluster.brokers.values() if not b.running]
            if dead:
                console.print(f"[yellow]broker(s) {dead} exited; see their logs[/]")
                stop_event.wait()
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if cluster is not None:
            with console.status("stopping brokers..."):
                cluster.stop()
        if zk_server is not None:
            zk_server.stop()
        console.print("stopped")
