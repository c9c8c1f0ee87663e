"""``kafkalite tour``: walk through the classic architecture on a ``cluster up``, with the console
open beside it (``kafkalite.tour``). Each step says what to look at, runs its commands (printed,
so they can be typed by hand) and checks its prediction; ``--non-interactive`` runs every step
without waiting for Enter (CI does)."""

from __future__ import annotations

import os
import time

import click

from kafkalite.cli.options import CliError


@click.command("tour")
@click.option("--bootstrap-server", "bootstrap_server", envvar="KAFKALITE_BOOTSTRAP_SERVER",
              default=None, help="the cluster's brokers [default: from <data-dir>/cluster.pid]")
@click.option("--zookeeper", envvar="KAFKALITE_ZOOKEEPER", default=None,
              help="its ZooKeeper [default: from <data-dir>/cluster.pid]")
@click.option("--data-dir", default="./kafkalite-data", show_default=True,
              type=click.Path(file_okay=False),
              help="the data dir of 'cluster up' (its pidfile tells which process to kill -9)")
@click.option("--console-url", default=None, help="where the console runs (printed with the "
                                                   "hints) [default: from the pidfile]")
@click.option("--step", "only", multiple=True, help="run only these steps (by name; repeatable)")
@click.option("--non-interactive", is_flag=True, help="do not wait for Enter between steps")
def command(bootstrap_server, zookeeper, data_dir, console_url, only, non_interactive):
    """Guided walk-throughs of topics, keys, offsets, order, groups, replication, the
    controller, retention and exactly-once transactions, on a running 'kafkalite cluster
    up'."""
    from kafkalite.cli.cluster import read_pidfile
    from kafkalite.tour.runner import Tour
    from kafkalite.tour.steps import STEPS

    data_dir = os.path.abspath(data_dir)
    info = read_pidfile(data_dir) or {}
    bootstrap_server = bootstrap_server or info.get("bootstrap_servers")
    zookeeper = zookeeper or info.get("zookeeper")
    if not bootstrap_server or not zookeeper:
        raise CliError(f"no cluster to tour: start one with 'kafkalite cluster up --brokers 3 "
                       f"--data-dir {data_dir}' (or pass --bootstrap-server and --zookeeper)")
    if console_url is None:
        port = next((e["port"] for e in info.get("processes", []) if e["role"] == "console"),
                    None)
        console_url = f"http://127.0.0.1:{port}/" if port else None
    names = [name for name, _, _ in STEPS]
    unknown = [s for s in only if s not in names]
    if unknown:
        raise CliError(f"unknown step(s) {unknown}; the steps are {', '.join(names)}", 2)
    tour = Tour(bootstrap_server, zookeeper, data_dir, not non_interactive, console_url,
                run_id=format(int(time.time()) % 46656, "x"))
    click.echo(f"kafkalite tour on {bootstrap_server} (ZooKeeper {zookeeper})"
               + (f"; open the console at {console_url}" if console_url else ""))
    try:
        for number, (name, title, run) in enumerate(STEPS, 1):
            if only and name not in only:
                continue
            tour.title(number, title)
            run(tour)
            tour.pause()
    finally:
        tour.stop_background()
    click.secho("\nThe tour is over: every prediction came true.", bold=True)
