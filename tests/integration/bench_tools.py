"""Running a bench script end to end in the smoke tests: the script under ``bench/`` in a
subprocess, its exit checked, its JSON lines read back. Nothing here judges a time."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from kafkalite.testing.apache_kafka import ApacheKafkaNotFoundError, libs_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def require_apache_kafka() -> None:
    """A missing Kafka fails the test here, naming the fix (never a skip)."""
    try:
        libs_dir()
    except ApacheKafkaNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


def run_bench(script: str, *args: str, json_path, timeout_s: float):
    """``bench/<script> <args> --json <json_path>``: (its stdout, its JSON lines)."""
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", script), *args,
                           "--json", str(json_path)], capture_output=True, text=True, cwd=ROOT,
                          stdin=subprocess.DEVNULL, timeout=timeout_s, check=False)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    rows = [json.loads(line) for line in pathlib.Path(json_path).read_text().splitlines()]
    return proc.stdout, rows
