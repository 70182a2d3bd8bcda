"""The ``practiceflow`` command: thin over the library, one file per command family.

Exit codes (also in the README): 0 success, 1 a check found problems (for example
``modules validate``), 2 configuration or input error, 3 authentication or write access,
4 transient (rate limit, server, network), 5 a write is in doubt, 70 a bug.
"""

from __future__ import annotations

from typing import Any

import click

from practiceflow import __version__
from practiceflow.cli import auth, modules, sandbox
from practiceflow.errors import PracticeflowError

__all__ = ["cli", "main"]


class _Group(click.Group):
    """Maps practiceflow errors to a one-line message and the documented exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PracticeflowError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="practiceflow")
def cli() -> None:
    """Declarative actions, triggers and durable recipes for the Partner Integration API.

    \b
    Examples:
      practiceflow sandbox                 # a local simulator of the API on 127.0.0.1
      practiceflow auth check              # who the credentials belong to, can they write
      practiceflow modules list            # the shipped actions and triggers
    """


for _family in (auth, sandbox, modules):
    for _command in _family.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    """Entry point of the console script."""
    cli(prog_name="practiceflow")


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    main()
