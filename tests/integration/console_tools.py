"""What the console's integration and browser tests share: ``kafkalite console`` as a real process
on a free port, its JSON API, and its event stream read on a thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from kafkalite.local.ports import free_port


class ConsoleProcess:
    """``python -m kafkalite console`` for a cluster; ``url`` once it serves."""

    def __init__(self, zookeeper: str, log_path: str, bootstrap: str | None = None,
                 sample_interval_s: float = 0.5):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [sys.executable, "-m", "kafkalite", "console", "--zookeeper", zookeeper,
                "--port", str(self.port), "--sample-interval", str(sample_interval_s)]
        if bootstrap:
            argv += ["--bootstrap-server", bootstrap]
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL,
                                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
        wait_for(self._serving, 60, "the console to serve /api/cluster")

    def _serving(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the console exited with {self.process.returncode}:\n"
                                 f"{self.log_tail()}")
        try:
            self.get("/api/cluster")
            return True
        except OSError:
            return False

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return json.loads(response.read())

    def status_of(self, path: str) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def log_tail(self, n: int = 40) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class EventStream:
    """``GET /api/events`` read on a daemon thread; ``events`` grows as they arrive."""

    def __init__(self, url: str):
        self.events: list[dict] = []
        self._response = urllib.request.urlopen(url + "/api/events?backlog=0", timeout=120)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for raw in self._response:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    self.events.append(json.loads(line[len("data: "):]))
        except Exception:  # noqa: BLE001 - closed under the reader (close() at the end)
            return

    def sentences(self) -> list[str]:
        return [e["sentence"] for e in list(self.events)]

    def close(self) -> None:
        self._response.close()


def wait_for(condition, timeout_s: float, what: str, interval_s: float = 0.2):
    """``condition()``'s first truthy value; AssertionError naming ``what`` after ``timeout_s``.
    Exceptions other than AssertionError count as 'not yet'."""
    deadline = time.monotonic() + timeout_s
    last = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except AssertionError:
            raise
        except Exception as exc:  # noqa: BLE001 - not ready yet
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}"
                                 + (f" (last error: {last})" if last else ""))
        time.sleep(interval_s)
