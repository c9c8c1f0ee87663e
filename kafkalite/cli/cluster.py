"""``kafkalite cluster up|status|down``: ZooKeeper plus N brokers on this machine.

    kafkalite cluster up --brokers 3                    # in the foreground; Ctrl-C stops it all
    eval "$(kafkalite cluster up --detach)"             # in the background, for scripts and CI
    kafkalite cluster status                            # exit 0 when every process is up
    kafkalite cluster down                              # brokers (controlled), then ZooKeeper

Each broker is a real process with its own log dir; ZooKeeper is the real Java server (Debian's
package or ZOOKEEPER_HOME), with ``forceSync=yes`` (ZooKeeper's default: its transaction log is
fsynced before a write is acknowledged) unless ``--no-zk-force-sync`` trades that for speed.

Who owns the processes. The process running ``cluster up`` -- in the foreground, or with
``--detach`` a small supervisor it starts in a session of its own (``python -m kafkalite cluster
up ... --ready-fd N``, output in ``<data-dir>/cluster.log``) -- starts ZooKeeper and the brokers
and owns them: on SIGTERM, SIGINT or SIGHUP it stops the brokers one by one (a controlled shutdown
each, the controller last), then ZooKeeper, and removes its pidfile and env file. ``--detach``
returns once ZooKeeper serves and every broker answers Metadata listing all of them, printing
``export KAFKALITE_...=...`` lines. ``down`` signals the owner and waits until every pid is gone.

An owner killed with SIGKILL can stop nothing, so on Linux every child is started with a
parent-death signal (``prctl(PR_SET_PDEATHSIG)``, ``kafkalite.local.procs``): the kernel signals
the children the moment their owner dies, whatever killed it. ZooKeeper gets SIGTERM (the JVM
exits at once; with forceSync its data is already on disk); the brokers get SIGKILL, because
their SIGTERM path is a controlled shutdown that would wait on a controller and a ZooKeeper that
are dying at the same moment, and a broker must not be able to linger -- they recover their logs
at the next start as after any crash. Where no such signal exists, ``down`` stops the children
itself by the pids in the pidfile (each checked with its start time, never a recycled pid).

Files in the data dir: ``cluster.pid`` (JSON: the owner and every child with pid, start time,
port and role), ``cluster.env`` (``KAFKALITE_BOOTSTRAP_SERVER=...`` and ``KAFKALITE_ZOOKEEPER=...``
lines: ``set -a; . cluster.env; set +a``, ``docker --env-file``, ``>> $GITHUB_ENV``; ``--env-file``
puts it elsewhere), ``cluster.log``, ``zookeeper/``, ``broker-N-data/`` and ``broker-N.log``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time

import click

from kafkalite.cli.cluster_pidfile import (
    PIDFILE, Pidfile, all_processes, pidfile_path, process_alive, read_pidfile, write_atomically,
)
from kafkalite.cli.cluster_restart import restart_broker, restart_requested_brokers
from kafkalite.cli.options import CliError

ENVFILE = "cluster.env"
LOGFILE = "cluster.log"
ZOOKEEPER_DEATH_SIGNAL = signal.SIGTERM
BROKER_DEATH_SIGNAL = signal.SIGKILL
CONSOLE_DEATH_SIGNAL = signal.SIGTERM
DEFAULT_CONSOLE_PORT = 8080

data_dir_option = click.option(
    "--data-dir", default="./kafkalite-data", show_default=True, type=click.Path(file_okay=False),
    help="ZooKeeper data, broker log dirs, and the cluster's pidfile, env file and log")


@click.group("cluster")
def command():
    """Run a local kafkalite cluster (ZooKeeper and brokers on this machine)."""


# --- the pidfile ---------------------------------------------------------------------------------

def _refuse_if_running(data_dir: str) -> None:
    info = read_pidfile(data_dir)
    if info is None:
        return
    alive = [p for p in all_processes(info) if process_alive(p)]
    if alive:
        owner = info["owner"]
        what = (f"a cluster is already running from {data_dir} (its {owner['role']} is pid "
                f"{owner['pid']})" if process_alive(owner) else
                f"processes of an earlier cluster still run from {data_dir} (pids "
                f"{', '.join(str(p['pid']) for p in alive)})")
        raise CliError(f"{what}: stop it with 'kafkalite cluster down --data-dir {data_dir}', "
                       f"or pick another --data-dir")
    with contextlib.suppress(OSError):             # a stale pidfile: nothing of it is alive
        os.unlink(pidfile_path(data_dir))


def _env_lines(bootstrap: str, zookeeper: str) -> list[tuple[str, str]]:
    return [("KAFKALITE_BOOTSTRAP_SERVER", bootstrap), ("KAFKALITE_ZOOKEEPER", zookeeper)]


# --- up ------------------------------------------------------------------------------------------

class _Stopped(BaseException):
    """A stop signal arrived while the cluster was still starting (a BaseException, as
    KeyboardInterrupt, so that the waits' ``except Exception`` cannot swallow it)."""


@command.command("up")
@click.option("--brokers", "num_brokers", default=1, show_default=True, type=click.IntRange(1, 9))
@data_dir_option
@click.option("--zookeeper", default=None,
              help="use this ZooKeeper (host:port[/chroot]) instead of starting one")
@click.option("--zk-port", default=2181, show_default=True, type=click.IntRange(0, 65535),
              help="ZooKeeper's client port (0: any free port)")
@click.option("--zk-force-sync/--no-zk-force-sync", default=True, show_default=True,
              help="ZooKeeper's forceSync: yes (ZooKeeper's own default) fsyncs its "
                   "transaction log before it acknowledges a write, so the cluster's metadata "
                   "survives a power loss; --no-zk-force-sync (forceSync=no) is faster, for "
                   "throwaway test clusters")
@click.option("--base-port", default=9092, show_default=True, type=click.IntRange(0, 65535),
              help="broker i listens on base-port + i - 1 (0: any free ports)")
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="broker config for every broker (repeatable)")
@click.option("--detach", is_flag=True,
              help="run in the background: return once ZooKeeper and every broker are ready, "
                   "print 'export KAFKALITE_...=...' lines (eval \"$(kafkalite cluster up "
                   "--detach)\") and leave a supervisor running; stop it with 'cluster down'")
@click.option("--env-file", type=click.Path(dir_okay=False),
              help="write KAFKALITE_BOOTSTRAP_SERVER=... and KAFKALITE_ZOOKEEPER=... lines here "
                   "[default: <data-dir>/cluster.env]")
@click.option("--timeout", "start_timeout", default=120.0, show_default=True, type=float,
              help="seconds to wait for ZooKeeper and the brokers to be ready")
@click.option("--console/--no-console", "with_console", default=True, show_default=True,
              help="also run the live web console (kafkalite console) for this cluster")
@click.option("--console-port", default=None, type=click.IntRange(0, 65535),
              help="the console's HTTP port on 127.0.0.1 (0: any free port) [default: 8080; "
                   "with --base-port 0, any free port]")
@click.option("--demo", is_flag=True, help="create a topic, produce and consume a few records")
@click.option("--exit-after-demo", is_flag=True, help="stop everything once the demo ran")
@click.option("--security", type=click.Choice(("plaintext", "sasl_ssl")), default="plaintext",
              show_default=True, help="sasl_ssl: TLS with generated certificates, SCRAM users, "
              "ACLs, an admin user; prints the client settings (cluster_security)")
@click.option("--ready-fd", type=int, hidden=True)   # the detached supervisor reports here
def up(num_brokers, data_dir, zookeeper, zk_port, zk_force_sync, base_port, overrides, detach,
       env_file, start_timeout, with_console, console_port, demo, exit_after_demo, security,
       ready_fd):
    """Start ZooKeeper and N brokers; Ctrl-C (or 'cluster down') stops them all."""
    data_dir = os.path.abspath(data_dir)
    env_file = os.path.abspath(env_file or os.path.join(data_dir, ENVFILE))
    if detach and (demo or exit_after_demo):
        raise click.UsageError("--demo runs in the foreground: leave out --detach")
    if security != "plaintext" and (demo or with_console):
        with_console = False       # neither has client credentials yet
        if demo:
            raise click.UsageError("--demo runs without credentials: leave out --security")
    os.makedirs(data_dir, exist_ok=True)
    if ready_fd is None:
        _refuse_if_running(data_dir)
    settings = dict(num_brokers=num_brokers, data_dir=data_dir, zookeeper=zookeeper,
                    zk_port=zk_port, zk_force_sync=zk_force_sync, base_port=base_port,
                    overrides=overrides, env_file=env_file, start_timeout=start_timeout,
                    console_port=None if not with_console else (
                        console_port if console_port is not None else
                        0 if base_port == 0 else DEFAULT_CONSOLE_PORT), security=security)
    if detach:
        _launch_detached(**settings)
        return
    _run_cluster(**settings, demo=demo, exit_after_demo=exit_after_demo, ready_fd=ready_fd)


def _launch_detached(*, num_brokers, data_dir, zookeeper, zk_port, zk_force_sync, base_port,
                     overrides, env_file, start_timeout, console_port, security) -> None:
    """Start the supervisor, wait for its one-line report, print the exports."""
    read_end, write_end = os.pipe()
    # -P: never import from the cwd (the data dir)
    argv = [sys.executable, "-P", "-m", "kafkalite", "cluster", "up", "--brokers", str(num_brokers),
             "--data-dir", data_dir, "--zk-port", str(zk_port), "--base-port", str(base_port),
             "--zk-force-sync" if zk_force_sync else "--no-zk-force-sync",
             "--env-file", env_file, "--timeout", str(start_timeout),
             "--security", security, "--ready-fd", str(write_end)]
    if zookeeper:
        argv += ["--zookeeper", zookeeper]
    argv += (["--no-console"] if console_port is None
             else ["--console", "--console-port", str(console_port)])
    for item in overrides:
        argv += ["--override", item]
    log_path = os.path.join(data_dir, LOGFILE)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(log_path, "ab") as log_file:
        log_file.write(f"=== kafkalite cluster up --detach at "
                       f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
        log_file.flush()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file,
                                stderr=subprocess.STDOUT, pass_fds=(write_end,), cwd=data_dir,
                                env=env, start_new_session=True)
    os.close(write_end)
    try:
        report = _read_report(read_end, proc, start_timeout + 60.0)
    except KeyboardInterrupt:
        click.echo("interrupted: stopping the cluster that was starting", err=True)
        _terminate(proc)
        raise
    finally:
        os.close(read_end)
    if report is None or not report.get("ok"):
        code = proc.poll()
        if report is None and code is None:       # no word in time: it must not stay behind
            _terminate(proc)
        else:
            # it is stopping what it started: return when it is done, so that a new 'up' in
            # the same data dir does not find it still running
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                _terminate(proc)
        if report is not None:
            raise CliError(f"the cluster did not start: {report.get('error')} "
                           f"(log: {log_path})")
        why = (f"the supervisor exited with status {code}" if code is not None
               else f"not ready within {start_timeout + 60:.0f} s")
        raise CliError(f"the cluster did not start: {why}; the end of its log "
                       f"({log_path}):\n{_tail(log_path, 25)}")
    for name, value in _env_lines(report["bootstrap_servers"], report["zookeeper"]):
        click.echo(f"export {name}={value}")
    click.echo(f"kafkalite cluster up: ZooKeeper {report['zookeeper']}, "
               f"{num_brokers} broker(s) at {report['bootstrap_servers']}; supervisor pid "
               f"{proc.pid}, log {log_path}", err=True)
    if report.get("console_url"):
        click.echo(f"console: {report['console_url']}", err=True)
    if report.get("client_settings"):
        click.echo(report["client_settings"], err=True)
    click.echo(f"settings in {env_file}; stop it with: kafkalite cluster down --data-dir "
               f"{data_dir}", err=True)


def _read_report(fd: int, proc: subprocess.Popen, timeout_s: float) -> dict | None:
    """The supervisor's JSON line, or None if it closed the pipe (died) or took too long."""
    deadline = time.monotonic() + timeout_s
    data = b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    line = data.split(b"\n", 1)[0]
    try:
        return json.loads(line) if line else None
    except ValueError:
        return None


def _terminate(proc: subprocess.Popen, timeout_s: float = 120.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _tail(path: str, n: int) -> str:
    try:
        with open(path, errors="replace") as fh:
            lines = fh.readlines()[-n:]
    except OSError:
        return ""
    return "".join(lines)


def _run_cluster(*, num_brokers, data_dir, zookeeper, zk_port, zk_force_sync, base_port,
                 overrides, env_file, start_timeout, console_port, demo, exit_after_demo,
                 ready_fd, security="plaintext") -> None:
    """Start everything, report, run until a stop signal, stop everything (the owner)."""
    from rich.console import Console

    from kafkalite.cli.cluster_security import client_settings, secure_local_cluster
    from kafkalite.config import parse_overrides
    from kafkalite.local.cluster import ClusterError, LocalCluster
    from kafkalite.local.zookeeper import ZooKeeperNotFoundError, ZooKeeperStartError

    # the launcher probes ZooKeeper while it starts; kazoo would report each refused probe
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    console = Console(stderr=True, soft_wrap=True)
    supervisor = ready_fd is not None
    stop_event = threading.Event()
    starting = {"now": True}

    def on_signal(signum, frame):
        stop_event.set()
        if starting["now"]:
            starting["now"] = False
            raise _Stopped(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)

    def report(message: dict) -> None:
        nonlocal ready_fd
        if ready_fd is not None:
            with contextlib.suppress(OSError):
                os.write(ready_fd, json.dumps(message).encode() + b"\n")
                os.close(ready_fd)
            ready_fd = None

    pidfile = Pidfile(data_dir, env_file, detached=supervisor,
                      log=os.path.join(data_dir, LOGFILE) if supervisor else None)
    pidfile.write()
    zk_server = None
    cluster = None
    console_proc = None
    console_url = None
    wrote_env = False
    try:
        try:
            if zookeeper is None:
                from kafkalite.local.zookeeper import ZooKeeperServer

                zk_server = ZooKeeperServer(
                    os.path.join(data_dir, "zookeeper"), port=zk_port or None,
                    startup_timeout_s=start_timeout, die_with_parent=ZOOKEEPER_DEATH_SIGNAL,
                    extra_config={"forceSync": "yes" if zk_force_sync else "no"})
                zk_server.spawn()
                pidfile.add("zookeeper", zk_server.pid, zk_server.port)
                with console.status("starting ZooKeeper..."):
                    zk_server.wait_serving()
                zookeeper = f"{zk_server.connect_string}/kafkalite"
                console.print(f"ZooKeeper   [bold]{zk_server.connect_string}[/] "
                              f"(forceSync={'yes' if zk_force_sync else 'no'}, log: "
                              f"{zk_server.log_path})")
            cluster = LocalCluster(zookeeper, num_brokers, workdir=data_dir,
                                   overrides=parse_overrides(overrides),
                                   base_port=base_port or None, start_timeout_s=start_timeout,
                                   die_with_parent=BROKER_DEATH_SIGNAL)
            secured = None
            if security != "plaintext":
                secured = secure_local_cluster(cluster, data_dir, zookeeper)
            cluster.spawn()
            for broker in cluster.brokers.values():
                pidfile.add("broker", broker.process.pid, broker.port,
                            broker_id=broker.broker_id)
            with console.status(f"starting {num_brokers} broker(s)..."):
                cluster.wait_for_brokers(list(cluster.brokers))
            starting["now"] = False
        except _Stopped as exc:
            report({"ok": False, "error": f"stopped by {exc} while starting"})
            console.print(f"stopped by {exc} while starting")
            return
        except (ClusterError, ZooKeeperStartError, ZooKeeperNotFoundError) as exc:
            starting["now"] = False
            report({"ok": False, "error": str(exc)})
            raise CliError(str(exc)) from None
        bootstrap = secured.bootstrap if secured else cluster.bootstrap_servers
        write_atomically(env_file, "".join(f"{name}={value}\n"
                                           for name, value in _env_lines(bootstrap, zookeeper)))
        wrote_env = True
        pidfile.update(state="ready", bootstrap_servers=bootstrap, zookeeper=zookeeper)
        for broker in cluster.brokers.values():
            console.print(f"broker {broker.broker_id}    [bold]{broker.address}[/] "
                          f"(data: {broker.log_dir}, log: {broker.log_path})")
        console.print(f"controller  broker {cluster.controller_id()}")
        if secured:
            console.print(client_settings(secured), markup=False, highlight=False)
        if console_port is not None:
            from kafkalite.console.launcher import start_beside_cluster

            console_proc, console_url, said = start_beside_cluster(
                zookeeper, bootstrap, console_port, os.path.join(data_dir, "console.log"),
                CONSOLE_DEATH_SIGNAL, lambda pid, port: pidfile.add("console", pid, port))
            console.print(said)
        console.print(f"pidfile     {pidfile.path}; settings in {env_file}")
        if not supervisor:
            click.echo(f"KAFKALITE_BOOTSTRAP_SERVER={bootstrap}")
            click.echo(f"KAFKALITE_ZOOKEEPER={zookeeper}")
        report({"ok": True, "bootstrap_servers": bootstrap, "zookeeper": zookeeper,
                "pid": os.getpid(), "env_file": env_file, "console_url": console_url,
                "client_settings": client_settings(secured) if secured else None})
        if demo:
            from kafkalite.cli.demo import run_demo

            run_demo(bootstrap, zookeeper, min(3, num_brokers))
        if exit_after_demo:
            return
        console.print("running; 'kafkalite cluster down' or Ctrl-C stops it"
                      if not supervisor else "running; 'kafkalite cluster down' stops it")
        reported_dead: set[int] = set()
        while not stop_event.wait(0.5):
            for broker_id in restart_requested_brokers(data_dir, cluster, pidfile):
                console.print(f"broker {broker_id} restarted on request")
                reported_dead.discard(broker_id)
            dead = {b.broker_id for b in cluster.brokers.values() if not b.running}
            if dead - reported_dead:
                console.print(f"[yellow]broker(s) {sorted(dead - reported_dead)} exited; see "
                              f"their logs[/]")
                reported_dead |= dead
    finally:
        starting["now"] = False
        report({"ok": False, "error": "the supervisor stopped before the cluster was ready"})
        if console_proc is not None:
            from kafkalite.console.launcher import stop_console

            stop_console(console_proc)
        if cluster is not None:
            with console.status("stopping brokers (controlled shutdown, one by one)..."):
                cluster.stop(one_by_one=True)
        if zk_server is not None:
            zk_server.stop()
        pidfile.remove()
        if wrote_env:
            with contextlib.suppress(OSError):
                os.unlink(env_file)
        console.print("stopped")


# --- status --------------------------------------------------------------------------------------

def _label(entry: dict) -> str:
    if entry["role"] == "broker":
        return f"broker {entry.get('broker_id')}"
    return entry["role"]


@command.command("status")
@data_dir_option
@click.pass_context
def status(ctx, data_dir):
    """Each process of the cluster: pid, alive, port. Exit 0 when all are up, 1 otherwise."""
    from kafkalite.local.ports import port_is_open

    data_dir = os.path.abspath(data_dir)
    info = read_pidfile(data_dir)
    if info is None:
        raise CliError(f"no cluster in {data_dir} (no {PIDFILE}): start one with 'kafkalite "
                       f"cluster up --detach --data-dir {data_dir}'")
    rows = []
    all_up = info.get("state") == "ready"
    for entry in all_processes(info):
        alive = process_alive(entry)
        port = entry.get("port")
        listening = port_is_open("127.0.0.1", port) if alive and port else None
        up_now = alive and listening is not False
        all_up = all_up and up_now
        rows.append((_label(entry), str(entry.get("pid")), "yes" if alive else "no",
                     "-" if port is None else str(port),
                     "-" if listening is None else ("yes" if listening else "no")))
    header = ("ROLE", "PID", "ALIVE", "PORT", "LISTENING")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    click.echo(f"state: {info.get('state')}"
               + (f"; bootstrap {info['bootstrap_servers']}; zookeeper {info['zookeeper']}"
                  if info.get("bootstrap_servers") else ""))
    ctx.exit(0 if all_up else 1)


# --- down ----------------------------------------------------------------------------------------

@command.command("down")
@data_dir_option
@click.option("--timeout", default=120.0, show_default=True, type=float,
              help="seconds to wait for every process to exit; then the rest get SIGKILL")
def down(data_dir, timeout):
    """Stop the cluster: brokers (a controlled shutdown each), then ZooKeeper; waits until every
    process has exited."""
    from kafkalite.local.procs import wait_pids_gone

    data_dir = os.path.abspath(data_dir)
    info = read_pidfile(data_dir)
    if info is None:
        click.echo(f"no cluster is running from {data_dir} (no {PIDFILE})", err=True)
        return
    owner = info["owner"]
    children = info.get("processes", [])
    everyone = {e["pid"]: e.get("start_time") for e in all_processes(info) if e.get("pid")}
    deadline = time.monotonic() + timeout
    if process_alive(owner):
        # the owner stops its children in order (brokers one by one, then ZooKeeper)
        _signal(owner, signal.SIGTERM)
    else:
        # the owner is gone and its children live on (no parent-death signal on this system):
        # do what it would have done
        brokers = [e for e in children if e["role"] == "broker" and process_alive(e)]
        for entry in sorted(brokers, key=lambda e: -(e.get("broker_id") or 0)):
            _signal(entry, signal.SIGTERM)
            wait_pids_gone({entry["pid"]: entry.get("start_time")},
                           max(deadline - time.monotonic(), 0))
        for entry in children:
            if entry["role"] != "broker" and process_alive(entry):
                _signal(entry, signal.SIGTERM)
    left = wait_pids_gone(everyone, max(deadline - time.monotonic(), 0))
    killed = []
    for entry in all_processes(info):
        if entry.get("pid") in left and process_alive(entry):
            _signal(entry, signal.SIGKILL)
            killed.append(entry)
    if killed:
        wait_pids_gone({e["pid"]: e.get("start_time") for e in killed}, 10.0)
    with contextlib.suppress(OSError):
        os.unlink(pidfile_path(data_dir))
    env_file = info.get("env_file")
    if env_file:
        with contextlib.suppress(OSError):
            os.unlink(env_file)
    stopped = ", ".join(f"{_label(e)} (pid {e['pid']})" for e in all_processes(info))
    if killed:
        raise CliError(f"{', '.join(_label(e) for e in killed)} did not exit within "
                       f"{timeout:.0f} s and got SIGKILL; stopped: {stopped}")
    click.echo(f"stopped: {stopped}", err=True)


def _signal(entry: dict, sig: int) -> None:
    if process_alive(entry):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(entry["pid"], sig)


command.add_command(restart_broker)
