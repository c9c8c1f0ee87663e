"""``kafkalite``: one command with Kafka's tools as subcommands.

Each subcommand lives in its own module; this one only assembles the group. Errors that a user can
fix (a bad config value, an unknown topic, no reachable broker) print one ``error: ...`` line and
exit with status 2 or 1, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from kafkalite import __version__
from kafkalite.errors import KafkaError

# subcommand name -> module under kafkalite.cli that defines ``command``
SUBCOMMANDS = {
    "broker": "broker",
    "topics": "topics",
    "configs": "configs",
    "acls": "acls",
    "delete-records": "delete_records",
    "produce": "produce",
    "consume": "consume",
    "groups": "groups",
    "zk": "zk",
    "cluster": "cluster",
    "perf": "perf",
    "reassign": "reassign",
    "leader-election": "leader_election",
    "log-dirs": "log_dirs",
    "transactions": "transactions",
    "pipeline": "pipeline",
    "console": "console",
    "tour": "tour",
}


class LazyGroup(click.Group):
    """Import a subcommand's module only when it runs, so `kafkalite broker` starts fast."""

    def list_commands(self, ctx):
        return [name for name, module in SUBCOMMANDS.items() if self._available(module)]

    @staticmethod
    def _available(module: str) -> bool:
        return importlib.util.find_spec(f"kafkalite.cli.{module}") is not None

    def get_command(self, ctx, name):
        module = SUBCOMMANDS.get(name)
        if module is None or not self._available(module):
            return None
        return importlib.import_module(f"kafkalite.cli.{module}").command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafkalite")
def cli():
    """kafkalite: classic ZooKeeper-era Kafka, in Python."""


def main(argv=None) -> int:
    try:
        result = cli.main(args=argv, prog_name="kafkalite", standalone_mode=False)
        # out of standalone mode click *returns* the code of a ``ctx.exit(code)`` (commands'
        # own return values are None)
        if isinstance(result, int) and not isinstance(result, bool):
            return result
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except KafkaError as exc:
        click.echo(f"error: {exc}", err=True)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
