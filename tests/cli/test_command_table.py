"""The lazy command table matches what each command family exports."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
from click.testing import CliRunner

from practiceflow.cli import LAZY_COMMANDS, cli


def _family_commands() -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for module in sorted({spec.module for spec in LAZY_COMMANDS.values()}):
        if importlib.util.find_spec(module) is None:
            continue
        for command in importlib.import_module(module).COMMANDS:
            assert command.name is not None
            found[command.name] = command
    return found


def test_every_exported_command_is_in_the_table_under_its_own_name() -> None:
    for name, command in _family_commands().items():
        spec = LAZY_COMMANDS[name]
        assert getattr(importlib.import_module(spec.module), spec.attribute) is command


def test_every_table_entry_resolves_to_a_command() -> None:
    exported = _family_commands()
    for name, spec in LAZY_COMMANDS.items():
        if importlib.util.find_spec(spec.module) is None:
            continue
        assert name in exported, f"{spec.module} does not export {name!r} in COMMANDS"


def test_help_lists_every_available_command_with_its_summary() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in _family_commands():
        assert f"  {name} " in result.output


def test_sandbox_command_does_not_import_the_other_families() -> None:
    code = (
        "import sys\n"
        "from practiceflow.cli import cli\n"
        "cli.get_command(None, 'sandbox')\n"
        "print(sorted(m for m in sys.modules if m.startswith('practiceflow.cli.')))\n"
    )
    out = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['practiceflow.cli.sandbox']"
