"""No silent gaps (issue 24): the downtime since the last sign of life is a known gap; a
trigger that cannot catch up by polling gets an entry that needs attention, listed alike by
``runs list --status in_doubt`` and the console; a person's decision reaches a running
serve however it is made."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from practiceflow.api import Client
from practiceflow.cli import cli
from practiceflow.console import ConsoleContext
from practiceflow.console.app import create_app
from practiceflow.console.data import attention_view
from practiceflow.console.security import Guard
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import Runner, validate_recipe
from practiceflow.runner.gaps import (
    DOUBT_PREFIX,
    GAP_STEP,
    close_settled_gaps,
    close_subscription_doubt,
    last_alive,
    mark_alive,
    note_downtime,
    record_subscription_doubt,
)
from practiceflow.runner.service import Service
from practiceflow.state import StateStore, open_store
from practiceflow.testing import SandboxHandle
from practiceflow.triggers import load_definition
from runner._serving import wait_for

EFORM = load_definition("eform_submitted")
CLIENTS = load_definition("new_client")


def test_the_window_since_the_last_sign_of_life_is_listed_for_triggers_that_cannot_poll(
    store: StateStore,
) -> None:
    assert note_downtime(store, "p", [("eform_submitted", EFORM, False)], None) == []  # first
    down = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    mark_alive(store, "p", down)
    assert last_alive(store, "p") == down
    back = down + timedelta(minutes=7)
    listed = note_downtime(
        store,
        "p",
        [("eform_submitted", EFORM, False), ("new_client", CLIENTS, True)],
        None,
        now=back,
    )
    (run_id,) = listed  # new_client catches up by polling: no entry
    run = store.get_run(run_id)
    assert run is not None
    assert (run.recipe, run.status) == ("gap: eform_submitted", "in_doubt")
    step = store.get_step(run_id, GAP_STEP)
    assert step is not None
    assert step.status == "in_doubt"
    message = str(step.error)
    assert "2026-01-05T09:00:00+00:00" in message
    assert "2026-01-05T09:07:00+00:00" in message
    assert "eform_submitted" in message
    # The same window again (a crash before the heartbeat moved) is the same entry.
    again = note_downtime(store, "p", [("eform_submitted", EFORM, False)], None, now=back)
    assert again == listed


def test_runs_list_and_the_console_agree_on_what_needs_attention(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    with open_store(str(state)) as store:
        mark_alive(store, "p", datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
        (gap,) = note_downtime(store, "p", [("eform_submitted", EFORM, False)], None)
        held, _ = store.start_run("p", "r", "e1", run_id="a" * 32)
        store.step_pending(held, "form", {"use": "send_eform"})
        store.step_sent(held, "form")
        store.step_in_doubt(held, "form", {"message": "no answer"})
        store.set_run_status(held, "in_doubt", {"step": "form"})
        ctx = ConsoleContext(store, "p", who="t")

        runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})

        def listed() -> set[str]:
            result = runner.invoke(cli, ["runs", "list", "--status", "in_doubt", "--json"])
            assert result.exit_code == 0, result.output
            return {row["run_id"] for row in json.loads(result.stdout)}

        def console() -> set[str]:
            return {row["run_id"] for row in attention_view(ctx)}

        assert listed() == console() == {gap, held}
        with TestClient(create_app(ctx, Guard()), base_url="http://127.0.0.1") as web:
            rows = web.get("/console/api/attention").json()
        (shown,) = [row for row in rows if row["run_id"] == gap]
        assert shown["recipe"] == "gap: eform_submitted"
        assert "eform_submitted" in shown["why_in_doubt"]

        done = runner.invoke(cli, ["runs", "resolve", gap[:8], "--step", "gap", "--as", "done"])
        assert done.exit_code == 0, done.output
        assert "closed" in done.output
        closed = store.get_run(gap)
        assert closed is not None
        assert closed.status == "succeeded"
        retry = runner.invoke(cli, ["runs", "resolve", held, "--step", "form", "--as", "retry"])
        assert retry.exit_code == 0, retry.output
        # Settled, not yet resumed: it waits for serve or 'runs retry', not for a person.
        assert listed() == console() == set()
        table = runner.invoke(cli, ["runs", "list"]).output
        assert "settled" in table


def test_a_resolution_made_outside_the_console_reaches_a_running_serve(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    tmp_path: Path,
) -> None:
    recipe = tmp_path / "lead.yaml"
    recipe.write_text(
        "name: lead\ntrigger: {use: test_event}\nsteps:\n"
        "  - id: lead\n    use: create_lead\n"
        "    with: {entityType: Individual, entityName: 'Held {{ trigger.ref }}'}\n"
    )
    checked = validate_recipe(recipe, registry=registry, can_write=True)
    state = str(tmp_path / "s.db")
    with open_store(state) as store, open_store(state) as elsewhere:
        store.record_event("p", "test_event", "e", "ev", {"ref": "x"})
        fast_sandbox.admin("POST", "/_admin/faults", {"kind": "drop", "method": "POST"})
        service = Service([Runner(checked, store, client, practice="p")], store, idle=0.05)
        thread = threading.Thread(target=service.run, daemon=True)
        thread.start()
        try:
            run_id = wait_for(
                "the run to be held",
                lambda: next((run.run_id for run in elsewhere.list_runs(status="in_doubt")), None),
            )
            # Another process's decision: nothing tells the service but the store.
            elsewhere.resolve_step(run_id, "lead", "retry", "bob", "not in the practice")
            wait_for(
                "the service to finish the settled run",
                lambda: (
                    (found := elsewhere.get_run(run_id)) is not None and found.status == "succeeded"
                ),
            )
        finally:
            service.stop.set()
            thread.join(timeout=60)
    assert not service.settled.is_set()  # the console's path was not used


def test_settled_gap_entries_are_closed_by_whoever_looks(store: StateStore) -> None:
    mark_alive(store, "p", datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    (gap,) = note_downtime(store, "p", [("eform_submitted", EFORM, False)], None)
    assert close_settled_gaps(store, "p") == 0  # still waiting for a person
    store.resolve_step(gap, GAP_STEP, "done", "bob", "checked the portal")
    assert close_settled_gaps(store, "p") == 1
    run = store.get_run(gap)
    assert run is not None
    assert run.status == "succeeded"


def test_a_subscription_in_doubt_is_listed_once_while_open_and_again_once_closed(
    tmp_path: Path,
) -> None:
    state = tmp_path / "s.db"
    with open_store(str(state)) as store:
        first = record_subscription_doubt(store, "p", "proposal_accepted", polled=True)
        assert record_subscription_doubt(store, "p", "proposal_accepted", polled=True) == first
        run = store.get_run(first)
        assert run is not None
        assert (run.recipe, run.status) == (DOUBT_PREFIX + "proposal_accepted", "in_doubt")
    # A person settles the entry in the console or the CLI without forgetting the
    # subscription: it is closed, and the next start lists the doubt again.
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})
    done = runner.invoke(cli, ["runs", "resolve", first, "--step", GAP_STEP, "--as", "done"])
    assert done.exit_code == 0, done.output
    assert "closed" in done.output
    with open_store(str(state)) as store:
        closed = store.get_run(first)
        assert closed is not None
        assert closed.status == "succeeded"
        second = record_subscription_doubt(store, "p", "proposal_accepted", polled=True)
        assert second != first
        assert close_subscription_doubt(store, "p", "proposal_accepted", "ann", "forgot") == [
            second
        ]
        step = store.get_step(second, GAP_STEP)
        assert step is not None
        assert step.status == "succeeded"
        assert close_subscription_doubt(store, "p", "proposal_accepted", "ann", "again") == []


@pytest.mark.parametrize(
    ("polled", "fleet", "says"),
    [
        (True, False, ["received by polling", "unsubscribe t --forget'", "restart serve"]),
        (False, False, ["NOT being received", "no poll source"]),
        (True, True, ["--forget --practice acme --state", "restart the workers"]),
    ],
)
def test_a_subscription_in_doubt_entry_says_what_happens_and_what_to_do(
    store: StateStore, polled: bool, fleet: bool, says: list[str]
) -> None:
    run_id = record_subscription_doubt(store, "acme", "t", polled=polled, fleet=fleet)
    step = store.get_step(run_id, GAP_STEP)
    assert step is not None
    assert isinstance(step.error, dict)
    message = str(step.error["message"])
    assert "check the practice's webhook settings" in message
    for words in says:
        assert words in message, message
