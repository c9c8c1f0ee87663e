"""``kafkalite broker --config server.properties [--override key=value ...]``."""

from __future__ import annotations

import logging
import signal
import sys

import click

from kafkalite.config import BrokerConfig, describe, parse_overrides
from kafkalite.errors import ConfigError

log = logging.getLogger("kafkalite.broker")


@click.command("broker")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="server.properties to read (Kafka's format)")
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="set a config value, overriding the file (repeatable)")
@click.option("--log-level", default="INFO", show_default=True)
@click.option("--help-config", is_flag=True, help="list every broker config with its default")
def command(config_path, overrides, log_level, help_config):
    """Run a broker until SIGTERM or Ctrl-C (which shut it down cleanly)."""
    if help_config:
        for name, kind, default, doc in describe():
            click.echo(f"{name} ({kind}, default {default}): {doc}")
        return
    try:
        values = parse_overrides(overrides)
        if config_path:
            config = BrokerConfig.from_properties(config_path, values)
        else:
            config = BrokerConfig.from_dict(values)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    sys.exit(run_broker(config, log_level))


def run_broker(config: BrokerConfig, log_level: str = "INFO") -> int:
    from twisted.internet import reactor

    from kafkalite.cli.logging_setup import setup_logging
    from kafkalite.server.broker import BrokerService
    from kafkalite.server.gc_policy import freeze_startup_objects

    setup_logging(log_level)
    broker = BrokerService(config, reactor)
    outcome = {"code": 0}

    def failed(failure):
        log.error("broker did not start: %s", failure.getErrorMessage())
        outcome["code"] = 1
        if reactor.running:
            reactor.stop()

    def start():
        broker.ready.addCallbacks(frozen, failed)
        broker.startService()

    def frozen(result):
        # the start-up state out of the gc's full walks (server.gc_policy: tail latency)
        freeze_startup_objects()
        return result

    def on_signal(signum, frame):
        log.info("received %s: shutting down", signal.Signals(signum).name)
        reactor.callFromThread(reactor.stop)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    reactor.addSystemEventTrigger("before", "shutdown", broker.stopService)
    reactor.callWhenRunning(start)
    reactor.run(installSignalHandlers=False)
    return outcome["code"]
