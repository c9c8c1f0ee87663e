"""kafkalite.local.procs: children that die with their parent, pids checked with start times."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kafkalite.local.procs import (
    parent_death_preexec,
    pid_alive,
    pid_start_time,
    wait_pids_gone,
)

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PR_SET_PDEATHSIG and /proc are Linux's")


def test_pid_alive_for_this_process_and_a_reaped_child():
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)
    assert not pid_alive(None) and not pid_alive(0)


@linux_only
def test_a_recycled_pid_is_not_taken_for_the_old_process():
    start = pid_start_time(os.getpid())
    assert start is not None
    assert pid_alive(os.getpid(), start)
    assert not pid_alive(os.getpid(), start + 1)      # "the process that started then" is gone


@linux_only
def test_a_zombie_counts_as_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert wait_pids_gone({child.pid: None}, timeout_s=30) == []    # exited, not yet reaped
    child.wait()


@linux_only
def test_a_child_with_a_parent_death_signal_dies_with_its_parent_killed_by_sigkill():
    # a middle process spawns a sleeper with the parent-death signal, then gets kill -9
    middle = subprocess.Popen(
        [sys.executable, "-c",
         ("import signal, subprocess, sys, time\n"
          "from kafkalite.local.procs import parent_death_preexec\n"
          "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],\n"
          "                     preexec_fn=parent_death_preexec(signal.SIGTERM))\n"
          "print(p.pid, flush=True)\n"
          "time.sleep(120)\n")],
        stdout=subprocess.PIPE)
    try:
        sleeper = int(middle.stdout.readline())
        start = pid_start_time(sleeper)
        assert pid_alive(sleeper, start)
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait()
        assert wait_pids_gone({sleeper: start}, timeout_s=30) == []
    finally:
        if middle.poll() is None:
            middle.kill()
            middle.wait()


@linux_only
def test_without_the_signal_the_child_outlives_its_parent():
    """The control case: what the parent-death signal prevents."""
    middle = subprocess.Popen(
        [sys.executable, "-c",
         ("import subprocess, sys, time\n"
          "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
          "print(p.pid, flush=True)\n"
          "time.sleep(120)\n")], stdout=subprocess.PIPE)
    sleeper = int(middle.stdout.readline())
    try:
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait()
        time.sleep(0.3)
        assert pid_alive(sleeper)
    finally:
        os.kill(sleeper, signal.SIGKILL)


def test_no_preexec_where_the_kernel_has_no_parent_death_signal(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert parent_death_preexec(signal.SIGTERM) is None
