"""Options shared by several subcommands, with Kafka's flag names and environment fallbacks."""

from __future__ import annotations

import click

bootstrap_option = click.option(
    "--bootstrap-server", "bootstrap_server", envvar="KAFKALITE_BOOTSTRAP_SERVER",
    default="127.0.0.1:9092", show_default=True,
    help="broker(s) to connect to, host:port[,host:port] (env KAFKALITE_BOOTSTRAP_SERVER)")

zookeeper_option = click.option(
    "--zookeeper", envvar="KAFKALITE_ZOOKEEPER", default="127.0.0.1:2181/kafkalite",
    show_default=True, help="ZooKeeper connect string with chroot (env KAFKALITE_ZOOKEEPER)")
