"""No silent gaps (issue 24): the downtime since the last sign of life is a known gap; a
trigger that cannot catch up by polling gets an entry of the attention table (issue 33):
one a sweep can prove complete is ``checking``, any other needs a person, listed alike by
``attention list``, ``runs list --status in_doubt`` and the console; a person's decision
reaches a running serve however it is made."""

from __future__ import annotations

import json
import re
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
from practiceflow.service.compose import note_downtime
from practiceflow.service.heartbeat import last_alive, mark_alive
from practiceflow.service.loop import Service
from practiceflow.service.needs_person import close_subscription_doubt, record_subscription_doubt
from practiceflow.state import StateStore, open_store
from practiceflow.testing import SandboxHandle
from practiceflow.triggers import load_definition
from runner._serving import wait_for

EFORM = load_definition("eform_submitted")
CLIENTS = load_definition("new_client")
ACCEPTED = load_definition("proposal_accepted")
DOWN = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def test_the_window_since_the_last_sign_of_life_is_listed_for_triggers_that_cannot_poll(
    store: StateStore,
) -> None:
    assert note_downtime(store, "p", [("eform_submitted", EFORM, False)]) == []  # first start
    mark_alive(store, "p", DOWN)
    assert last_alive(store, "p") == DOWN
    back = DOWN + timedelta(minutes=7)
    served = [
        ("eform_submitted", EFORM, False),
        ("new_client", CLIENTS, True),
        ("proposal_accepted", ACCEPTED, False),
    ]
    listed = note_downtime(store, "p", served, now=back)
    # new_client catches up by polling: no entry; proposal_accepted is swept.
    entries = [store.get_attention(entry_id) for entry_id in listed]
    shown = [(e.kind, e.trigger, e.status) for e in entries if e is not None]
    assert shown == [("gap", "eform_submitted", "open"), ("gap", "proposal_accepted", "checking")]
    eform = entries[0]
    assert eform is not None
    assert (eform.window_start, eform.window_end) == (DOWN, back)
    for words in ("2026-01-05T09:00:00+00:00", "2026-01-05T09:07:00+00:00", "no list endpoint"):
        assert words in eform.reason
    # The same window again (a crash before the heartbeat moved) is the same entry.
    assert note_downtime(store, "p", served, now=back) == listed
    assert store.list_runs() == []  # runs hold recipe runs only


def _gap_and_held_run(store: StateStore) -> tuple[str, str]:
    mark_alive(store, "p", DOWN)
    (gap,) = note_downtime(store, "p", [("eform_submitted", EFORM, False)])
    held, _ = store.start_run("p", "r", "e1", run_id="a" * 32)
    store.step_pending(held, "lead", {"use": "create_lead"})
    store.step_sent(held, "lead")
    store.step_succeeded(held, "lead", {"entityKey": "k"})
    store.step_pending(held, "form", {"use": "send_eform"})
    store.step_sent(held, "form")
    store.step_in_doubt(held, "form", {"message": "no answer"})
    store.set_run_status(held, "in_doubt", {"step": "form"})
    return gap, held


def test_runs_list_and_the_console_agree_on_what_needs_attention(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    with open_store(str(state)) as store:
        gap, held = _gap_and_held_run(store)
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
            page = web.get("/console/attention").text
        (shown,) = [row for row in rows if row["run_id"] == gap]
        assert shown["recipe"] == "gap: eform_submitted"
        assert "eform_submitted" in shown["why_in_doubt"]
        assert f"practiceflow attention settle {gap[:8]} --note TEXT" in page

        # As before the table: an entry's id is settled by 'runs resolve --step gap'.
        done = runner.invoke(cli, ["runs", "resolve", gap[:8], "--step", "gap", "--as", "done"])
        assert done.exit_code == 0, done.output
        assert "closed" in done.output
        closed = store.get_attention(gap)
        assert closed is not None
        assert closed.status == "closed"
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


def test_the_console_settles_an_entry_with_who_and_why(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "s.db")) as store:
        gap, _ = _gap_and_held_run(store)
        ctx = ConsoleContext(store, "p", who="t")
        with TestClient(create_app(ctx, Guard()), base_url="http://127.0.0.1") as web:
            page = web.get("/console/attention").text
            found = re.search(
                rf'/attention/{gap}/settle".*?name="csrf_token" value="(\w+)"', page, re.S
            )
            assert found is not None, page
            action = f"/console/attention/{gap}/settle"
            blank = web.post(action, data={"csrf_token": found[1], "who": "ann", "note": " "})
            assert blank.status_code == 409
            forged = web.post(action, data={"csrf_token": "0" * 64, "note": "x"})
            assert forged.status_code == 403
            data = {"csrf_token": found[1], "who": "ann", "note": "no form in that hour"}
            done = web.post(action, data=data, follow_redirects=False)
            assert done.status_code == 303
            assert f"entry {gap[:8]} settled" in web.get(done.headers["location"]).text
        entry = store.get_attention(gap)
        assert entry is not None
        assert (entry.status, entry.settled_by, entry.note) == (
            "closed",
            "ann",
            "no form in that hour",
        )


def test_attention_settle_closes_an_entry_with_who_and_why(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    with open_store(str(state)) as store:
        mark_alive(store, "p", DOWN)
        (gap,) = note_downtime(store, "p", [("eform_submitted", EFORM, False)])
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})
    listed = runner.invoke(cli, ["attention", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.stdout)
    assert (row["id"], row["kind"], row["trigger"]) == (gap, "gap", "eform_submitted")
    assert row["settle"] == f"practiceflow attention settle {gap[:8]} --note TEXT"
    settle = ["attention", "settle", gap[:8], "--note", "no form in that hour", "--who", "bob"]
    done = runner.invoke(cli, settle)
    assert done.exit_code == 0, done.output
    assert "settled" in done.output
    with open_store(str(state)) as store:
        entry = store.get_attention(gap)
        assert entry is not None
        assert (entry.status, entry.settled_by) == ("closed", "bob")
        assert entry.note == "no form in that hour"
    again = runner.invoke(cli, settle)
    assert again.exit_code == 2
    assert "settled already by bob" in again.output
    assert runner.invoke(cli, ["attention", "list"]).output.strip() == "nothing needs attention"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--step", "gap", "--as", "retry"], "--as retry means nothing here"),
        (["--step", "form", "--as", "done"], "it has one step, 'gap'"),
    ],
)
def test_runs_resolve_on_an_entry_accepts_only_what_means_something(
    tmp_path: Path, args: list[str], says: str
) -> None:
    state = tmp_path / "s.db"
    with open_store(str(state)) as store:
        gap, _ = _gap_and_held_run(store)
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})
    refused = runner.invoke(cli, ["runs", "resolve", gap, *args])
    assert refused.exit_code == 2, refused.output
    assert says in refused.output
    assert "practiceflow attention settle" in refused.output
    with open_store(str(state)) as store:
        entry = store.get_attention(gap)
        assert entry is not None
        assert entry.status == "open"


@pytest.mark.parametrize(
    ("step", "says"),
    [
        ("fomr", "has no step 'fomr'; its steps: lead (succeeded), form (in_doubt)"),
        ("lead", "step 'lead' is succeeded: only a failed or in_doubt step can be resolved"),
    ],
)
def test_runs_resolve_of_a_misspelt_or_finished_step_lists_the_real_steps(
    tmp_path: Path, step: str, says: str
) -> None:
    state = tmp_path / "s.db"
    with open_store(str(state)) as store:
        _, held = _gap_and_held_run(store)
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})
    refused = runner.invoke(cli, ["runs", "resolve", held, "--step", step, "--as", "done"])
    assert refused.exit_code == 2, refused.output
    assert says in " ".join(refused.output.split())
    with open_store(str(state)) as store:
        form = store.get_step(held, "form")
        assert form is not None
        assert form.status == "in_doubt"


def test_a_subscription_in_doubt_is_listed_once_while_open_and_again_once_closed(
    tmp_path: Path,
) -> None:
    state = tmp_path / "s.db"
    with open_store(str(state)) as store:
        first = record_subscription_doubt(store, "p", "proposal_accepted", polled=True)
        assert record_subscription_doubt(store, "p", "proposal_accepted", polled=True) == first
        entry = store.get_attention(first)
        assert entry is not None
        assert (entry.kind, entry.trigger, entry.status) == (
            "subscription_in_doubt",
            "proposal_accepted",
            "open",
        )
    # A person settles the entry without forgetting the subscription: it is closed, and
    # the next start lists the doubt again.
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})
    done = runner.invoke(cli, ["attention", "settle", first, "--note", "checked"])
    assert done.exit_code == 0, done.output
    with open_store(str(state)) as store:
        closed = store.get_attention(first)
        assert closed is not None
        assert closed.status == "closed"
        second = record_subscription_doubt(store, "p", "proposal_accepted", polled=True)
        assert second != first
        assert close_subscription_doubt(store, "p", "proposal_accepted", "ann", "forgot") == [
            second
        ]
        forgotten = store.get_attention(second)
        assert forgotten is not None
        assert (forgotten.status, forgotten.settled_by) == ("closed", "ann")
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
    entry_id = record_subscription_doubt(store, "acme", "t", polled=polled, fleet=fleet)
    entry = store.get_attention(entry_id)
    assert entry is not None
    assert "check the practice's webhook settings" in entry.reason
    for words in says:
        assert words in entry.reason, entry.reason
