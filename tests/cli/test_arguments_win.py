"""Arguments win over the environment, which wins over the profile file: setting by setting
for every row of the README's credentials table (issue 24), through ``auth check``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import responses
from click.testing import CliRunner

from practiceflow.cli import cli

ENV_ID = "11111111-0000-0000-0000-00000000e0e0"
ARG_ID = "22222222-0000-0000-0000-00000000a0a0"
PROFILE_ID = "33333333-0000-0000-0000-000000000f0f"
SECRET = "never-printed-secret"
ANZ = "https://anz.api.test"
UK = "https://uk.api.test"
OTHER = "https://other.api.test"
OK = {"authenticated": True, "clientName": "Acme", "canWrite": True}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str | None]:
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(
        f'[default]\nclient_id = "{PROFILE_ID}"\nclient_secret = "{SECRET}"\n'
        f'[other]\nclient_id = "{ARG_ID}"\nclient_secret = "{SECRET}"\nbase_url = "{OTHER}"\n',
        encoding="utf-8",
    )
    values: dict[str, str | None] = {
        name: None for name in os.environ if name.startswith("PRACTICEFLOW_")
    }
    values["PRACTICEFLOW_PROFILES"] = str(profiles)
    values["PRACTICEFLOW_CLIENT_SECRET"] = SECRET
    return values


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for base in (ANZ, UK, OTHER):
            mock.get(f"{base}/api/v1/auth/validate", json=OK)
        yield mock


def _check(env: dict[str, str | None], *args: str) -> tuple[int, dict[str, object], str]:
    result = CliRunner().invoke(cli, ["auth", "check", "--json", *args], env=env)
    data = json.loads(result.stdout) if result.exit_code == 0 else {}
    return result.exit_code, data, result.output


def test_region_argument_beats_a_generic_base_url_in_the_environment(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    env.update(PRACTICEFLOW_BASE_URL=ANZ, PRACTICEFLOW_BASE_URL_UK=UK)
    code, data, output = _check(env, "--region", "uk")
    assert code == 0, output
    assert data["baseUrl"] == UK
    assert [call.request.url for call in rsps.calls] == [f"{UK}/api/v1/auth/validate"]


def test_region_argument_without_a_url_of_its_region_is_refused_and_sends_nothing(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    env.update(PRACTICEFLOW_BASE_URL=ANZ)
    code, _, output = _check(env, "--region", "uk")
    assert code == 2
    assert "PRACTICEFLOW_BASE_URL_UK" in output
    assert "PRACTICEFLOW_BASE_URL (set for region unnamed)" in output
    assert len(rsps.calls) == 0


def test_region_argument_beats_the_region_in_the_environment(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    env.update(
        PRACTICEFLOW_REGION="anz", PRACTICEFLOW_BASE_URL_ANZ=ANZ, PRACTICEFLOW_BASE_URL_UK=UK
    )
    assert _check(env)[1]["baseUrl"] == ANZ
    assert _check(env, "--region", "uk")[1]["baseUrl"] == UK


def test_base_url_argument_beats_the_environment_and_the_profile(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    env.update(PRACTICEFLOW_BASE_URL=ANZ, PRACTICEFLOW_PROFILE="other")
    assert _check(env)[1]["baseUrl"] == ANZ  # environment over the profile's base_url
    assert _check(env, "--base-url", UK)[1]["baseUrl"] == UK


def test_client_id_argument_beats_the_environment_and_the_profile(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    env.update(PRACTICEFLOW_BASE_URL=ANZ)
    _check(env)
    env.update(PRACTICEFLOW_CLIENT_ID=ENV_ID)
    _check(env)
    _check(env, "--client-id", ARG_ID)
    sent = [call.request.headers["X-SVC-Auth-ID"] for call in rsps.calls]
    assert sent == [PROFILE_ID, ENV_ID, ARG_ID]
    assert all(call.request.headers["X-SVC-Auth-Key"] == SECRET for call in rsps.calls)


def test_auth_method_argument_beats_the_environment(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    env.update(PRACTICEFLOW_BASE_URL=ANZ, PRACTICEFLOW_AUTH_METHOD="basic")
    assert _check(env)[1]["authMethod"] == "basic"
    assert _check(env, "--auth-method", "header")[1]["authMethod"] == "header"
    first, second = (call.request.headers for call in rsps.calls)
    assert first["Authorization"].startswith("Basic ")
    assert "Authorization" not in second
    assert second["X-SVC-Auth-ID"] == PROFILE_ID


def test_profile_argument_beats_the_environment(
    rsps: responses.RequestsMock, env: dict[str, str | None]
) -> None:
    env.update(PRACTICEFLOW_PROFILE="default", PRACTICEFLOW_BASE_URL_ANZ=ANZ)
    code, data, output = _check(env, "--profile", "other")
    assert code == 0, output
    assert data["baseUrl"] == OTHER
    assert rsps.calls[0].request.headers["X-SVC-Auth-ID"] == ARG_ID


def test_state_argument_beats_the_environment(tmp_path: Path, env: dict[str, str | None]) -> None:
    env["PRACTICEFLOW_STATE"] = str(tmp_path / "from-env.db")
    wanted = tmp_path / "from-arg.db"
    result = CliRunner().invoke(cli, ["db", "migrate", "--json", "--state", str(wanted)], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["store"] == str(wanted)
    assert wanted.exists()
    assert not (tmp_path / "from-env.db").exists()
