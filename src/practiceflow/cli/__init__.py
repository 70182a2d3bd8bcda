"""The ``practiceflow`` command: thin over the library, one file per command family.

Families (:data:`LAZY_COMMANDS`) are imported only when one of their commands runs, so that
a command starts fast (``sandbox`` serves within 2 s). Errors map to the exit codes listed in
the README.
"""

from __future__ import annotations

import importlib
import io
import logging
import sys
from typing import Any, NamedTuple

import click

from practiceflow import __version__
from practiceflow.errors import EXIT_CODES, PracticeflowError

__all__ = ["LAZY_COMMANDS", "LazyCommand", "cli", "main"]

_log = logging.getLogger("practiceflow.cli")


class LazyCommand(NamedTuple):
    """Where a top-level command lives, and its one-line help for ``--help``."""

    module: str
    attribute: str
    summary: str


LAZY_COMMANDS: dict[str, LazyCommand] = {
    name: LazyCommand(f"practiceflow.cli.{module}", attribute, summary)
    for name, module, attribute, summary in [
        ("action", "modules", "action", "Run one action module."),
        ("attention", "attention", "attention", "List and settle what needs a person."),
        ("audit", "attention", "audit", "Check what was received and ran (completeness)."),
        ("auth", "auth", "auth", "Check the API credentials."),
        ("db", "db", "db", "Create or upgrade the state database."),
        ("export", "export", "export_command", "Generate a connector for a platform."),
        ("mcp", "mcp", "mcp", "Serve the API as tools for AI assistants (MCP)."),
        ("modules", "modules", "modules", "List, show and validate modules."),
        ("plan", "runs", "plan", "Forecast the API calls and budget of recipes."),
        ("recipes", "scaffold", "recipes", "Start new recipes."),
        ("replay", "versions", "replay_command", "Replay runs under another version."),
        ("run", "runs", "run", "Run a recipe (once, or dry-run)."),
        ("runs", "runs", "runs", "List, show, retry and resolve runs."),
        ("sandbox", "sandbox", "sandbox", "Run the local simulator of the API."),
        ("serve", "runs", "serve", "Run recipes as a service (receiver + pollers)."),
        ("test", "test_cmd", "test_command", "Test recipes and modules offline."),
        ("triggers", "triggers", "triggers", "Subscribe, check and poll triggers."),
        ("worker", "worker", "worker", "Run one replica of a fleet (PostgreSQL)."),
    ]
}


class _Group(click.Group):
    """Loads command families lazily and maps practiceflow errors to exit codes."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = LAZY_COMMANDS.get(cmd_name)
        if cmd_name in self.commands or spec is None:
            return self.commands.get(cmd_name)
        if cmd_name == "serve" and not ctx.resilient_parsing:
            from practiceflow.service.netaddr import EARLY_SOCKET, claim

            # The receiver's port listens before the slow imports; serve takes the socket.
            ctx.meta[EARLY_SOCKET] = claim()
        command = getattr(importlib.import_module(spec.module), spec.attribute)
        if not isinstance(command, click.Command):  # pragma: no cover - table is tested
            raise TypeError(f"{spec.module}.{spec.attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (name, found.get_short_help_str(limit=60) if found else LAZY_COMMANDS[name].summary)
            for name in self.list_commands(ctx)
            for found in [self.commands.get(name)]
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PracticeflowError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except OSError as exc:  # the machine's fault (a full disk, /dev/full, a folder)
            if ctx.find_root().params.get("debug"):
                _log.error("cannot read or write a file", exc_info=exc)
            click.echo(f"error: cannot read or write a file: {exc}", err=True)
            ctx.exit(EXIT_CODES["config"])
        except Exception as exc:  # a bug: exit 70; the traceback (it can hold input) on --debug
            debug = bool(ctx.find_root().params.get("debug"))
            kind = type(exc).__name__
            _log.error("internal error: %s: %s", kind, exc, exc_info=exc if debug else None)
            hint = "" if debug else "; run with --debug for the traceback"
            click.echo(f"error: internal error ({kind}), a bug in practiceflow{hint}", err=True)
            ctx.exit(EXIT_CODES["bug"])


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="practiceflow")
@click.option(
    "--debug", is_flag=True, help="On an internal error (exit code 70), log the traceback."
)
def cli(debug: bool) -> None:
    """Declarative actions, triggers and durable recipes for the Partner Integration API.

    \b
    Examples:
      practiceflow sandbox                 # a local simulator of the API on 127.0.0.1
      practiceflow auth check              # who the credentials belong to, can they write
      practiceflow modules list            # the shipped actions and triggers
      practiceflow run recipes/proposal_to_bill_and_eform.yaml --dry-run
    """
    del debug  # read by the error handler from the context


def main() -> None:
    """Entry point of the console script."""
    for stream in (sys.stdout, sys.stderr):
        # A lone surrogate (a name cut inside an emoji) is printed as its escape, never
        # raised from a print or a log line.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    cli(prog_name="practiceflow")


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    main()
