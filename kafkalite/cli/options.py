"""Options shared by several subcommands, with Kafka's flag names and environment fallbacks."""

from __future__ import annotations

import contextlib

import click

bootstrap_option = click.option(
    "--bootstrap-server", "bootstrap_server", envvar="KAFKALITE_BOOTSTRAP_SERVER",
    default="127.0.0.1:9092", show_default=True,
    help="broker(s) to connect to, host:port[,host:port] (env KAFKALITE_BOOTSTRAP_SERVER)")

zookeeper_option = click.option(
    "--zookeeper", envvar="KAFKALITE_ZOOKEEPER", default="127.0.0.1:2181/kafkalite",
    show_default=True, help="ZooKeeper connect string with chroot (env KAFKALITE_ZOOKEEPER)")


# --- shared helpers of the Kafka tool subcommands ----------------------------------------------

class CliError(click.ClickException):
    """A mistake the user can fix: printed as one ``error: ...`` line, exit status 1 (or 2)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


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


def connection_hint(exc: Exception, bootstrap=None, zookeeper: str | None = None) -> str:
    """The message for a failed connection, with how to fix it."""
    from kafkalite import errors

    if isinstance(exc, errors.NoBrokersAvailableError) and isinstance(bootstrap, str):
        return (f"no broker answered at {bootstrap}: is the cluster up? Pass "
                f"--bootstrap-server host:port or set KAFKALITE_BOOTSTRAP_SERVER")
    if isinstance(exc, errors.ZooKeeperError) and zookeeper is not None:
        return (f"{exc}: is ZooKeeper running there? Pass --zookeeper host:port/chroot or "
                f"set KAFKALITE_ZOOKEEPER")
    return str(exc)


def brokers_from(ctx: click.Context, bootstrap: str, zookeeper: str | None):
    """``--bootstrap-server`` when given (flag or environment); otherwise, when ``--zookeeper``
    was given, the brokers registered in ZooKeeper (as Kafka 0.8's tools found them)."""
    if zookeeper is not None and not explicit(ctx, "bootstrap_server") \
            and explicit(ctx, "zookeeper"):
        from kafkalite.client.zk_bootstrap import ZooKeeperBootstrap

        return ZooKeeperBootstrap(zookeeper)
    return bootstrap


@contextlib.contextmanager
def admin_client(bootstrap, zookeeper: str | None = None, **kwargs):
    """An AdminClient (``with``), whose ZooKeeper session, if it opened one, closes with it.
    ``bootstrap``: a host:port list or a bootstrap source such as ``brokers_from``'s."""
    from kafkalite import errors
    from kafkalite.client.admin import AdminClient

    try:
        admin = AdminClient(bootstrap_servers=bootstrap, zookeeper=zookeeper, **kwargs)
        try:
            if not isinstance(bootstrap, str):
                admin.connect_zookeeper()    # checks the chroot before anything creates it
            yield admin
        finally:
            try:
                admin.close()
            finally:
                admin.close_zookeeper()
    except (errors.NoBrokersAvailableError, errors.ZooKeeperError) as exc:
        raise CliError(connection_hint(exc, bootstrap, zookeeper)) from None
    finally:
        close = getattr(bootstrap, "close", None)
        if close is not None:
            close()
