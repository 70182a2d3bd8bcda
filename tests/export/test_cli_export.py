"""``practiceflow export``: help with an example, writing, and --check for CI."""

from __future__ import annotations

from click.testing import CliRunner

from practiceflow.cli.export import COMMANDS, export_command


def test_command_is_exported_for_registration():
    assert export_command in COMMANDS


def test_help_shows_an_example():
    result = CliRunner().invoke(export_command, ["--help"])
    assert result.exit_code == 0
    assert "practiceflow export zapier --out connectors/zapier" in result.output


def test_unknown_platform_lists_the_valid_ones():
    result = CliRunner().invoke(export_command, ["zappier", "--out", "x"])
    assert result.exit_code == 2
    assert "openapi" in result.output
    assert "zapier" in result.output


def test_export_then_check_is_current_and_detects_an_edit(tmp_path):
    out = tmp_path / "openapi"
    runner = CliRunner()
    assert runner.invoke(export_command, ["openapi", "--out", str(out)]).exit_code == 0
    assert runner.invoke(export_command, ["openapi", "--out", str(out), "--check"]).exit_code == 0
    (out / "openapi.json").write_text("{}\n")
    result = runner.invoke(export_command, ["openapi", "--out", str(out), "--check"])
    assert result.exit_code == 1
    assert "openapi.json" in result.output
