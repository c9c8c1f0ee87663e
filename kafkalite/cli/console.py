"""``kafkalite console``: the live web console (``kafkalite.console``) on http://HOST:PORT/.

    kafkalite console --zookeeper 127.0.0.1:2181/kafkalite --port 8080

It watches the cluster's znodes in ZooKeeper (brokers, controller, leaders and ISR, ZooKeeper
groups) and asks the brokers for offsets and the coordinator's groups every few seconds. It runs
until SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import logging
import signal

import click

from kafkalite.cli.options import CliError, zookeeper_option

log = logging.getLogger("kafkalite.console")


@click.command("console")
@zookeeper_option
@click.option("--bootstrap-server", "bootstrap_server", envvar="KAFKALITE_BOOTSTRAP_SERVER",
              default=None,
              help="brokers to ask for offsets and coordinator groups [default: the live "
                   "brokers registered in ZooKeeper] (env KAFKALITE_BOOTSTRAP_SERVER)")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
              help="HTTP port (0: any free port; the URL printed says which)")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address to listen on (0.0.0.0 to show it to other machines)")
@click.option("--sample-interval", default=2.0, show_default=True, type=click.FloatRange(0.2),
              help="seconds between two questions to the brokers (offsets, coordinator groups)")
@click.option("--log-level", default="INFO", show_default=True)
def command(zookeeper, bootstrap_server, port, host, sample_interval, log_level):
    """Serve the live web console: brokers, controller, leaders, ISR, groups, ZooKeeper."""
    from twisted.internet import error, reactor

    from kafkalite.cli.logging_setup import setup_logging
    from kafkalite.console.service import ConsoleService
    from kafkalite.errors import ZooKeeperError

    setup_logging(log_level)
    logging.getLogger("twisted").setLevel(logging.WARNING)
    service = ConsoleService(zookeeper, reactor, bootstrap_servers=bootstrap_server,
                             sample_interval_s=sample_interval)
    try:
        service.start()
    except ZooKeeperError as exc:
        service.stop()
        raise CliError(f"cannot reach ZooKeeper at {zookeeper} ({exc}): is it running? Pass "
                       f"--zookeeper HOST:PORT/chroot or set KAFKALITE_ZOOKEEPER") from None
    try:
        listening = service.listen(port, host)
    except error.CannotListenError as exc:
        service.stop()
        raise CliError(f"cannot listen on {host}:{port} ({exc.socketError}): pick another "
                       f"--port (0 takes any free one)") from None
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    url = f"http://{shown_host}:{listening.getHost().port}/"
    click.echo(f"kafkalite console: {url} (ZooKeeper {zookeeper})", err=True)

    def on_signal(signum, frame):
        log.info("received %s: stopping the console", signal.Signals(signum).name)
        reactor.callFromThread(reactor.stop)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    reactor.run(installSignalHandlers=False)
