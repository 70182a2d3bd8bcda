"""Crash safety: a real ``kill -9`` of the runner at every journal boundary, then a
restart; the sandbox's own records prove each write happened exactly once.

The recipe (``recipes/three_writes.yaml``) creates a client as a lead (with an
``externalSystemID``), converts it, and bills it. The runner is a process of its own,
forked from a warm helper (``tests/forked_cli.py``) as ``tests/kill_at.py`` runs it,
which SIGKILLs it when it reaches the named journal point:

* ``pending:S``: the budget admitted the request, nothing of it is journaled nor sent: on
  restart it is rendered and sent (once);
* ``sent:S``: ``sent`` is committed, the request has not left: on restart the write is in
  doubt, the read-back finds nothing, it is sent (once);
* ``answered:S``: the API acted and answered, the answer is not journaled: on restart the
  read-back finds the record and the step succeeds without a second send;
* ``done:S``: the step is journaled ``succeeded``: it is never sent again.

And for every write action of the catalog: a kill right after its success resumes without
a person, and the write is never sent again.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from forked_cli import Done, run_cli
from practiceflow.api import Client
from practiceflow.engine import run_action
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import RECONCILER, Runner, validate_recipe
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from runner._support import MODULES, RECIPES, cli_env, write_recipe

pytestmark = pytest.mark.integration

STEPS = ("client", "convert", "bill")
POINTS = [f"{point}:{step}" for step in STEPS for point in ("pending", "sent", "answered", "done")]


def _run(
    state: Path, env: dict[str, str], point: str, recipe: Path = RECIPES / "three_writes.yaml"
) -> Done:
    """``practiceflow run --once`` in a process of its own, killed with SIGKILL at ``point``."""
    command = [
        point,
        "run",
        str(recipe),
        "--once",
        "--state",
        str(state),
        "--modules",
        str(MODULES),
    ]
    return run_cli(command, env)


def _writes(sandbox: SandboxHandle, ref: str) -> dict[str, int]:
    """Count each write in the sandbox's own records and request log."""
    entities = [
        row
        for row in sandbox.admin("GET", "/_admin/records/entities")
        if (row.get("externalSystemID") or row.get("extra", {}).get("externalSystemID")) == ref
        or row.get("entityName") == f"Crash Test {ref}"
    ]
    keys = {row["entityKey"] for row in entities}
    bills = [
        row for row in sandbox.admin("GET", "/_admin/records/bills") if row["entityKey"] in keys
    ]
    converts = [
        row
        for row in sandbox.admin("GET", "/_admin/requests")
        if row["method"] == "POST"
        and "convert-to-client" in row["path"]
        and any(key in row["path"] for key in keys)
    ]
    return {"client": len(entities), "convert": len(converts), "bill": len(bills)}


@pytest.mark.parametrize("point", POINTS)
def test_kill_9_at_each_boundary_then_restart_writes_exactly_once(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    tmp_path: Path,
    point: str,
):
    state = tmp_path / "state.db"
    env = cli_env(fast_sandbox)
    ref = f"crash-{point.replace(':', '-')}"
    with open_store(str(state)) as store:
        store.record_event(
            env["PRACTICEFLOW_CLIENT_ID"], "test_event", "test.event", ref, {"ref": ref}
        )

    killed = _run(state, env, point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    # The restart runs in this process (the library, as `run --once` does), from the journal.
    recipe = validate_recipe(RECIPES / "three_writes.yaml", registry=registry)
    with open_store(str(state)) as store:
        runner = Runner(recipe, store, client, practice=env["PRACTICEFLOW_CLIENT_ID"])
        (outcome,) = runner.process_pending()
        assert outcome.status == "succeeded", outcome

    assert _writes(fast_sandbox, ref) == {"client": 1, "convert": 1, "bill": 1}
    with open_store(str(state)) as store:
        (run,) = store.list_runs()
        assert run.status == "succeeded"
        steps = {step.step_id: step for step in store.get_steps(run.run_id)}
        assert [steps[s].status for s in STEPS] == ["succeeded"] * 3
        kind, step = point.split(":")
        if kind == "answered":  # the API acted: found by reading back, not sent again
            assert steps[step].resolved_by == RECONCILER
            assert "reconciled" in (steps[step].resolution_note or "")
        if kind == "sent":  # never left: read back, found absent, sent once
            assert "safe to retry" in (steps[step].resolution_note or "")
        if kind == "done":  # journaled `succeeded`: never sent again, nothing read back
            assert steps[step].resolved_by is None
        before = STEPS[: STEPS.index(step)]  # each journaled `succeeded` before the kill
        assert [steps[s].resolved_by for s in before] == [None] * len(before)
        assert not store.pending_events(env["PRACTICEFLOW_CLIENT_ID"])


@pytest.mark.parametrize("point", ["pending:client#2", "sent:client#2"])
def test_kill_9_in_the_second_run_leaves_the_first_ended_and_its_event_handled(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    tmp_path: Path,
    point: str,
):
    # `run --once` drains two events: the first run's end (its status, its event handled)
    # is committed before the second run starts.
    state = tmp_path / "state.db"
    env = cli_env(fast_sandbox)
    practice = env["PRACTICEFLOW_CLIENT_ID"]
    refs = [f"two-{n}-{point.split(':')[0]}" for n in (1, 2)]
    with open_store(str(state)) as store:
        for ref in refs:
            store.record_event(practice, "test_event", "test.event", ref, {"ref": ref})

    killed = _run(state, env, point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    with open_store(str(state)) as store:
        runs = {run.event_id: run for run in store.list_runs()}
        first = runs[refs[0]]
        steps = {step.step_id: step.status for step in store.get_steps(first.run_id)}
        assert [steps[s] for s in STEPS] == ["succeeded"] * 3
        assert first.status == "succeeded"
        assert [event.event_id for event in store.pending_events(practice)] == [refs[1]]
    assert _writes(fast_sandbox, refs[0]) == {"client": 1, "convert": 1, "bill": 1}

    recipe = validate_recipe(RECIPES / "three_writes.yaml", registry=registry)
    with open_store(str(state)) as store:
        runner = Runner(recipe, store, client, practice=practice)
        outcomes = runner.process_pending()
        assert [(o.event_id, o.status) for o in outcomes] == [(refs[1], "succeeded")]
        assert not store.pending_events(practice)
        assert {run.status for run in store.list_runs()} == {"succeeded"}
        bill = store.get_step(first.run_id, "bill")
        assert bill is not None
        assert bill.resolved_by is None  # journaled before the kill, never read back
    for ref in refs:
        assert _writes(fast_sandbox, ref) == {"client": 1, "convert": 1, "bill": 1}


def _records(sandbox: SandboxHandle, kind: str) -> list[dict[str, Any]]:
    return list(sandbox.admin("GET", f"/_admin/records/{kind}"))


def _webhook(client: Client) -> dict[str, Any]:
    made = client.post(
        "/api/v1/webhooks", {"hookUrl": "http://127.0.0.1:9/h", "webhookEvent": "proposal.accepted"}
    )
    return {"id": made["id"]}


def _service_id(client: Client) -> Any:
    services = run_action("list_proposal_services", {}, client).output["items"]
    return next(value for name, value in services[0].items() if name.lower() == "serviceid")


def _active(sandbox: SandboxHandle) -> str:
    return next(r["entityKey"] for r in _records(sandbox, "entities") if r["status"] == "Active")


#: Every write action of the catalog, with an input the sandbox accepts (built from its
#: seed, or from a record the test makes first).
WRITE_INPUTS: dict[str, Callable[[SandboxHandle, Client], dict[str, Any]]] = {
    "add_lead_note": lambda sb, c: {
        "entityKey": _records(sb, "leads")[0]["entityKey"],
        "note": "Wants a quote",
    },
    "convert_lead": lambda sb, c: {
        "entityKey": c.post("/api/v1/leads", {"entityType": "Individual", "entityName": "Jo"})[
            "entityKey"
        ]
    },
    "create_bill": lambda sb, c: {
        "entityKey": _active(sb),
        "billDate": "2024-05-01",
        "dueDate": "2024-05-31",
        "sendBill": False,
        "lineItems": [{"amount": 100, "taxPercent": 10, "narration": "Onboarding fee"}],
    },
    "create_client": lambda sb, c: {"entityType": "Company", "entityName": "Crash Pty Ltd"},
    "create_contact": lambda sb, c: {
        "entityKey": _records(sb, "contacts")[0]["entityKey"],
        "contact": {"firstName": "Jane", "lastName": "Citizen", "email": "jane@example.com"},
    },
    "create_lead": lambda sb, c: {"entityType": "Company", "entityName": "Crash Lead"},
    "create_onboarding": lambda sb, c: {
        "recipient": {"name": "Jane", "email": "jane@example.com"},
        "clients": [{"entityKey": _active(sb)}],
    },
    "create_proposal": lambda sb, c: {
        "entityKey": run_action("find_clients", {"limit": 1}, c).output["items"][0]["entityKey"],
        "services": [{"serviceID": _service_id(c)}],
    },
    "create_proposal_from_template": lambda sb, c: {"entityKey": _active(sb), "templateId": 901},
    "duplicate_proposal": lambda sb, c: {
        "proposalKey": _records(sb, "proposals")[0]["proposalKey"]
    },
    "renew_proposal": lambda sb, c: {"proposalKey": _records(sb, "proposals")[0]["proposalKey"]},
    "send_eform": lambda sb, c: {
        "templateId": run_action("list_eform_templates", {"limit": 1}, c).output["items"][0][
            "formTemplateId"
        ],
        "entityKey": _active(sb),
    },
    "start_aml_check": lambda sb, c: {"entityKey": _active(sb), "level": "standard"},
    "start_id_verification": lambda sb, c: {"entityKey": _active(sb)},
    "subscribe_webhook": lambda sb, c: {
        "hookUrl": "http://127.0.0.1:9/hook",
        "webhookEvent": "proposal.accepted",
    },
    "test_webhook": lambda sb, c: _webhook(c),
    "unsubscribe_webhook": lambda sb, c: _webhook(c),
    "update_contact": lambda sb, c: {
        "entityKey": _records(sb, "contacts")[0]["entityKey"],
        "contactKey": _records(sb, "contacts")[0]["contactKey"],
        "contact": {"mobile": "0400 111 222"},
    },
}


def test_the_table_holds_every_write_action(registry: ModuleRegistry):
    writes = {key for key in registry.actions if registry.action(key).needs_write}
    assert set(WRITE_INPUTS) == writes


@pytest.mark.parametrize("action", sorted(WRITE_INPUTS))
def test_kill_9_after_any_writes_success_resumes_without_a_person_never_sent_again(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    tmp_path: Path,
    action: str,
):
    data = WRITE_INPUTS[action](fast_sandbox, client)
    steps = f"  - id: write\n    use: {action}\n    with: {json.dumps(data)}\n"
    recipe_path = write_recipe(tmp_path, steps, name=f"crash {action}")
    state = tmp_path / "state.db"
    env = cli_env(fast_sandbox)
    practice = env["PRACTICEFLOW_CLIENT_ID"]
    with open_store(str(state)) as store:
        store.record_event(practice, "test_event", "test.event", action, {"ref": action})
    before = len(fast_sandbox.admin("GET", "/_admin/requests"))

    killed = _run(state, env, "done:write", recipe_path)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    sent = fast_sandbox.admin("GET", "/_admin/requests")[before:]
    writes = [r for r in sent if r["method"] != "GET"]
    assert len(writes) == 1, sent  # the write left once, and succeeded

    recipe = validate_recipe(recipe_path, registry=registry)
    with open_store(str(state)) as store:
        (outcome,) = Runner(recipe, store, client, practice=practice).process_pending()
        assert (outcome.status, outcome.held) == ("succeeded", ())  # no person needed
        step = store.get_step(outcome.run_id, "write")
        assert step is not None
        assert (step.status, step.attempts, step.resolved_by) == ("succeeded", 1, None)
    after = fast_sandbox.admin("GET", "/_admin/requests")[before:]
    assert after == sent  # nothing sent again, not even a read-back
