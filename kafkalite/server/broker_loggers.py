"""Broker loggers (Kafka's BROKER_LOGGER config resource) as Python loggers.

DescribeConfigs lists every logger with its effective level (Kafka's Log4jController);
IncrementalAlterConfigs sets a level (SET) or makes a logger inherit its parent's again (DELETE),
with Kafka's checks and error messages. Split from ``config_admin``, which re-exports these names.
"""

from __future__ import annotations

import logging

from kafkalite import errors
from kafkalite.server.dynamic_config import OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT

log = logging.getLogger(__name__)

OP_NAMES = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}

# Kafka's log4j levels, as Python logging levels
LOG_LEVELS = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
              "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": 5}
ROOT_LOGGER = "root"


def _level_name(level: int) -> str:
    for name, number in sorted(LOG_LEVELS.items(), key=lambda kv: -kv[1]):
        if level >= number:
            return name
    return "TRACE"


def current_loggers() -> dict[str, str]:
    """{logger name: effective level}, the root logger as ``root`` (Kafka's Log4jController).
    Parent names that only group loggers (``kafkalite.server``) count as loggers too: setting
    one sets the level of everything below it."""
    out = {ROOT_LOGGER: _level_name(logging.getLogger().getEffectiveLevel())}
    loggers = logging.Logger.manager.loggerDict
    for name in sorted(loggers):
        logger = loggers[name]
        if isinstance(logger, logging.Logger):
            out[name] = _level_name(logger.getEffectiveLevel())
        else:          # a PlaceHolder: the level of its nearest real ancestor
            parent = name.rpartition(".")[0]
            while parent and not isinstance(loggers.get(parent), logging.Logger):
                parent = parent.rpartition(".")[0]
            found = loggers[parent] if parent else logging.getLogger()
            out[name] = _level_name(found.getEffectiveLevel())
    return out


# --- broker loggers ----------------------------------------------------------------------------

def validate_logger_ops(ops) -> None:
    known = current_loggers()
    seen = set()
    for name, op, value in ops:
        if name in seen:
            raise errors.InvalidRequestError(f"Error due to duplicate config keys : {name}")
        seen.add(name)
        if op in (OP_APPEND, OP_SUBTRACT):
            raise errors.InvalidRequestError(
                f"{OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource")
        if op not in (OP_SET, OP_DELETE):
            raise errors.InvalidRequestError(f"unknown config operation {op} for {name}")
        if name not in known:
            raise errors.ConfigError(f"Logger {name} does not exist!")
        if op == OP_SET and value not in LOG_LEVELS:
            raise errors.ConfigError(
                f"Cannot set the log level of {name} to {value} as it is not a supported log "
                f"level. Valid log levels are {', '.join(LOG_LEVELS)}")
        if op == OP_DELETE and name == ROOT_LOGGER:
            raise errors.InvalidRequestError(
                f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")


def apply_logger_ops(ops) -> None:
    for name, op, value in ops:
        logger = logging.getLogger() if name == ROOT_LOGGER else logging.getLogger(name)
        if op == OP_SET:
            logger.setLevel(LOG_LEVELS[value])
        else:
            logger.setLevel(logging.NOTSET)     # inherit from its parent again
        log.info("logger %s: level %s", name, value if op == OP_SET else "inherited")
