"""Child processes that cannot outlive their launcher, and pids checked before they are signalled.

``parent_death_preexec(sig)`` is a ``preexec_fn`` for ``subprocess.Popen`` that asks Linux to send
the child ``sig`` when its parent dies (``prctl(PR_SET_PDEATHSIG)`` through ctypes; the setting
survives ``exec``, so it works for a JVM as for a Python broker). The kernel sends it however the
parent ends -- a clean exit, a crash, ``kill -9`` -- which a signal handler or an ``atexit`` hook in
the parent cannot promise. Two rules come with it:

* "parent" is the *thread* that forked the child: spawn from a thread that lives as long as the
  launcher (``kafkalite cluster up`` spawns from its main thread);
* a parent that died between the fork and the ``prctl`` call would never signal: the child
  checks ``getppid()`` right after the call and kills itself if it was already orphaned.

Elsewhere (macOS, or without a usable libc) it returns None and children live on; ``kafkalite
cluster down`` then stops them by the pids in the pidfile.

``Placement`` says where a child runs: the address it binds and a prefix for its command line
(``ip netns exec <ns>`` for a process in a network namespace of ``kafkalite.testing.faults``).
``LocalCluster`` and the ZooKeeper launchers take one per process.

``pid_start_time`` / ``pid_alive`` identify a process by pid *and* start time (``/proc/<pid>/stat``
field 22 on Linux), so a pidfile that outlived its processes never makes anyone signal a stranger
that got a recycled pid.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess  # noqa: F401 - named in ChildProcess's annotations
import sys
import time
from dataclasses import dataclass
from typing import Callable

__all__ = ["Placement", "ChildProcess", "parent_death_preexec", "pid_start_time", "pid_alive",
           "wait_pids_gone"]

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Placement:
    """Where a child process runs: ``host``, the address it binds and advertises, and
    ``command_prefix``, what goes in front of its command line. The default is this machine's
    loopback with no prefix."""

    host: str = "127.0.0.1"
    command_prefix: tuple[str, ...] = ()


class ChildProcess:
    """What a launcher's handle of one child process offers, given its ``process`` (a Popen or
    None) and ``log_path`` (the file its output goes to): kafkalite's brokers and Kafka's."""

    process: "subprocess.Popen | None"
    log_path: str

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, n: int = 40) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


def parent_death_preexec(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` making the child receive ``sig`` when its parent dies (Linux), or None
    where the kernel offers no such thing."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()
    number = int(sig)

    def preexec() -> None:       # runs in the child between fork and exec: nothing fancy here
        prctl(PR_SET_PDEATHSIG, number, 0, 0, 0)
        if os.getppid() != parent:
            # orphaned before prctl took effect; SIGKILL, because a handler the parent installed
            # for ``sig`` is still in place until exec
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (index 0 is field 3, the state)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return data[data.rfind(")") + 2:].split()


def pid_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), None if unknown."""
    fields = _proc_stat(pid)
    if not fields or len(fields) < 20:
        return None
    with contextlib.suppress(ValueError):
        return int(fields[19])      # field 22, starttime
    return None


def pid_alive(pid: int | None, start_time: int | None = None) -> bool:
    """True while process ``pid`` runs (a zombie counts as gone); with ``start_time``, only if it
    is still the process that started then (not a recycled pid)."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass                        # exists, someone else's
    fields = _proc_stat(pid)
    if fields is None:
        return not os.path.isdir("/proc")   # no procfs: trust kill(0)
    if fields[0] in ("Z", "X"):
        return False
    if start_time is not None and len(fields) >= 20:
        with contextlib.suppress(ValueError):
            return int(fields[19]) == start_time
    return True


def wait_pids_gone(pids: dict[int, int | None], timeout_s: float,
                   interval_s: float = 0.05) -> list[int]:
    """Wait until none of ``pids`` ({pid: start time}) is alive; the ones left after
    ``timeout_s`` (empty when all are gone)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = [pid for pid, start in pids.items() if pid_alive(pid, start)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(interval_s)
