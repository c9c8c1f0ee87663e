"""What the CLI integration tests share: run ``kafkalite`` in-process, and wait for a condition."""

from __future__ import annotations

import time

from kafkalite.cli.main import main


def run(capsys, *args):
    """``(exit code, stdout, stderr)`` of ``kafkalite ARGS``."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def wait_for(condition, timeout_s=30.0, what="condition"):
    """``condition()``'s first truthy value, polled every 0.2 s; AssertionError after
    ``timeout_s``. An exception in ``condition`` fails at once."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
