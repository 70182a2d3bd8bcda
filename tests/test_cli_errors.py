"""The CLI turns practiceflow errors into one line and the documented exit code."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.errors import (
    EXIT_CODES,
    AuthError,
    BugError,
    ConfigError,
    InDoubtError,
    PracticeflowError,
    ServerError,
    TransportError,
)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigError("recipes/x.yaml:3:1 steps: got 'a'; expected a list"), 2),
        (AuthError("GET", "/api/v1/auth/validate", 401), 3),
        (ServerError("GET", "/api/v1/entities", 503), 4),
        (TransportError("GET", "/api/v1/entities", "connection refused"), 4),
        (
            InDoubtError("POST", "/api/v1/bills", ServerError("POST", "/api/v1/bills", 500)),
            5,
        ),
        (BugError("journal went backwards"), 70),
    ],
)
def test_error_kind_maps_to_exit_code_and_one_line(error: PracticeflowError, code: int) -> None:
    @click.command("boom")
    def boom() -> None:
        raise error

    cli.add_command(boom)
    try:
        result = CliRunner().invoke(cli, ["boom"])
    finally:
        cli.commands.pop("boom")
    assert result.exit_code == code == EXIT_CODES[error.kind]
    assert result.output.startswith("error: ")
    assert str(error) in result.output
    assert "Traceback" not in result.output


def test_help_lists_examples() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "practiceflow sandbox" in result.output


@pytest.mark.parametrize(
    "error",
    [RecursionError("maximum recursion depth exceeded"), KeyError("entityKey"), MemoryError()],
)
def test_any_other_exception_is_one_line_internal_error_with_exit_70(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    @click.command("boom")
    def boom() -> None:
        raise error

    cli.add_command(boom)
    try:
        result = CliRunner().invoke(cli, ["boom"])
    finally:
        cli.commands.pop("boom")
    assert result.exit_code == 70
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: internal error ({type(error).__name__}), a bug in practiceflow; "
        "run with --debug for the traceback"
    ]
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    logged = [r for r in caplog.records if r.name == "practiceflow.cli"]
    assert [r.levelname for r in logged] == ["ERROR"]
    assert type(error).__name__ in logged[0].getMessage()
    assert logged[0].exc_info is None


def test_debug_logs_the_traceback_of_an_internal_error(caplog: pytest.LogCaptureFixture) -> None:
    @click.command("boom")
    def boom() -> None:
        raise ZeroDivisionError("detail of the bug")

    cli.add_command(boom)
    try:
        result = CliRunner().invoke(cli, ["--debug", "boom"])
    finally:
        cli.commands.pop("boom")
    assert result.exit_code == 70
    logged = [r for r in caplog.records if r.name == "practiceflow.cli"]
    assert "detail of the bug" in logged[0].getMessage()
    assert logged[0].exc_info is not None
    assert logged[0].exc_info[0] is ZeroDivisionError


@pytest.mark.parametrize("content", [b"hello\n", bytes(range(256)) * 20], ids=["text", "noise"])
def test_a_state_file_that_is_not_a_database_is_a_clear_error(tmp_path, content: bytes) -> None:
    state = tmp_path / "state.db"
    state.write_bytes(content)
    result = CliRunner(env={"PRACTICEFLOW_STATE": str(state)}).invoke(cli, ["runs", "list"])
    assert result.exit_code == 2, result.output
    assert "cannot be read as a SQLite database" in result.output
    assert "internal error" not in result.output
    assert state.read_bytes() == content  # left as it was


def test_a_limit_too_large_for_the_store_is_refused_by_the_option(tmp_path) -> None:
    env = {"PRACTICEFLOW_STATE": str(tmp_path / "state.db")}
    huge = ["runs", "list", "--limit", "99999999999999999999"]
    result = CliRunner(env=env).invoke(cli, huge)
    assert result.exit_code == 2, result.output
    assert "--limit" in result.output
    assert "internal error" not in result.output


def test_modules_list_reports_a_module_file_that_cannot_be_read(tmp_path) -> None:
    """As modules validate does: never skipped in silence."""
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "missing.yaml")
    result = CliRunner().invoke(cli, ["modules", "list", "--modules", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "zero.yaml: not a regular file" in result.output
    assert "gone.yaml" in result.output
