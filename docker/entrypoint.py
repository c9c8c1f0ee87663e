#!/opt/kafkalite/bin/python
"""Entrypoint of the kafkalite image.

    docker run kafkalite                      -> a broker (the default command, ``broker``)
    docker run kafkalite broker [flags...]    -> a broker; extra flags go to ``kafkalite broker``
    docker run kafkalite topics list ...      -> any ``kafkalite`` subcommand
    docker run kafkalite bash                 -> any program in the image

A broker reads /etc/kafkalite/server.properties (KAFKALITE_CONFIG_FILE names another file), then
the broker settings given in the environment, in either of two conventions:

kafkalite's own, ``KAFKALITE_<NAME>``: the setting's name upper-cased, dots written as ``_`` (and
a literal ``_`` as ``__``). A name that is no kafkalite broker setting is reported (with the
closest setting's name) and ignored.

    KAFKALITE_BROKER_ID=1                      broker.id=1
    KAFKALITE_ZOOKEEPER_CONNECT=zk:2181/kl     zookeeper.connect=zk:2181/kl
    KAFKALITE_LISTENERS=INTERNAL://:9092,EXTERNAL://:19092
    KAFKALITE_ADVERTISED_LISTENERS=INTERNAL://broker1:9092,EXTERNAL://localhost:19092
    KAFKALITE_INTER_BROKER_LISTENER_NAME=INTERNAL

Confluent cp-kafka's, ``KAFKA_<NAME>``, by the rule of its image's ``configure`` script: strip
``KAFKA_``, lower-case, ``_`` -> ``.``, ``__`` -> ``_``, ``___`` -> ``-``; every such name goes to
the broker (which decides about names it does not know), except the variables cp-kafka does not
treat as broker settings either: KAFKA_VERSION, KAFKA_HEAP_OPTS, KAFKA_OPTS, KAFKA_LOG4J_OPTS,
KAFKA_JMX_OPTS (and every KAFKA_JMX_*), KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_GC_LOG_OPTS,
KAFKA_LOG4J_LOGGERS, KAFKA_TOOLS_LOG4J_LOGLEVEL, KAFKA_HOME, KAFKA_DEBUG (reported as ignored);
KAFKA_LOG4J_ROOT_LOGLEVEL sets the log level; KAFKA_ZOOKEEPER_CLIENT_CNXN_SOCKET is
zookeeper.clientCnxnSocket. As in cp-kafka, once any KAFKA_* setting is given,
KAFKA_ZOOKEEPER_CONNECT and KAFKA_ADVERTISED_LISTENERS are required, ``listeners`` is derived from
the advertised listeners when not given (each one bound to 0.0.0.0 on its port:
PLAINTEXT://broker:29092 -> PLAINTEXT://0.0.0.0:29092), and KAFKA_PORT, KAFKA_HOST,
KAFKA_ADVERTISED_PORT and KAFKA_ADVERTISED_HOST are refused. Variables that Kubernetes or Docker
links make for a service named ``kafka`` (KAFKA_SERVICE_HOST, KAFKA_PORT=tcp://...,
KAFKA_PORT_9092_TCP...) are ignored.

Precedence, lowest first: the properties file, KAFKA_<NAME>, KAFKALITE_<NAME> (kafkalite's own
name for a setting beats the generic one; a disagreement is reported), flags after ``broker``.
KAFKALITE_LOG_LEVEL beats KAFKA_LOG4J_ROOT_LOGLEVEL. KAFKALITE_BOOTSTRAP_SERVER and
KAFKALITE_ZOOKEEPER are the command-line tools' settings, not the broker's.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import sys

PREFIX = "KAFKALITE_"
KAFKA_PREFIX = "KAFKA_"
DEFAULT_CONFIG_FILE = "/etc/kafkalite/server.properties"
# variables of this entrypoint and of the command-line tools, never broker settings
NOT_SETTINGS = {"CONFIG_FILE", "LOG_LEVEL", "BOOTSTRAP_SERVER", "BOOTSTRAP_SERVERS", "ZOOKEEPER"}

# cp-kafka's kafka.properties template leaves these out of server.properties (the JVM's, log4j's
# and the image's own variables); KAFKA_HOME and KAFKA_DEBUG are Apache Kafka's scripts'
KAFKA_NOT_SETTINGS = {
    "KAFKA_VERSION": "the image's version",
    "KAFKA_HEAP_OPTS": "JVM option", "KAFKA_OPTS": "JVM option",
    "KAFKA_JVM_PERFORMANCE_OPTS": "JVM option", "KAFKA_GC_LOG_OPTS": "JVM option",
    "KAFKA_LOG4J_OPTS": "log4j option", "KAFKA_LOG4J_LOGGERS": "log4j option",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL": "log4j option",
    "KAFKA_HOME": "Kafka's scripts' variable", "KAFKA_DEBUG": "Kafka's scripts' variable",
}
KAFKA_JMX = "KAFKA_JMX_"                          # KAFKA_JMX_OPTS, _PORT, _HOSTNAME: JMX
KAFKA_LOG_LEVEL = "KAFKA_LOG4J_ROOT_LOGLEVEL"
# cp-kafka's names that do not follow the rule
KAFKA_SPECIAL = {"KAFKA_ZOOKEEPER_CLIENT_CNXN_SOCKET": "zookeeper.clientCnxnSocket"}
# settings cp-kafka refuses, with its words
KAFKA_DEPRECATED = {"KAFKA_ADVERTISED_PORT": "advertised.port",
                    "KAFKA_ADVERTISED_HOST": "advertised.host", "KAFKA_HOST": "host",
                    "KAFKA_PORT": "port"}
# what Kubernetes (a Service) and Docker links set for a service or container named "kafka"
SERVICE_LINK = re.compile(r"^KAFKA_(SERVICE_(HOST|PORT)(_.*)?|PORT_\d+_(TCP|UDP|SCTP)(_.*)?)$")
# log4j levels -> Python's
LOG4J_LEVELS = {"TRACE": "DEBUG", "DEBUG": "DEBUG", "INFO": "INFO", "WARN": "WARNING",
                "ERROR": "ERROR", "FATAL": "CRITICAL", "OFF": "CRITICAL"}


def setting_name(variable_suffix: str) -> str:
    """``ZOOKEEPER_CONNECT`` -> ``zookeeper.connect`` (``__`` stands for a literal ``_``)."""
    return variable_suffix.lower().replace("__", "\0").replace("_", ".").replace("\0", "_")


def kafka_setting_name(variable: str) -> str:
    """cp-kafka's rule: ``KAFKA_LOG_RETENTION_HOURS`` -> ``log.retention.hours``; ``__`` stands
    for ``_`` and ``___`` for ``-`` (as confluent-docker-utils' env_to_props does it)."""
    if variable in KAFKA_SPECIAL:
        return KAFKA_SPECIAL[variable]
    dotted = variable[len(KAFKA_PREFIX):].lower().replace("_", ".")
    return dotted.replace("...", "-").replace("..", "_")


def derived_listeners(advertised: str) -> str:
    """cp-kafka's default listeners: each advertised listener bound to 0.0.0.0 on its port
    (``PLAINTEXT://broker:29092,PLAINTEXT_HOST://localhost:9092`` ->
    ``PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092``)."""
    listeners = []
    for item in advertised.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, address = item.partition("://")
        _host, colon, port = address.rpartition(":")
        if not sep or not colon:
            raise ValueError(f"advertised listener {item!r} is not NAME://host:port")
        listeners.append(f"{name}://0.0.0.0:{port}")
    return ",".join(listeners)


class EnvironmentSettings:
    """What the environment asks of the broker. (A plain class: this file is loaded by path, by
    the healthcheck and the tests, where dataclasses cannot find their module.)"""

    def __init__(self):
        self.settings: dict[str, str] = {}   # setting -> value: the broker's overrides
        self.sources: dict[str, str] = {}    # setting -> the variable it came from
        self.log_level: str | None = None
        self.notes: list[str] = []           # printed as they are
        self.warnings: list[str] = []
        self.errors: list[str] = []          # the broker must not start

    @property
    def overrides(self) -> list[str]:
        return [f"{name}={value}" for name, value in self.settings.items()]


def kafkalite_variables(environ: dict[str, str], known: set[str]) -> tuple[dict, list[str]]:
    """({setting: (variable, value)} from KAFKALITE_* variables, [warnings])."""
    found, warnings = {}, []
    for variable in sorted(environ):
        if not variable.startswith(PREFIX):
            continue
        suffix = variable[len(PREFIX):]
        if suffix in NOT_SETTINGS or suffix.startswith("ZOOKEEPER_DOCKER"):
            continue
        name = setting_name(suffix)
        if name in known:
            found[name] = (variable, environ[variable])
        else:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f" (did you mean {PREFIX}{close[0].upper().replace('.', '_')}?)" if close else ""
            warnings.append(f"{variable} names no broker setting {name!r}; ignored{hint}")
    return found, warnings


def kafka_variables(environ: dict[str, str]) -> tuple[dict, list[str], list[str]]:
    """cp-kafka's KAFKA_* variables: ({setting: (variable, value)}, [ignored, as notes],
    [errors]). Pure: it knows cp-kafka's rules, not which settings kafkalite has."""
    found, ignored, errors = {}, [], []
    for variable in sorted(environ):
        if not variable.startswith(KAFKA_PREFIX) or variable == KAFKA_PREFIX:
            continue
        value = environ[variable]
        if variable in KAFKA_NOT_SETTINGS:
            ignored.append(f"{variable} ({KAFKA_NOT_SETTINGS[variable]})")
        elif variable.startswith(KAFKA_JMX):
            ignored.append(f"{variable} (JMX)")
        elif variable == KAFKA_LOG_LEVEL:
            continue
        elif SERVICE_LINK.match(variable) or (
                variable == "KAFKA_PORT" and re.match(r"^(tcp|udp|sctp)://", value)):
            ignored.append(f"{variable} (a Kubernetes service's or Docker link's variable)")
        elif variable in KAFKA_DEPRECATED:
            errors.append(f"{variable}: {KAFKA_DEPRECATED[variable]} is deprecated. Please use "
                          "KAFKA_ADVERTISED_LISTENERS instead.")
        else:
            found[kafka_setting_name(variable)] = (variable, value)
    return found, ignored, errors


def environment_settings(environ: dict[str, str], known: set[str]) -> EnvironmentSettings:
    """The broker settings, log level, notes and errors that ``environ`` gives (both
    conventions, the precedence and cp-kafka's derived listeners; see the module's doc)."""
    result = EnvironmentSettings()
    own, result.warnings = kafkalite_variables(environ, known)
    cp, ignored, result.errors = kafka_variables(environ)
    if ignored:
        result.notes.append("ignored (no broker settings in cp-kafka either): "
                            + ", ".join(ignored))
    merged = {name: variable_value for name, variable_value in cp.items()}
    for name, (variable, value) in own.items():
        if name in cp and cp[name][1] != value:
            result.warnings.append(f"{variable}={value} overrides {cp[name][0]}={cp[name][1]}")
        merged[name] = (variable, value)
    for name in sorted(cp):
        if name not in known and name in merged and merged[name][0] == cp[name][0]:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            result.notes.append(f"{cp[name][0]} -> {name}: not a setting kafkalite knows; "
                                f"given to the broker as it is{hint}")
    if cp:  # cp-kafka's convention is in use: its requirements and its default listeners
        for name in ("zookeeper.connect", "advertised.listeners"):
            if name not in merged:
                variable = KAFKA_PREFIX + name.upper().replace(".", "_")
                result.errors.append(f"{variable} is required (the KAFKA_* variables "
                                     f"follow cp-kafka's rules)")
        if "listeners" not in merged and "advertised.listeners" in merged:
            variable, advertised = merged["advertised.listeners"]
            try:
                merged["listeners"] = (f"derived from {variable}", derived_listeners(advertised))
            except ValueError as exc:
                result.errors.append(f"{variable}: {exc}")
    result.settings = {name: value for name, (_variable, value) in sorted(merged.items())}
    result.sources = {name: variable for name, (variable, _value) in sorted(merged.items())}
    level = environ.get(PREFIX + "LOG_LEVEL")
    if level is None and environ.get(KAFKA_LOG_LEVEL):
        log4j = environ[KAFKA_LOG_LEVEL].strip().upper()
        level = LOG4J_LEVELS.get(log4j)
        if level is None:
            result.warnings.append(f"{KAFKA_LOG_LEVEL}={environ[KAFKA_LOG_LEVEL]} is no log4j "
                                   f"level ({', '.join(LOG4J_LEVELS)}); ignored")
    result.log_level = level
    return result


def broker_overrides(environ: dict[str, str], known: set[str]) -> tuple[list[str], list[str]]:
    """(["key=value", ...] from the environment, [warnings])."""
    result = environment_settings(environ, known)
    return result.overrides, result.warnings


def effective_listeners(environ: dict[str, str]) -> str:
    """``listeners`` as the environment sets it ("" when it does not): what the healthcheck
    needs, without kafkalite's list of settings."""
    for variable in (PREFIX + "LISTENERS", KAFKA_PREFIX + "LISTENERS"):
        if environ.get(variable):
            return environ[variable]
    advertised = (environ.get(PREFIX + "ADVERTISED_LISTENERS")
                  or environ.get(KAFKA_PREFIX + "ADVERTISED_LISTENERS"))
    if advertised and any(v.startswith(KAFKA_PREFIX) for v in environ):
        kafka, _ignored, _errors = kafka_variables(environ)
        if kafka:
            try:
                return derived_listeners(advertised)
            except ValueError:
                return ""
    return ""


def broker_id(environ: dict[str, str]) -> str | None:
    return environ.get(PREFIX + "BROKER_ID") or environ.get(KAFKA_PREFIX + "BROKER_ID")


def broker_command(args: list[str], environ: dict[str, str]) -> list[str]:
    from kafkalite.config import BROKER_BY_NAME, read_properties

    try:  # Kafka 2.8's names that kafkalite accepts without applying them (the broker logs them)
        from kafkalite.config_kafka_names import BROKER_NO_EFFECT
    except ImportError:
        BROKER_NO_EFFECT = {}
    config_file = environ.get(PREFIX + "CONFIG_FILE", DEFAULT_CONFIG_FILE)
    result = environment_settings(environ, set(BROKER_BY_NAME) | set(BROKER_NO_EFFECT))
    for note in result.notes:
        print(f"kafkalite-entrypoint: {note}", file=sys.stderr)
    for warning in result.warnings:
        print(f"kafkalite-entrypoint: warning: {warning}", file=sys.stderr)
    if result.errors:
        raise SystemExit("\n".join(f"kafkalite-entrypoint: {e}" for e in result.errors))
    from_file = read_properties(config_file) if os.path.exists(config_file) else {}
    if "broker.id" not in from_file and "broker.id" not in result.settings \
            and not any(a.startswith("broker.id=") for a in args):
        raise SystemExit("kafkalite-entrypoint: set the broker's id, e.g. KAFKALITE_BROKER_ID=1 "
                         "(or cp-kafka's KAFKA_BROKER_ID=1)")
    if result.settings:
        print("kafkalite-entrypoint: from the environment: " + ", ".join(
            f"{name}={value}" + ("" if result.sources[name] == PREFIX + name.upper().replace(
                ".", "_") else f" ({result.sources[name]})")
            for name, value in result.settings.items()), file=sys.stderr, flush=True)
    command = ["kafkalite", "broker"]
    if os.path.exists(config_file):
        command += ["--config", config_file]
    for item in result.overrides:
        command += ["--override", item]
    if result.log_level is not None:
        command += ["--log-level", result.log_level]
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
