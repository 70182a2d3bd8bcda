"""Short run ids in the CLI and the console (issue 24): printed short, accepted short."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from starlette.testclient import TestClient

from practiceflow.cli import cli
from practiceflow.console import ConsoleContext
from practiceflow.console.app import create_app
from practiceflow.console.security import Guard
from practiceflow.state import open_store

HELD = "fd908bc4aa11aa11aa11aa11aa11aa11"
TWIN = "fd908bc4bb22bb22bb22bb22bb22bb22"


def _seed(path: Path) -> None:
    with open_store(str(path)) as store:
        for run_id, event in ((HELD, "e1"), (TWIN, "e2")):
            store.start_run("p", "r", event, run_id=run_id)
            store.set_run_status(run_id, "running")
        store.step_pending(HELD, "form", {"use": "send_eform"})
        store.step_sent(HELD, "form")
        store.step_in_doubt(HELD, "form", {"message": "no answer"})
        store.set_run_status(HELD, "in_doubt", {"step": "form"})


def test_runs_show_and_resolve_take_a_unique_prefix_and_list_an_ambiguous_one(
    tmp_path: Path,
) -> None:
    state = tmp_path / "s.db"
    _seed(state)
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})
    shown = runner.invoke(cli, ["runs", "show", "fd908bc4a", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["run_id"] == HELD

    capitals = runner.invoke(cli, ["runs", "show", "FD908BC4A", "--json"])
    assert capitals.exit_code == 0, capitals.output  # typed in capitals, found all the same
    assert json.loads(capitals.stdout)["run_id"] == HELD

    ambiguous = runner.invoke(cli, ["runs", "show", "fd908bc4"])
    assert ambiguous.exit_code == 2
    assert HELD in ambiguous.output
    assert TWIN in ambiguous.output

    too_short = runner.invoke(cli, ["runs", "show", "fd908bc"])
    assert too_short.exit_code == 2
    assert "8 characters" in too_short.output

    resolved = runner.invoke(
        cli, ["runs", "resolve", "fd908bc4aa", "--step", "form", "--as", "done", "--who", "t"]
    )
    assert resolved.exit_code == 0, resolved.output
    with open_store(str(state)) as store:
        step = store.get_step(HELD, "form")
        assert step is not None
        assert step.status == "succeeded"
        assert step.resolved_by == "t"


def test_the_console_takes_a_unique_prefix_and_lists_an_ambiguous_one(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    _seed(state)
    with open_store(str(state)) as store:
        app = create_app(ConsoleContext(store, "p", who="t"), Guard())
        with TestClient(app, base_url="http://127.0.0.1") as web:
            found = web.get("/console/api/runs/fd908bc4a")
            assert found.status_code == 200
            assert found.json()["run_id"] == HELD
            page = web.get("/console/runs/fd908bc4a")
            assert page.status_code == 200
            assert HELD in page.text
            ambiguous = web.get("/console/api/runs/fd908bc4")
            assert ambiguous.status_code == 409
            assert sorted(ambiguous.json()["candidates"]) == [HELD, TWIN]
            assert web.get("/console/runs/fd908bc4").status_code == 409
