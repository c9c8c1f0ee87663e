"""What a subcommand raises for a mistake the user can fix (every subcommand module uses it)."""

from __future__ import annotations

import click


class CliError(click.ClickException):
    """A mistake the user can fix: printed as one ``error: ...`` line, exit status 1 (or 2)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)
