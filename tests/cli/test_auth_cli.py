"""``practiceflow auth check``: who the credentials are, whether they can write."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import responses
from click.testing import CliRunner
from responses import matchers

from practiceflow.cli import cli

BASE = "https://api.test/uk"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "cli-secret-never-printed"
VALIDATE = f"{BASE}/api/v1/auth/validate"
OK = {
    "authenticated": True,
    "message": "ok",
    "clientID": CLIENT_ID,
    "clientName": "Acme Partners",
    "canWrite": False,
    "timestamp": "2026-11-22T10:00:00Z",
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str | None]:
    values: dict[str, str | None] = {
        name: None for name in os.environ if name.startswith("PRACTICEFLOW_")
    }
    values.update(
        {
            "PRACTICEFLOW_CLIENT_ID": CLIENT_ID,
            "PRACTICEFLOW_CLIENT_SECRET": SECRET,
            "PRACTICEFLOW_PROFILES": str(tmp_path / "none.toml"),
        }
    )
    return values


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def test_check_prints_client_name_id_and_write_access(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    rsps.get(
        VALIDATE,
        json=OK,
        match=[
            matchers.header_matcher({"X-SVC-Auth-ID": CLIENT_ID, "X-SVC-Auth-Key": SECRET}),
            matchers.query_param_matcher({}),
        ],
    )
    result = CliRunner().invoke(cli, ["auth", "check", "--base-url", BASE], env=env)
    assert result.exit_code == 0, result.output
    assert "Acme Partners" in result.output
    assert CLIENT_ID in result.output
    assert "can write:    no" in result.output
    assert SECRET not in result.output


def test_check_json_output_for_machines(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    rsps.get(VALIDATE, json={**OK, "canWrite": True})
    env["PRACTICEFLOW_BASE_URL_UK"] = BASE
    result = CliRunner().invoke(
        cli, ["auth", "check", "--region", "uk", "--auth-method", "basic", "--json"], env=env
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["clientName"] == "Acme Partners"
    assert payload["clientID"] == CLIENT_ID
    assert payload["canWrite"] is True
    assert payload["baseUrl"] == BASE
    assert payload["authMethod"] == "basic"
    assert rsps.calls[0].request.headers["Authorization"].startswith("Basic ")
    assert "X-SVC-Auth-Key" not in rsps.calls[0].request.headers


def test_check_on_401_says_why_and_exits_3(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    rsps.get(VALIDATE, status=401, json={"title": "Unauthorized", "status": 401})
    result = CliRunner().invoke(cli, ["auth", "check", "--base-url", BASE], env=env)
    assert result.exit_code == 3
    assert "GET /api/v1/auth/validate -> 401" in result.output
    assert "region" in result.output
    assert SECRET not in result.output


def test_check_without_credentials_exits_2_and_says_how_to_set_them(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    env["PRACTICEFLOW_CLIENT_SECRET"] = None
    result = CliRunner().invoke(cli, ["auth", "check", "--base-url", BASE], env=env)
    assert result.exit_code == 2
    assert "PRACTICEFLOW_CLIENT_SECRET" in result.output
    assert len(rsps.calls) == 0


def test_check_reports_authenticated_false_as_auth_failure(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    rsps.get(VALIDATE, json={**OK, "authenticated": False, "message": "client inactive"})
    result = CliRunner().invoke(cli, ["auth", "check", "--base-url", BASE], env=env)
    assert result.exit_code == 3
    assert "client inactive" in result.output


def test_help_shows_an_example() -> None:
    result = CliRunner().invoke(cli, ["auth", "check", "--help"])
    assert result.exit_code == 0
    assert "Examples:" in result.output
    assert "practiceflow auth check" in result.output
    for option in ("--profile", "--region", "--base-url", "--auth-method", "--json"):
        assert option in result.output
