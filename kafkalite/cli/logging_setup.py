"""Log format for the long-running commands (broker, cluster): Kafka-like one-line records.

The time has milliseconds, as Kafka's log4j ``[%d]`` (``2026-11-26 16:50:00,123``): a failover
is read step by step from several brokers' logs, and its steps are milliseconds apart."""

from __future__ import annotations

import logging
import sys


def setup_logging(level: str = "INFO", stream=None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(
        "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("kazoo").setLevel(logging.WARNING)
