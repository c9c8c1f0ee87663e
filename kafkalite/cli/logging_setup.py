"""Log format for the long-running commands (broker, cluster): Kafka-like one-line records."""

from __future__ import annotations

import logging
import sys


def setup_logging(level: str = "INFO", stream=None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(
        "[%(asctime)s] %(levelname)s %(message)s (%(name)s)", "%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("kazoo").setLevel(logging.WARNING)
