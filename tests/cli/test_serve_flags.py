"""``serve --listen/--public-url/--since`` and its start-up lines; ``run --since``; the
first-poll hint of ``run --once``; the ``plan`` summary's wording."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.testing import SandboxHandle

REPO = Path(__file__).resolve().parents[2]
POLL_RECIPE = REPO / "recipes" / "new_client_integrations_to_jsonl.yaml"
HOOK_RECIPE = REPO / "recipes" / "proposal_to_bill_and_eform.yaml"


def _env(sandbox: SandboxHandle, tmp_path: Path) -> dict[str, str]:
    client_id, secret = sandbox.credentials("anz", "rw")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    env.update(
        PRACTICEFLOW_CLIENT_ID=client_id,
        PRACTICEFLOW_CLIENT_SECRET=secret,
        PRACTICEFLOW_BASE_URL=sandbox.base_url("anz"),
        PRACTICEFLOW_STATE=str(tmp_path / "state.db"),
        PRACTICEFLOW_PROFILES=str(tmp_path / "none.toml"),
    )
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_help_names_the_flags_and_their_environment() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"], terminal_width=120)
    assert result.exit_code == 0
    for text in ("--listen", "PRACTICEFLOW_LISTEN", "--public-url", "PRACTICEFLOW_PUBLIC_URL"):
        assert text in result.output
    assert "--since" in result.output
    run_help = CliRunner().invoke(cli, ["run", "--help"], terminal_width=120).output
    assert "--since" in run_help
    assert "sets a baseline" in run_help


def test_serve_prints_the_receiver_and_the_subscribed_url_with_its_token_masked(
    sandbox: SandboxHandle, tmp_path: Path
) -> None:
    port = _free_port()
    public = f"http://127.0.0.1:{port}"
    command = [
        sys.executable,
        "-m",
        "practiceflow",
        "serve",
        str(HOOK_RECIPE),
        "--no-console",
        "--listen",
        f"127.0.0.1:{port}",
        "--public-url",
        public,
    ]
    process = subprocess.Popen(  # noqa: S603 - our own interpreter
        command,
        env=_env(sandbox, tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    try:
        while not any("subscribed proposal.accepted" in line for line in seen):
            seen.append(lines.get(timeout=60))
        subscriptions = sandbox.admin("GET", "/_admin/records/subscriptions")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()
    text = "".join(seen)
    assert f"webhook receiver listening on {public}" in text
    assert f"at {public}/hooks/*** (active)" in text
    target = subscriptions[0]["url"]
    assert target.startswith(f"{public}/hooks/")
    assert target not in text  # the path token routes deliveries: never printed


def test_serve_without_a_public_url_says_that_triggers_poll(
    sandbox: SandboxHandle, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "practiceflow", "serve", str(POLL_RECIPE), "--no-console"]
    process = subprocess.Popen(  # noqa: S603 - our own interpreter
        command,
        env=_env(sandbox, tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        second = process.stderr.readline()
    finally:
        process.send_signal(signal.SIGTERM)
        try:  # drain stderr while waiting: an undrained pipe can hold the process up
            rest = process.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            process.kill()  # leave no process (and no open pipe) to the next test
            rest = process.communicate()[1]
            pytest.fail(
                f"serve did not stop within 60 s of SIGTERM; its stderr ended: {rest[-2000:]}"
            )
    assert "no webhook receiver (no --public-url / PRACTICEFLOW_PUBLIC_URL)" in first
    assert second.strip() == "trigger new_client: poll"


def test_run_once_hints_that_the_first_poll_sets_a_baseline(
    sandbox: SandboxHandle, tmp_path: Path
) -> None:
    runner = CliRunner()
    env = _env(sandbox, tmp_path)
    first = runner.invoke(cli, ["run", str(POLL_RECIPE), "--once"], env=env)
    assert first.exit_code == 0, first.output
    assert "no events to run" in first.stdout
    assert "first poll sets a baseline (new_client)" in first.stderr
    assert "--since" in first.stderr
    second = runner.invoke(cli, ["run", str(POLL_RECIPE), "--once"], env=env)
    assert "baseline" not in second.stderr  # the cursor exists now: no hint


def test_run_since_catches_up_on_changes_before_the_first_poll(
    sandbox: SandboxHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = sandbox.admin(
        "POST",
        "/_admin/entities",
        {"entityName": "Before Start", "entityType": "Company", "clientStatus": "Active"},
    )
    since = (datetime.now(UTC) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    monkeypatch.chdir(tmp_path)  # the recipe's write_jsonl writes under the working folder
    result = CliRunner().invoke(
        cli,
        ["run", str(POLL_RECIPE), "--once", "--since", since, "--json"],
        env=_env(sandbox, tmp_path),
    )
    assert result.exit_code == 0, result.output
    assert created["entityKey"] in result.stdout
    assert "baseline" not in result.stderr


def test_since_that_is_not_an_iso_time_is_refused_before_any_request() -> None:
    result = CliRunner().invoke(cli, ["run", str(POLL_RECIPE), "--once", "--since", "yesterday"])
    assert result.exit_code == 2
    assert "expected an ISO 8601 date-time with an offset" in result.output


def test_plan_names_the_recipes_rate_and_the_budgets_rate_apart() -> None:
    result = CliRunner().invoke(cli, ["plan", str(POLL_RECIPE)], terminal_width=200)
    assert result.exit_code == 0, result.output
    line = " ".join(result.output.split("together:", 1)[1].split())
    # 1,440 polls and 100 runs of one request a day: the recipe's own use
    assert line.startswith("1,540 requests a day (on average one every 56.10 s) = 15.4%")
    assert "which allows one request every 8.64 s" in line  # the budget's rate
