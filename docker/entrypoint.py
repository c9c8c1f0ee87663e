#!/opt/kafkalite/bin/python
"""Entrypoint of the kafkalite image.

    docker run kafkalite                      -> a broker (the default command, ``broker``)
    docker run kafkalite broker [flags...]    -> a broker; extra flags go to ``kafkalite broker``
    docker run kafkalite topics list ...      -> any ``kafkalite`` subcommand
    docker run kafkalite bash                 -> any program in the image

A broker reads /etc/kafkalite/server.properties (KAFKALITE_CONFIG_FILE names another file), then
every broker setting given in the environment as ``KAFKALITE_<NAME>``: the setting's name
upper-cased, dots written as ``_`` (and a literal ``_`` as ``__``). For example

    KAFKALITE_BROKER_ID=1                      broker.id=1
    KAFKALITE_ZOOKEEPER_CONNECT=zk:2181/kl     zookeeper.connect=zk:2181/kl
    KAFKALITE_LISTENERS=INTERNAL://:9092,EXTERNAL://:19092
    KAFKALITE_ADVERTISED_LISTENERS=INTERNAL://broker1:9092,EXTERNAL://localhost:19092
    KAFKALITE_INTER_BROKER_LISTENER_NAME=INTERNAL

KAFKALITE_LOG_LEVEL sets the log level. KAFKALITE_BOOTSTRAP_SERVER and KAFKALITE_ZOOKEEPER are the
command-line tools' settings, not the broker's; any other KAFKALITE_* variable that names no
broker setting is reported (with the closest setting's name) and ignored.
"""

from __future__ import annotations

import difflib
import os
import shutil
import sys

PREFIX = "KAFKALITE_"
DEFAULT_CONFIG_FILE = "/etc/kafkalite/server.properties"
# variables of this entrypoint and of the command-line tools, never broker settings
NOT_SETTINGS = {"CONFIG_FILE", "LOG_LEVEL", "BOOTSTRAP_SERVER", "BOOTSTRAP_SERVERS", "ZOOKEEPER"}


def setting_name(variable_suffix: str) -> str:
    """``ZOOKEEPER_CONNECT`` -> ``zookeeper.connect`` (``__`` stands for a literal ``_``)."""
    return variable_suffix.lower().replace("__", "\0").replace("_", ".").replace("\0", "_")


def broker_overrides(environ: dict[str, str], known: set[str]) -> tuple[list[str], list[str]]:
    """(["key=value", ...] from the environment, [warnings])."""
    overrides, warnings = [], []
    for variable in sorted(environ):
        if not variable.startswith(PREFIX):
            continue
        suffix = variable[len(PREFIX):]
        if suffix in NOT_SETTINGS or suffix.startswith("ZOOKEEPER_DOCKER"):
            continue
        name = setting_name(suffix)
        if name in known:
            overrides.append(f"{name}={environ[variable]}")
        else:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f" (did you mean {PREFIX}{close[0].upper().replace('.', '_')}?)" if close else ""
            warnings.append(f"{variable} names no broker setting {name!r}; ignored{hint}")
    return overrides, warnings


def broker_command(args: list[str], environ: dict[str, str]) -> list[str]:
    from kafkalite.config import BROKER_BY_NAME, read_properties

    config_file = environ.get(PREFIX + "CONFIG_FILE", DEFAULT_CONFIG_FILE)
    overrides, warnings = broker_overrides(environ, set(BROKER_BY_NAME))
    for warning in warnings:
        print(f"kafkalite-entrypoint: warning: {warning}", file=sys.stderr)
    from_file = read_properties(config_file) if os.path.exists(config_file) else {}
    if "broker.id" not in from_file and not any(o.startswith("broker.id=") for o in overrides) \
            and not any(a.startswith("broker.id=") for a in args):
        raise SystemExit("kafkalite-entrypoint: set the broker's id, e.g. KAFKALITE_BROKER_ID=1")
    if overrides:
        print("kafkalite-entrypoint: from the environment: " + ", ".join(overrides),
              file=sys.stderr, flush=True)
    command = ["kafkalite", "broker"]
    if os.path.exists(config_file):
        command += ["--config", config_file]
    for item in overrides:
        command += ["--override", item]
    if PREFIX + "LOG_LEVEL" in environ:
        command += ["--log-level", environ[PREFIX + "LOG_LEVEL"]]
    return command + args


def main(argv: list[str]) -> None:
    args = argv or ["broker"]
    if args[0] == "broker":
        command = broker_command(args[1:], dict(os.environ))
    elif shutil.which(args[0]):
        command = args
    else:
        command = ["kafkalite", *args]
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
