"""Options shared by several subcommands, with Kafka's flag names and environment fallbacks."""

from __future__ import annotations

import contextlib

import click

from kafkalite.cli.client_security import environment_security
from kafkalite.cli.errors import CliError  # noqa: F401 - most subcommands import it from here

bootstrap_option = click.option(
    "--bootstrap-server", "bootstrap_server", envvar="KAFKALITE_BOOTSTRAP_SERVER",
    default="127.0.0.1:9092", show_default=True,
    help="broker(s) to connect to, host:port[,host:port] (env KAFKALITE_BOOTSTRAP_SERVER)")

zookeeper_option = click.option(
    "--zookeeper", envvar="KAFKALITE_ZOOKEEPER", default="127.0.0.1:2181/kafkalite",
    show_default=True, help="ZooKeeper connect string with chroot (env KAFKALITE_ZOOKEEPER)")


# --- shared helpers of the Kafka tool subcommands ----------------------------------------------

class ActionCommand(click.Command):
    """A Kafka-style tool whose action is a flag (``--create``), also callable as a subcommand
    word (``topics create ...``): a leading ``create`` is read as ``--create``."""

    def __init__(self, *args, actions: tuple[str, ...] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.actions = actions

    def parse_args(self, ctx, args):
        if args and args[0] in self.actions:
            args = [f"--{args[0]}"] + list(args[1:])
        return super().parse_args(ctx, args)

    def format_usage(self, ctx, formatter):
        words = "|".join(self.actions)
        formatter.write_usage(ctx.command_path, f"[{words}] | --{' | --'.join(self.actions)} "
                                                f"[OPTIONS]")


def pick_action(values: dict[str, bool], command: str) -> str:
    """The one action flag that was given; CliError naming the choices otherwise."""
    chosen = [name for name, on in values.items() if on]
    names = ", ".join(f"--{n}" for n in values)
    if not chosen:
        raise CliError(f"{command}: say what to do with one of {names} (or as a word, e.g. "
                       f"'kafkalite {command} {next(iter(values))}')", exit_code=2)
    if len(chosen) > 1:
        raise CliError(f"{command}: only one of {names} at a time, got "
                       f"{', '.join('--' + c for c in chosen)}", exit_code=2)
    return chosen[0]


property_option = click.option(
    "--property", "properties", multiple=True, metavar="KEY=VALUE",
    help="formatter/reader property (repeatable), e.g. print.key=true")


def read_partition_entries(path: str, example: str, int_fields: tuple[str, ...]) -> list[dict]:
    """The ``partitions`` entries of a Kafka tool's JSON file (``{"partitions":[{"topic":"t",
    "partition":0, ...}]}``), each with a string ``topic`` and the given int fields; a
    CliError that shows ``example`` for anything else."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CliError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); expected "
                       f"e.g. {example}") from None
    items = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise CliError(f"{path} must list partitions like {example}")
    for item in items:
        if not (isinstance(item, dict) and isinstance(item.get("topic"), str)
                and all(type(item.get(name)) is int for name in int_fields)):
            raise CliError(f"{path}: bad entry {json.dumps(item)}; expected e.g. {example}")
    return items


def parse_properties(items, what: str = "--property") -> dict[str, str]:
    """``k=v`` items into a dict; CliError naming the bad one."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"{what} {item!r} must look like key=value", exit_code=2)
        out[key.strip()] = value
    return out


def parse_bool(value: str, key: str) -> bool:
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise CliError(f"property {key}={value!r}: expected true or false", exit_code=2)


def unescape(text: str) -> str:
    r"""Separators given on a command line: ``\t``, ``\n`` and ``\\`` mean what they say."""
    return (text.replace("\\\\", "\0").replace("\\t", "\t").replace("\\n", "\n")
            .replace("\\r", "\r").replace("\0", "\\"))


def client_kwargs(cls, props: dict[str, str], what: str) -> dict:
    """Kafka client property names (``linger.ms=5``) as keyword arguments of ``cls``'s
    constructor (``linger_ms=5``), converted to the type of each parameter's default."""
    import inspect

    params = inspect.signature(cls.__init__).parameters
    out = {}
    for key, raw in props.items():
        name = key.replace(".", "_").replace("-", "_")
        if name in ("self", "topics", "bootstrap_servers") or name not in params:
            known = sorted(p.replace("_", ".") for p, prm in params.items()
                           if p not in ("self", "topics", "bootstrap_servers")
                           and prm.kind in (prm.KEYWORD_ONLY, prm.POSITIONAL_OR_KEYWORD))
            raise CliError(f"{what} {key!r} is not a setting of the {cls.__name__}; known: "
                           f"{', '.join(known)}", exit_code=2)
        default = params[name].default
        try:
            if isinstance(default, bool):
                value = parse_bool(raw, key)
            elif isinstance(default, int) and name != "acks":
                value = int(raw)
            elif isinstance(default, float):
                value = float(raw)
            else:
                value = raw
        except ValueError:
            raise CliError(f"{what} {key}={raw!r}: expected a number", exit_code=2) from None
        out[name] = value
    return out


def explicit(ctx: click.Context, name: str) -> bool:
    """True when the user gave ``name`` (flag or environment), not its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def quiet_client_logs() -> None:
    """kazoo and the clients log retries at WARNING; a command line tool reports errors itself."""
    import logging

    for name in ("kazoo", "kafkalite"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_ZOOKEEPER = "127.0.0.1:2181/kafkalite"
BOTH_FLAGS = "pass --bootstrap-server HOST:PORT or --zookeeper HOST:PORT/chroot"


def _source(ctx: click.Context, name: str) -> str:
    source = ctx.get_parameter_source(name)
    return source.name if source is not None else "DEFAULT"


class Endpoints:
    """Where a Kafka-tool subcommand finds the cluster, from ``--bootstrap-server`` and
    ``--zookeeper`` (each given on the command line, in the environment, or neither).

    * ``brokers``: what the AdminClient bootstraps from -- the bootstrap servers when given
      (flag or environment), else, when ``--zookeeper`` is given, the brokers registered there
      (as Kafka 0.8's tools found them), else the default ``127.0.0.1:9092``.
    * ``zookeeper``: the ZooKeeper to read *optional* ZooKeeper-only details from (topics marked
      for deletion, reassignments in progress): only when the user chose ZooKeeper, i.e. gave
      ``--zookeeper`` on the command line, or in the environment without ``--bootstrap-server``
      on the command line. Never the built-in default: ``--bootstrap-server`` alone (Kafka 2.2+'s
      way) and no flags at all read everything the brokers serve from the brokers.
    * ``require_zookeeper(what)``: the ZooKeeper for an operation that exists only there (0.8
      consumer groups, changing configs, elections, reassignments): ``--zookeeper`` from the
      command line or the environment; the built-in default only when neither flag was given;
      otherwise CliError naming the flag.
    """

    def __init__(self, ctx: click.Context, bootstrap: str | None, zookeeper: str | None):
        self.bootstrap = bootstrap
        self.zookeeper_value = zookeeper
        bs = _source(ctx, "bootstrap_server") if bootstrap is not None else "DEFAULT"
        zk = _source(ctx, "zookeeper") if zookeeper is not None else "DEFAULT"
        self.bootstrap_given = bs in ("COMMANDLINE", "ENVIRONMENT")
        self.zookeeper_given = zk in ("COMMANDLINE", "ENVIRONMENT")
        self.defaulted = not self.bootstrap_given and not self.zookeeper_given
        zk_chosen = zk == "COMMANDLINE" or (zk == "ENVIRONMENT" and bs != "COMMANDLINE")
        self.zookeeper = zookeeper if zk_chosen else None
        self.zookeeper_for: str | None = None     # set by require_zookeeper
        self._zk_bootstrap = None

    @property
    def brokers(self):
        if not self.bootstrap_given and self.zookeeper_given:
            if self._zk_bootstrap is None:
                from kafkalite.client.zk_bootstrap import ZooKeeperBootstrap

                self._zk_bootstrap = ZooKeeperBootstrap(self.zookeeper_value)
            return self._zk_bootstrap
        return self.bootstrap or DEFAULT_BOOTSTRAP

    def require_zookeeper(self, what: str, why: str = "", instead: str = "") -> str:
        """The ZooKeeper connect string for ``what``, which only ZooKeeper can do (``why``);
        ``instead``: another way out, for the error message."""
        if self.zookeeper_given or (self.defaulted and self.zookeeper_value):
            self.zookeeper_for = what
            return self.zookeeper_value
        raise CliError(f"{what} needs ZooKeeper, which --bootstrap-server alone cannot reach"
                       f"{' (' + why + ')' if why else ''}: pass --zookeeper HOST:PORT/chroot "
                       f"(the brokers' zookeeper.connect) or set KAFKALITE_ZOOKEEPER"
                       f"{', or ' + instead if instead else ''}", exit_code=2)

    def close(self) -> None:
        if self._zk_bootstrap is not None:
            self._zk_bootstrap.close()
            self._zk_bootstrap = None


def connection_hint(exc: Exception, bootstrap=None, zookeeper: str | None = None,
                    defaulted: bool = False, zookeeper_for: str | None = None) -> str:
    """The message for a failed connection, with how to fix it. ``defaulted``: neither
    ``--bootstrap-server`` nor ``--zookeeper`` was given, so the address tried was a default;
    ``zookeeper_for``: what needed ZooKeeper, when only ZooKeeper can do it (then
    ``--bootstrap-server`` is no way out)."""
    from kafkalite import errors

    default = " (the default: neither --bootstrap-server nor --zookeeper was given)"
    if isinstance(exc, errors.NoBrokersAvailableError) and isinstance(bootstrap, str):
        refused = " (connection refused)" if getattr(exc, "refused", False) else ""
        if defaulted:
            return f"no broker answered at {bootstrap}{refused}{default}: {BOTH_FLAGS}"
        return (f"no broker answered at {bootstrap}{refused}: is the cluster up? Pass "
                f"--bootstrap-server HOST:PORT or set KAFKALITE_BOOTSTRAP_SERVER")
    if isinstance(exc, errors.ZooKeeperError) and zookeeper is not None:
        where = default if defaulted else ""
        if zookeeper_for:
            return (f"{exc}{where}: {zookeeper_for} needs ZooKeeper; is it running there? "
                    f"Pass --zookeeper HOST:PORT/chroot or set KAFKALITE_ZOOKEEPER")
        if defaulted:
            return f"{exc}{where}: {BOTH_FLAGS}"
        return (f"{exc}: is ZooKeeper running there? Pass --zookeeper HOST:PORT/chroot, or "
                f"--bootstrap-server HOST:PORT alone to read from the brokers")
    return str(exc)


def brokers_from(ctx: click.Context, bootstrap: str, zookeeper: str | None):
    """``--bootstrap-server`` when given (flag or environment); otherwise, when ``--zookeeper``
    was given, the brokers registered in ZooKeeper (as Kafka 0.8's tools found them)."""
    return Endpoints(ctx, bootstrap, zookeeper).brokers


@contextlib.contextmanager
def admin_client(bootstrap, zookeeper: str | None = None, *, defaulted: bool = False,
                 connect_zookeeper: bool = False, **kwargs):
    """An AdminClient (``with``), whose ZooKeeper session, if it opened one, closes with it.
    ``bootstrap``: a host:port list, a bootstrap source such as ``brokers_from``'s, or an
    ``Endpoints`` (then ``zookeeper`` is its optional ZooKeeper unless given). With
    ``connect_zookeeper`` the session opens at once, so a wrong address fails here with a hint."""
    from kafkalite import errors
    from kafkalite.client.admin import AdminClient

    if not any(k.startswith(("security_", "ssl_", "sasl_")) for k in kwargs):
        kwargs.update(environment_security())      # KAFKALITE_COMMAND_CONFIG, when set
    endpoints = None
    zookeeper_for = None
    if isinstance(bootstrap, Endpoints):
        endpoints = bootstrap
        if zookeeper is None:
            zookeeper = endpoints.zookeeper
        defaulted = defaulted or endpoints.defaulted
        zookeeper_for = endpoints.zookeeper_for
        bootstrap = endpoints.brokers
    shown = bootstrap if isinstance(bootstrap, str) else None
    try:
        admin = AdminClient(bootstrap_servers=bootstrap, zookeeper=zookeeper, **kwargs)
        try:
            if zookeeper is not None and (connect_zookeeper or not isinstance(bootstrap, str)):
                try:
                    admin.connect_zookeeper()  # checks the chroot before anything creates it
                except errors.ConfigError as exc:
                    if defaulted:
                        raise CliError(f"{exc} (ZooKeeper {zookeeper} is the default: "
                                       f"neither --bootstrap-server nor --zookeeper was given)"
                                       f"; {BOTH_FLAGS}") from None
                    raise
            yield admin
        finally:
            try:
                admin.close()
            finally:
                admin.close_zookeeper()
    except (errors.NoBrokersAvailableError, errors.ZooKeeperError) as exc:
        raise CliError(connection_hint(exc, shown, zookeeper, defaulted,
                                       zookeeper_for)) from None
    finally:
        if endpoints is not None:
            endpoints.close()
        else:
            close = getattr(bootstrap, "close", None)
            if close is not None:
                close()
