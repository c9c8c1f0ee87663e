"""What every step of ``kafkalite tour`` does: say what to look at, run commands (printing each
one, so it can be typed by hand), and check that what it predicted happened."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any, Callable

import click


class TourError(click.ClickException):
    """A prediction that did not come true, or a command that failed."""

    def show(self, file=None) -> None:
        click.echo(f"✗ {self.format_message()}", err=True)


class Tour:
    def __init__(self, bootstrap: str, zookeeper: str, data_dir: str, interactive: bool,
                 console_url: str | None, run_id: str):
        self.bootstrap = bootstrap
        self.zookeeper = zookeeper
        self.data_dir = data_dir
        self.interactive = interactive
        self.console_url = console_url
        self.run_id = run_id
        self.background: list[subprocess.Popen] = []
        self.env = dict(os.environ, KAFKALITE_BOOTSTRAP_SERVER=bootstrap,
                        KAFKALITE_ZOOKEEPER=zookeeper, PYTHONUNBUFFERED="1")

    def name(self, base: str) -> str:
        """A topic or group name of this run (a second tour never trips over the first's)."""
        return f"{base}-{self.run_id}"

    # --- talking -----------------------------------------------------------------------------------
    def title(self, number: int, text: str) -> None:
        click.echo("")
        click.secho(f"── {number}. {text} " + "─" * max(0, 60 - len(text)), bold=True)

    def say(self, text: str) -> None:
        click.echo(textwrap.fill(" ".join(text.split()), width=96))

    def look(self, text: str) -> None:
        where = f" ({self.console_url})" if self.console_url else ""
        click.secho(textwrap.fill("👀 In the console" + where + ": " + " ".join(text.split()),
                                  width=96), fg="cyan")

    def pause(self) -> None:
        if self.interactive:
            click.prompt("  press Enter to go on", default="", show_default=False)

    # --- doing -------------------------------------------------------------------------------------
    def kafkalite(self, *args: str, input_text: str | None = None, input_shown: str | None = None,
                  show_lines: int = 12) -> str:
        """Run ``kafkalite ARGS`` (printed first, with the shell command that makes its input:
        ``input_shown``, else a printf of ``input_text``), show its output, return its stdout."""
        shown = " ".join(shlex.quote(a) for a in args)
        prefix = ""
        if input_text is not None:
            escaped = input_text.replace("\\", "\\\\").replace("%", "%%").replace("\n", "\\n")
            prefix = (input_shown or f"printf {shlex.quote(escaped)}") + " | "
        click.secho(f"$ {prefix}kafkalite {shown}", fg="green")
        result = subprocess.run([sys.executable, "-m", "kafkalite", *args], env=self.env,
                                input=input_text, capture_output=True, text=True, timeout=120)
        lines = result.stdout.splitlines()
        for line in lines[:show_lines]:
            click.echo(f"  {line}")
        if len(lines) > show_lines:
            click.echo(f"  ... ({len(lines) - show_lines} more lines)")
        if result.returncode != 0:
            raise TourError(f"'kafkalite {shown}' failed ({result.returncode}): "
                            f"{result.stderr.strip()[-800:]}")
        return result.stdout

    def start_background(self, args: list[str], output_path: str) -> subprocess.Popen:
        """``kafkalite ARGS > output_path &``: a long-running command (a group member)."""
        shown = " ".join(shlex.quote(a) for a in args)
        click.secho(f"$ kafkalite {shown} > {shlex.quote(output_path)} &", fg="green")
        with open(output_path, "w") as out:
            proc = subprocess.Popen([sys.executable, "-m", "kafkalite", *args], env=self.env,
                                    stdout=out, stderr=subprocess.DEVNULL,
                                    stdin=subprocess.DEVNULL)
        self.background.append(proc)
        return proc

    def start_typing(self, args: list[str], lines: list[str]) -> subprocess.Popen:
        """``kafkalite ARGS`` with ``lines`` typed on its stdin and the input left open (no
        Ctrl-D yet), so the tour can act while it waits; ``end_input`` ends it."""
        shown = " ".join(shlex.quote(a) for a in args)
        click.secho(f"$ kafkalite {shown}", fg="green")
        for line in lines:
            click.echo(f"  > {line}")
        proc = subprocess.Popen([sys.executable, "-m", "kafkalite", *args], env=self.env,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        proc.stdin.write("".join(f"{line}\n" for line in lines))
        proc.stdin.flush()
        self.background.append(proc)
        return proc

    def end_input(self, proc: subprocess.Popen, timeout_s: float = 120.0) -> str:
        """Ctrl-D on a ``start_typing`` command: its input ends; wait for it to exit (0, or
        TourError) and return what it said on stderr."""
        click.secho("  > ^D        # end of the input", fg="green")
        proc.stdin.close()
        try:
            err = proc.stderr.read() if proc.wait(timeout_s) is not None else ""
        except subprocess.TimeoutExpired:
            raise TourError(f"the command did not finish within {timeout_s:.0f} s after the "
                            f"end of its input") from None
        finally:
            if proc.poll() is not None and proc in self.background:
                self.background.remove(proc)
        for line in err.splitlines():
            click.echo(f"  {line}")
        if proc.returncode != 0:
            raise TourError(f"it failed ({proc.returncode}): {err.strip()[-800:]}")
        return err

    def stop_background(self) -> None:
        for proc in self.background:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.background:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.background.clear()

    def kill_9(self, pid: int, what: str) -> None:
        click.secho(f"$ kill -9 {pid}        # {what}", fg="green")
        os.kill(pid, signal.SIGKILL)

    def check(self, prediction: str, condition: Callable[[], Any], timeout_s: float = 30.0,
              interval_s: float = 0.5) -> Any:
        """Wait for ``condition()`` to hold (truthy), then say the prediction came true."""
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while True:
            try:
                value = condition()
                if value:
                    click.secho(f"✓ as predicted: {prediction}", fg="green", bold=True)
                    return value
            except Exception as exc:  # noqa: BLE001 - not there yet; said if it never is
                last = exc
            if time.monotonic() > deadline:
                raise TourError(f"predicted {prediction!r}, but it did not happen within "
                                f"{timeout_s:.0f} s" + (f" (last error: {last})" if last else ""))
            time.sleep(interval_s)
