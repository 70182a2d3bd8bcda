"""The CLI: run --once / --dry-run, runs list | show | resolve | retry, plan, serve."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.cli.runs import plan, run, runs
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from runner._support import CLI, MODULES, RECIPES, REPO, cli_env

pytestmark = pytest.mark.integration


def _an_hour_ago() -> datetime:
    return datetime.now(UTC) - timedelta(hours=1)


def _env(sandbox: SandboxHandle, state: Path) -> dict[str, str]:
    env = cli_env(sandbox)
    env["PRACTICEFLOW_STATE"] = str(state)
    return env


def test_dry_run_sends_nothing_and_masks_personal_data(fast_sandbox: SandboxHandle):
    before = len(fast_sandbox.admin("GET", "/_admin/requests"))
    result = CliRunner().invoke(
        run,
        [str(RECIPES / "three_writes.yaml"), "--dry-run", "--json", "--modules", str(MODULES)],
        env=cli_env(fast_sandbox),
    )
    assert result.exit_code == 0, result.output
    steps = json.loads(result.stdout)
    assert [step["step_id"] for step in steps] == ["client", "convert", "bill"]
    assert steps[0]["request"]["json"]["entityName"] == "***"
    assert len(fast_sandbox.admin("GET", "/_admin/requests")) == before


def test_run_once_then_runs_list_show_and_json(fast_sandbox: SandboxHandle, tmp_path: Path):
    state = tmp_path / "s.db"
    env = _env(fast_sandbox, state)
    with open_store(str(state)) as store:
        store.record_event(env["PRACTICEFLOW_CLIENT_ID"], "test_event", "e", "ev1", {"ref": "cli1"})
    cli = CliRunner()
    args = [str(RECIPES / "three_writes.yaml"), "--once", "--json", "--modules", str(MODULES)]
    before = len(fast_sandbox.admin("GET", "/_admin/requests"))
    result = cli.invoke(run, args, env=env)
    assert result.exit_code == 0, result.output
    (outcome,) = json.loads(result.stdout)
    assert outcome["status"] == "succeeded"
    # Every request the sandbox received was counted in the store (the console's chart),
    # except the credentials check made before the store is opened.
    received = len(fast_sandbox.admin("GET", "/_admin/requests")) - before
    with open_store(str(state)) as store:
        counted = store.request_counts(env["PRACTICEFLOW_CLIENT_ID"], since=_an_hour_ago())
    assert counted == received - 1
    assert counted >= 3

    listed = cli.invoke(runs, ["list", "--json"], env=env)
    assert json.loads(listed.stdout)[0]["run_id"] == outcome["run_id"]
    table = cli.invoke(runs, ["list"], env=env)
    assert "three writes" in table.output
    assert "3/3" in table.output
    shown = cli.invoke(runs, ["show", outcome["run_id"], "--json"], env=env)
    data = json.loads(shown.stdout)
    assert [step["status"] for step in data["steps"]] == ["succeeded"] * 3
    assert "Crash Test" not in shown.output  # the name is personal: masked


def test_resolve_then_retry_finishes_a_held_run(fast_sandbox: SandboxHandle, tmp_path: Path):
    state = tmp_path / "s.db"
    env = _env(fast_sandbox, state)
    recipe = tmp_path / "lead.yaml"
    recipe.write_text(
        "name: lead\ntrigger: {use: test_event}\nsteps:\n"
        "  - id: lead\n    use: create_lead\n"
        "    with: {entityType: Individual, entityName: 'Held {{ trigger.ref }}'}\n"
    )
    with open_store(str(state)) as store:
        store.record_event(env["PRACTICEFLOW_CLIENT_ID"], "test_event", "e", "ev", {"ref": "x"})
    fast_sandbox.admin("POST", "/_admin/faults", {"kind": "drop", "method": "POST"})
    cli = CliRunner()
    held = cli.invoke(run, [str(recipe), "--once", "--json", "--modules", str(MODULES)], env=env)
    assert held.exit_code == 5, held.output
    run_id = json.loads(held.stdout)[0]["run_id"]
    assert "held for a person" in cli.invoke(runs, ["show", run_id], env=env).output

    resolved = cli.invoke(
        runs, ["resolve", run_id, "--step", "lead", "--as", "done", "--who", "bob"], env=env
    )
    assert resolved.exit_code == 0, resolved.output
    again = cli.invoke(runs, ["retry", run_id, "--modules", str(MODULES), "--json"], env=env)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["status"] == "succeeded"
    shown = cli.invoke(runs, ["show", run_id], env=env).output
    assert "resolved by bob" in shown


def test_plan_prints_the_share_of_the_daily_budget():
    recipes = sorted(str(path) for path in (REPO / "recipes").glob("*.yaml"))
    result = CliRunner().invoke(plan, [*recipes, "--events-per-day", "50"])
    assert result.exit_code == 0, result.output
    assert "of 10,000" in result.output
    over = CliRunner().invoke(plan, [*recipes, "--poll-interval", "5"])
    assert over.exit_code == 1
    assert "warning" in over.output


def test_serve_receives_a_webhook_runs_it_and_stops_gracefully_on_sigterm(
    fast_sandbox: SandboxHandle, tmp_path: Path
):
    state = tmp_path / "s.db"
    env = {**_env(fast_sandbox, state), "PRACTICEFLOW_PUBLIC_URL": "local"}
    recipe = REPO / "recipes" / "proposal_to_bill_and_eform.yaml"
    command = [*CLI, "serve", str(recipe)]
    process = subprocess.Popen(  # noqa: S603 - our own CLI
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 40
        while not fast_sandbox.admin("GET", "/_admin/records/subscriptions"):
            assert time.monotonic() < deadline, "serve did not subscribe"
            time.sleep(0.2)
        active = {
            row["entityKey"]
            for row in fast_sandbox.admin("GET", "/_admin/records/entities")
            if row["status"] == "Active"
        }
        proposal = next(
            row
            for row in fast_sandbox.admin("GET", "/_admin/records/proposals")
            if row["entityKey"] in active and row["status"] != "Accepted"
        )
        fast_sandbox.admin("POST", f"/_admin/proposals/{proposal['proposalKey']}/accept")
        done = False
        while not done:
            assert time.monotonic() < deadline, "the run did not finish"
            time.sleep(0.2)
            with open_store(str(state)) as store:
                done = any(run.status == "succeeded" for run in store.list_runs())
        os.kill(process.pid, signal.SIGTERM)
        code = process.wait(timeout=20)
        errors = process.stderr.read() if process.stderr else ""
    finally:
        if process.poll() is None:
            process.kill()
        if process.stderr:
            process.stderr.close()
    assert code == 0, errors
    # A stop is not a goodbye: the subscription stays for the next start.
    assert len(fast_sandbox.admin("GET", "/_admin/records/subscriptions")) == 1
