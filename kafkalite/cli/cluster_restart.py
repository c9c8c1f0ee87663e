"""``kafkalite cluster restart-broker ID``: start again a broker of a ``cluster up`` that died
(after a ``kill -9`` in a lesson, say). Only the cluster's owner can start it as one of its own
children, so this command leaves a request file in the data dir, the owner's loop (which looks
for dead brokers every half second anyway) restarts the broker with its original settings and
log dir, and the command waits until the broker listens again.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import time

import click

from kafkalite.cli.cluster_pidfile import process_alive, read_pidfile
from kafkalite.cli.errors import CliError

REQUEST_GLOB = "restart-broker-*.request"
_REQUEST = re.compile(r"restart-broker-(\d+)\.request$")


def request_path(data_dir: str, broker_id: int) -> str:
    return os.path.join(data_dir, f"restart-broker-{broker_id}.request")


def take_restart_requests(data_dir: str) -> list[int]:
    """The broker ids asked for since the last call (their request files are removed)."""
    out = []
    for path in sorted(glob.glob(os.path.join(data_dir, REQUEST_GLOB))):
        match = _REQUEST.search(path)
        with contextlib.suppress(OSError):
            os.unlink(path)
            if match:
                out.append(int(match.group(1)))
    return out


def restart_requested_brokers(data_dir: str, cluster, pidfile) -> list[int]:
    """The owner's side: restart each requested broker that is not running; its pidfile entry
    gets the new pid."""
    restarted = []
    for broker_id in take_restart_requests(data_dir):
        broker = cluster.brokers.get(broker_id)
        if broker is None or broker.running:
            continue
        cluster.restart(broker_id, wait=False)
        pidfile.info["processes"] = [e for e in pidfile.info["processes"]
                                     if not (e["role"] == "broker"
                                             and e.get("broker_id") == broker_id)]
        pidfile.add("broker", broker.process.pid, broker.port, broker_id=broker_id)
        restarted.append(broker_id)
    return restarted


@click.command("restart-broker")
@click.argument("broker_id", type=int)
@click.option("--data-dir", default="./kafkalite-data", show_default=True,
              type=click.Path(file_okay=False), help="the cluster's data dir (as for 'up')")
@click.option("--timeout", default=60.0, show_default=True, type=float,
              help="seconds to wait until the broker listens again")
def restart_broker(broker_id, data_dir, timeout):
    """Start a dead broker of a 'cluster up' again (same id, port and log dir)."""
    from kafkalite.local.ports import port_is_open

    data_dir = os.path.abspath(data_dir)
    info = read_pidfile(data_dir)
    if info is None or not process_alive(info["owner"]):
        raise CliError(f"no running cluster in {data_dir}: start one with 'kafkalite cluster up "
                       f"--data-dir {data_dir}'")
    entries = [e for e in info["processes"] if e.get("broker_id") == broker_id]
    if not entries:
        raise CliError(f"the cluster in {data_dir} has no broker {broker_id}")
    if process_alive(entries[0]):
        click.echo(f"broker {broker_id} is running (pid {entries[0]['pid']})", err=True)
        return
    with open(request_path(data_dir, broker_id), "w"):
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = read_pidfile(data_dir) or info
        entry = next((e for e in info["processes"] if e.get("broker_id") == broker_id), None)
        if entry and process_alive(entry) and port_is_open("127.0.0.1", entry["port"]):
            click.echo(f"broker {broker_id} restarted (pid {entry['pid']}, port "
                       f"{entry['port']})", err=True)
            return
        time.sleep(0.2)
    raise CliError(f"broker {broker_id} did not come back within {timeout:.0f} s: see "
                   f"{os.path.join(data_dir, f'broker-{broker_id}.log')}")
