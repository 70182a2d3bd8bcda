"""A discoverable sandbox: ``sandbox --help``, ``GET /_admin``, the CLI helpers, start-up lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner
from starlette.routing import Route

from practiceflow.api import Client
from practiceflow.cli import cli
from practiceflow.engine import run_action
from practiceflow.sandbox.admin import AdminApp
from practiceflow.sandbox.admin_catalogue import ADMIN_ROUTES
from practiceflow.testing import SandboxHandle


def _served_routes(sandbox: SandboxHandle) -> set[tuple[str, str]]:
    app = AdminApp(sandbox.state)
    served: set[tuple[str, str]] = set()
    for route in app.router.routes:
        assert isinstance(route, Route)
        for method in route.methods or ():
            if method != "HEAD":
                served.add((method, route.path))
    return served


def _env(sandbox: SandboxHandle) -> dict[str, str]:
    return {
        "PRACTICEFLOW_SANDBOX_URL": sandbox.url,
        "PRACTICEFLOW_SANDBOX_ADMIN_TOKEN": sandbox.admin_token,
    }


def test_catalogue_names_exactly_the_routes_the_admin_app_serves(sandbox: SandboxHandle) -> None:
    listed = {(route.method, route.path) for route in ADMIN_ROUTES}
    assert listed == _served_routes(sandbox)


def test_sandbox_help_lists_every_admin_route_with_a_curl_example() -> None:
    result = CliRunner().invoke(cli, ["sandbox", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for route in ADMIN_ROUTES:
        assert f"{route.method} {route.path}: " in result.output
        assert f"'http://127.0.0.1:8765{route.example_path}'" in result.output
    for helper in ("fire", "fault", "records", "deliveries", "requests", "clock", "reset"):
        assert f"  {helper} " in result.output


def test_get_admin_lists_every_route_with_its_example(sandbox: SandboxHandle) -> None:
    info = sandbox.admin("GET", "/_admin")
    rows = {(row["method"], row["path"]): row for row in info["routes"]}
    assert set(rows) == {(route.method, route.path) for route in ADMIN_ROUTES}
    accept = rows[("POST", "/_admin/proposals/{key}/accept")]
    assert accept["example"].startswith(f"curl -H 'X-Admin-Token: {sandbox.admin_token}' -X POST")
    assert sandbox.url + "/_admin/proposals/{key}/accept" in accept["example"]


def _key_for(sandbox: SandboxHandle, path: str) -> str:
    if "/proposals/" in path:
        rows = sandbox.admin("GET", "/_admin/records/proposals")
        return str(next(row["proposalKey"] for row in rows if row["status"] != "Accepted"))
    if "/onboardings/" in path:
        rows = sandbox.admin("GET", "/_admin/records/onboardings")
        return str(next(row["onboardingKey"] for row in rows if row["status"] != "Completed"))
    if "/eforms/" in path:
        client_id, secret = sandbox.credentials("anz", "rw")
        entity = sandbox.admin("GET", "/_admin/records/entities")[0]["entityKey"]
        with Client(client_id, secret, base_url=sandbox.base_url("anz")) as client:
            sent = run_action("send_eform", {"templateId": 101, "entityKey": entity}, client)
        return str(sent.output["formKey"])
    leads = sandbox.admin("GET", "/_admin/records/leads")
    return str(leads[0]["entityKey"])


@pytest.mark.parametrize("route", ADMIN_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_every_example_of_the_catalogue_works(sandbox: SandboxHandle, route: Any) -> None:
    path = route.example_path
    if "{key}" in path:
        path = path.replace("{key}", _key_for(sandbox, path))
    answer = requests.request(
        route.method,
        sandbox.url + path,
        json=route.example_body,
        headers={"X-Admin-Token": sandbox.admin_token},
        timeout=10,
    )
    assert answer.status_code < 300, answer.text


def test_admin_401_says_where_the_token_and_routes_are(sandbox: SandboxHandle) -> None:
    answer = requests.get(sandbox.url + "/_admin", timeout=10)
    assert answer.status_code == 401
    assert "practiceflow sandbox --help" in answer.json()["detail"]


def test_fire_proposal_accepted_accepts_an_open_proposal(sandbox: SandboxHandle) -> None:
    result = CliRunner().invoke(cli, ["sandbox", "fire", "proposal-accepted"], env=_env(sandbox))
    assert result.exit_code == 0, result.output
    key = result.output.split("proposalKey ")[1].split(",")[0]
    accepted = [
        row
        for row in sandbox.admin("GET", "/_admin/records/proposals")
        if row["proposalKey"] == key
    ]
    assert accepted[0]["status"] == "Accepted"
    assert "(event " in result.output


def test_fire_with_a_key_fires_that_record(sandbox: SandboxHandle) -> None:
    key = _key_for(sandbox, "/onboardings/")
    runner = CliRunner()
    result = runner.invoke(cli, ["sandbox", "fire", "onboarding-completed", key], env=_env(sandbox))
    assert result.exit_code == 0, result.output
    rows = sandbox.admin("GET", "/_admin/records/onboardings")
    assert next(row for row in rows if row["onboardingKey"] == key)["status"] == "Completed"


def test_fire_client_created_adds_the_named_client(sandbox: SandboxHandle) -> None:
    result = CliRunner().invoke(
        cli, ["sandbox", "fire", "client-created", "Harbour Trust"], env=_env(sandbox)
    )
    assert result.exit_code == 0, result.output
    names = [row["entityName"] for row in sandbox.admin("GET", "/_admin/records/entities")]
    assert "Harbour Trust" in names


def test_fire_eform_without_a_sent_form_says_what_to_do(sandbox: SandboxHandle) -> None:
    result = CliRunner().invoke(cli, ["sandbox", "fire", "eform-submitted"], env=_env(sandbox))
    assert result.exit_code == 2
    assert "send one (send_eform) first" in result.output


def test_fault_arms_lists_and_clears(sandbox: SandboxHandle) -> None:
    runner = CliRunner()
    armed = runner.invoke(
        cli,
        ["sandbox", "fault", "429", "--count", "2", "--retry-after", "1", "--method", "POST"],
        env=_env(sandbox),
    )
    assert armed.exit_code == 0, armed.output
    faults = sandbox.admin("GET", "/_admin/faults")
    assert faults[0]["kind"] == "rate_limit"
    assert faults[0]["remaining"] == 2
    assert faults[0]["retry_after"] == 1
    assert faults[0]["method"] == "POST"
    assert runner.invoke(cli, ["sandbox", "fault", "clear"], env=_env(sandbox)).exit_code == 0
    assert sandbox.admin("GET", "/_admin/faults") == []


def test_helpers_refuse_a_sandbox_url_beyond_loopback() -> None:
    result = CliRunner().invoke(
        cli, ["sandbox", "reset"], env={"PRACTICEFLOW_SANDBOX_URL": "http://10.1.2.3:8765"}
    )
    assert result.exit_code == 2
    assert "expected the sandbox's http:// URL on 127.0.0.1" in result.output


def test_helpers_without_a_sandbox_exit_transient_with_a_hint() -> None:
    result = CliRunner().invoke(
        cli, ["sandbox", "reset"], env={"PRACTICEFLOW_SANDBOX_URL": "http://127.0.0.1:9"}
    )
    assert result.exit_code == 4
    assert "start one with 'practiceflow sandbox'" in result.output


def test_startup_prints_export_lines_that_work_as_pasted(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    command = [sys.executable, "-m", "practiceflow", "sandbox", "--port", "0", "--entities", "5"]
    process = subprocess.Popen(  # noqa: S603 - our own interpreter
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    exports: dict[str, str] = {}
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.strip().startswith("export PRACTICEFLOW_"):
                name, _, value = line.strip().removeprefix("export ").partition("=")
                exports[name] = value
            if "Ctrl-C stops it" in line:
                break
        assert set(exports) == {
            "PRACTICEFLOW_BASE_URL",
            "PRACTICEFLOW_CLIENT_ID",
            "PRACTICEFLOW_CLIENT_SECRET",
            "PRACTICEFLOW_SANDBOX_URL",
            "PRACTICEFLOW_SANDBOX_ADMIN_TOKEN",
        }
        env.update(exports)
        env["PRACTICEFLOW_PROFILES"] = str(tmp_path / "none.toml")
        check = [sys.executable, "-m", "practiceflow", "auth", "check"]
        for _ in range(100):  # the banner is printed just before the port is bound
            done = subprocess.run(  # noqa: S603 - our own interpreter
                check, capture_output=True, text=True, env=env, timeout=60
            )
            if done.returncode != 4:
                break
        assert done.returncode == 0, done.stdout + done.stderr
        assert "can write:    yes" in done.stdout
        records = [sys.executable, "-m", "practiceflow", "sandbox", "records", "users"]
        listed = subprocess.run(  # noqa: S603 - our own interpreter
            records, capture_output=True, text=True, env=env, timeout=60
        )
        assert listed.returncode == 0, listed.stderr
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()
