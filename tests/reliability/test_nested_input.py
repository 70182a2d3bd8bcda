"""Absurdly nested YAML, JSON or TOML ends in the documented clear error wherever it is read:
fleet files, profile files, problem bodies of the API, a person's JSON on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.api.config import load_settings
from practiceflow.api.wire import parse_problem
from practiceflow.cli import cli
from practiceflow.errors import ConfigError
from practiceflow.fleet.fleet_file import load_fleet

DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("practices: " + "[" * 50_000 + "]" * 50_000, r"fleet\.yaml:1:\d+: nesting deeper"),
        ("practices: {a: [1\n", r"fleet\.yaml:2:1: YAML syntax"),
        ("practices: &a {x: 1}\nb: *a\n", r"fleet\.yaml:2:4: YAML aliases"),
    ],
)
def test_a_broken_fleet_file_is_a_located_config_error(tmp_path: Path, text: str, message: str):
    path = tmp_path / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_fleet(path)


def test_a_fleet_path_that_is_not_a_regular_file_is_refused_unread(tmp_path: Path):
    link = tmp_path / "fleet.yaml"
    link.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="not a regular file"):
        load_fleet(link)


def test_a_deeply_nested_profile_file_is_a_config_error(tmp_path: Path):
    path = tmp_path / "profiles.toml"
    path.write_text("[default]\nclient_id = " + "[" * 50_000 + "]" * 50_000, encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read the profile file"):
        load_settings(environ={}, profiles_file=path)


def test_a_deeply_nested_problem_body_reads_as_no_problem_details():
    assert parse_problem(DEEP_JSON, "application/problem+json") == {}


def test_a_deeply_nested_resolve_output_is_a_usage_error(tmp_path: Path):
    state = tmp_path / "state.db"
    result = CliRunner().invoke(
        cli,
        ["runs", "resolve", "0" * 32, "--step", "a", "--as", "done", "--output", DEEP_JSON,
         "--state", str(state)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--output: got text that is not JSON" in result.output
    assert "Traceback" not in result.output
