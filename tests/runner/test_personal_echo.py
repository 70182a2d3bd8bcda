"""A personal value the API echoes back, truncated, inside an error appears nowhere.

The issue's reproduction: ``create_client`` with a 300-character ``entityName`` (``x-pii``);
the sandbox answers 400 and echoes the first 60 characters of the value. No fragment of 6
characters or more of it may reach the exception, the CLI's output, a log line, the state
database (journal, errors, event), ``runs show`` or the console's page and JSON.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from practiceflow.api import Client
from practiceflow.cli import cli
from practiceflow.cli.runs import run, runs
from practiceflow.console import ConsoleContext, create_app
from practiceflow.console.security import Guard
from practiceflow.engine import run_action
from practiceflow.errors import ValidationError
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from runner._support import MODULES, cli_env

pytestmark = pytest.mark.integration

#: 300 characters; a template builds it, so that no trigger payload or recipe field holds it.
LETTERS = "ahovcjqxelszgnubipwdkryfmt"
CANARY = "Canary" + (LETTERS * 12)[:294]
CANARY_TEMPLATE = "{{ 'Canary' ~ ('" + LETTERS + "' * 12)[:294] }}"


def _leaks(text: str) -> list[str]:
    lowered = text.lower()
    canary = CANARY.lower()
    return sorted(
        {canary[i : i + 6] for i in range(len(canary) - 5) if canary[i : i + 6] in lowered}
    )


def test_run_action_masks_the_truncated_echo(client: Client):
    data = {"entityType": "Company", "entityName": CANARY}
    with pytest.raises(ValidationError) as caught:
        run_action("create_client", data, client)
    error = caught.value
    assert error.status == 400
    assert "entityName" in str(error)  # the API's words stay: which field, what was wrong
    assert "***" in str(error)
    assert _leaks(str(error)) == []
    assert _leaks(json.dumps(error.problem)) == []
    assert _leaks(repr(error.__cause__)) == []


def test_the_cli_error_of_an_action_masks_the_echo(fast_sandbox: SandboxHandle, tmp_path: Path):
    path = tmp_path / "input.json"
    path.write_text(json.dumps({"entityType": "Company", "entityName": CANARY}))
    result = CliRunner().invoke(
        cli, ["action", "create_client", "--input", str(path)], env=cli_env(fast_sandbox)
    )
    assert result.exit_code == 2, result.output
    assert "400" in result.output
    assert _leaks(result.output) == []


def test_journal_logs_runs_show_and_console_mask_the_echo(
    fast_sandbox: SandboxHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    state = tmp_path / "s.db"
    env = {**cli_env(fast_sandbox), "PRACTICEFLOW_STATE": str(state)}
    recipe = tmp_path / "echo.yaml"
    recipe.write_text(
        "name: echo\ntrigger: {use: test_event}\nsteps:\n"
        "  - id: client\n    use: create_client\n"
        f'    with: {{entityType: Company, entityName: "{CANARY_TEMPLATE}"}}\n',
        encoding="utf-8",
    )
    practice = env["PRACTICEFLOW_CLIENT_ID"]
    with open_store(str(state)) as store:
        store.record_event(practice, "test_event", "e", "ev-echo", {"ref": "echo"})
    caplog.set_level(logging.DEBUG)
    cli_runner = CliRunner()
    args = [str(recipe), "--once", "--json", "-v", "--modules", str(MODULES)]
    result = cli_runner.invoke(run, args, env=env)
    (outcome,) = json.loads(result.stdout)
    assert outcome["status"] == "failed", result.output
    seen = [result.output, "\n".join(record.getMessage() for record in caplog.records)]

    shown = cli_runner.invoke(runs, ["show", outcome["run_id"], "--json"], env=env)
    step = json.loads(shown.stdout)["steps"][-1]
    assert "400" in json.dumps(step)  # the error is there, masked
    seen += [shown.output, cli_runner.invoke(runs, ["show", outcome["run_id"]], env=env).output]

    with sqlite3.connect(state) as db:  # every text the database holds
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in db.execute(f'SELECT * FROM "{table}"'):  # noqa: S608 - our own tables
                seen.append(" ".join(str(value) for value in row))

    with open_store(str(state)) as store:
        ctx = ConsoleContext(store, practice, who="tester")
        with TestClient(create_app(ctx, Guard()), base_url="http://127.0.0.1") as web:
            for route in (
                f"/console/runs/{outcome['run_id']}",
                f"/console/api/runs/{outcome['run_id']}",
            ):
                response = web.get(route)
                assert response.status_code == 200
                seen.append(response.text)

    for text in seen:
        assert _leaks(text) == [], text[:2000]
