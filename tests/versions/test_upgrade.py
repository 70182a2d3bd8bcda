"""A store written by the previous release (state schema 4, before recipe versions)
resumes after ``practiceflow db migrate``: the run killed there finishes, its bill is never
sent again; and when the recipe lost a step that run took, it is held with the reason.

``fixtures/schema4.sql`` was written by that release (``fixtures/make_schema4.py``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.api import Client
from practiceflow.cli.db import db
from practiceflow.runner import Runner, validate_recipe
from practiceflow.state import open_store
from practiceflow.state._schema import LATEST_VERSION
from practiceflow.testing import SandboxHandle
from runner._support import REPO
from versions.fixtures.make_schema4 import FIXTURE_KEY

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).parent / "fixtures" / "schema4.sql"
RECIPE = REPO / "recipes" / "proposal_to_bill_and_eform.yaml"


def _migrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PRACTICEFLOW_STATE_KEY", FIXTURE_KEY)
    state = tmp_path / "state.db"
    with sqlite3.connect(state) as raw:
        raw.executescript(FIXTURE.read_text(encoding="utf-8"))
    done = CliRunner().invoke(db, ["migrate", "--state", str(state)])
    assert done.exit_code == 0, done.output
    with sqlite3.connect(state) as raw:
        assert raw.execute("SELECT version FROM schema_version").fetchone() == (LATEST_VERSION,)
    return state


def _posts(sandbox: SandboxHandle, path: str) -> int:
    requests = sandbox.admin("GET", "/_admin/requests")
    return sum(row["method"] == "POST" and row["path"].startswith(path) for row in requests)


def test_a_run_of_the_previous_release_finishes_after_db_migrate_without_a_second_bill(
    fast_sandbox: SandboxHandle, client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _migrated(tmp_path, monkeypatch)
    with open_store(str(state)) as store:
        (run,) = store.list_runs()
        assert (run.status, run.version) == ("running", None)
        runner = Runner(validate_recipe(RECIPE), store, client, practice="anz")
        (outcome,) = runner.process_pending()
        assert outcome.status == "succeeded", outcome
        steps = {step.step_id: step for step in store.get_steps(run.run_id)}
        assert steps["bill"].resolved_by is None  # journaled before the upgrade, kept
    assert _posts(fast_sandbox, "/api/v1/bills") == 0
    assert _posts(fast_sandbox, "/api/v1/eforms") == 1


def test_a_run_of_the_previous_release_is_held_when_the_recipe_lost_its_step(
    fast_sandbox: SandboxHandle, client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _migrated(tmp_path, monkeypatch)
    edited = tmp_path / "renamed.yaml"
    text = RECIPE.read_text(encoding="utf-8").replace("- id: bill", "- id: invoice")
    edited.write_text(text.replace("steps.bill.", "steps.invoice."), encoding="utf-8")
    with open_store(str(state)) as store:
        runner = Runner(validate_recipe(edited), store, client, practice="anz")
        (outcome,) = runner.process_pending()
        assert outcome.status == "in_doubt"
        assert "step 'bill' is not in the recipe served now" in outcome.error["reason"]
        assert not store.pending_events("anz")  # held for a person, not waiting unseen
    assert _posts(fast_sandbox, "/api/v1/bills") == 0
    assert _posts(fast_sandbox, "/api/v1/eforms") == 0
