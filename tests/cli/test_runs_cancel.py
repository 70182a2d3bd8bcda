"""``practiceflow runs cancel``: a person settles a held delivery (an entry of the attention
table, as ``attention settle`` does) or a run they give up on."""

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
from practiceflow.triggers import tests_asked

DONE = "ab12cd34ee55ee55ee55ee55ee55ee55"


def _held(path: Path) -> str:
    with open_store(str(path)) as store:
        run_id = tests_asked.hold(
            store, "p", "new_client", "new_client:evt-1", "evt-1", "looks like a test delivery"
        )
        store.start_run("p", "r", "e-done", run_id=DONE)
        store.set_run_status(DONE, "running")
        store.set_run_status(DONE, "succeeded")
    return run_id


def test_cancel_settles_a_held_delivery_by_short_id_with_who_and_why(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    run_id = _held(state)
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})

    result = runner.invoke(
        cli, ["runs", "cancel", run_id[:10], "--reason", "our own test", "--who", "ann"]
    )

    assert result.exit_code == 0, result.output
    assert "unrecognised:new_client" in result.output
    with open_store(str(state)) as store:
        entry = store.get_attention(run_id)
        assert entry is not None
        assert (entry.status, entry.settled_by, entry.note) == ("closed", "ann", "our own test")
        assert isinstance(entry.evidence, dict)
        assert entry.evidence["deliveryId"] == "evt-1"
        assert store.list_attention(practice="p", statuses=("open",)) == []
        assert store.list_runs(practice="p", status="in_doubt", limit=10) == []


def test_cancel_refuses_a_finished_run_and_an_empty_reason(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    run_id = _held(state)
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})

    finished = runner.invoke(cli, ["runs", "cancel", DONE, "--reason", "x"])
    assert finished.exit_code == 2
    assert "succeeded" in finished.output

    blank = runner.invoke(cli, ["runs", "cancel", run_id, "--reason", "  "])
    assert blank.exit_code == 2
    assert "--reason" in blank.output

    with open_store(str(state)) as store:
        done = store.get_run(DONE)
        held = store.get_attention(run_id)
        assert done is not None
        assert done.status == "succeeded"
        assert held is not None
        assert held.status == "open"


def test_a_held_delivery_is_listed_as_needing_attention_until_cancelled(tmp_path: Path) -> None:
    """Nothing lost without a trace: a delivery held unrun is in the CLI's and the
    console's attention lists, with what to do, until a person settles it."""
    state = tmp_path / "s.db"
    run_id = _held(state)
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})

    listed = runner.invoke(cli, ["runs", "list", "--status", "in_doubt", "--json"])
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.stdout)
    assert (row["run_id"], row["needs_attention"]) == (run_id, True)
    with open_store(str(state)) as store:
        app = create_app(ConsoleContext(store, "p", who="t"), Guard())
        with TestClient(app, base_url="http://127.0.0.1") as web:
            (shown,) = web.get("/console/api/attention").json()
            assert (shown["run_id"], shown["held"], shown["step"]) == (run_id, True, None)
            assert "looks like a test delivery" in shown["why_in_doubt"]
            assert shown["settle"] == f"practiceflow attention settle {run_id[:8]} --note TEXT"
            page = web.get("/console/attention")
            assert "delivery held" in page.text

    settled = runner.invoke(cli, ["runs", "cancel", run_id, "--reason", "our own test"])
    assert settled.exit_code == 0, settled.output
    after = runner.invoke(cli, ["runs", "list", "--status", "in_doubt", "--json"])
    assert json.loads(after.stdout) == []


def test_runs_show_of_an_attention_entry_says_what_it_is_and_how_to_settle_it(
    tmp_path: Path,
) -> None:
    state = tmp_path / "s.db"
    entry_id = _held(state)
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})

    result = runner.invoke(cli, ["runs", "show", entry_id[:10]])

    assert result.exit_code == 2, result.output
    assert "is not a run but an entry needing attention" in result.output
    assert "practiceflow attention list" in result.output
    assert f"practiceflow attention settle {entry_id[:8]}" in result.output
