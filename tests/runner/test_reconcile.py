"""In-doubt writes are reconciled by reading back, never repeated blindly.

The sandbox's ``drop`` fault performs the request and then closes the connection without
answering: the client cannot tell whether the write happened. Its ``server_error`` fault
answers 500 without acting. Both leave the step in doubt; the runner reads back and either
records what it found or sends the write again, and holds the run for a person where the
API offers no read-back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.api import Client
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import RECONCILER, Runner, validate_recipe
from practiceflow.state import StateStore
from practiceflow.testing import SandboxHandle
from runner._support import write_recipe

# The promises hold whichever way the service answers what the spec leaves open: each test
# runs under the default and the hostile sandbox (every variant: make test-variants).
pytestmark = [pytest.mark.integration, pytest.mark.variants]

CLIENT_STEP = """\
  - id: client
    use: create_client
    with:
      entityType: Company
      entityName: "Fault {{ trigger.ref }}"
      externalSystemID: "{{ trigger.ref }}"
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ steps.client.entityKey }}"
      lineItems: [{amount: 250, taxAmount: 25}]
"""


def _arm(sandbox: SandboxHandle, kind: str, path: str) -> None:
    fault = {"kind": kind, "count": 1, "method": "POST", "pathPrefix": path}
    sandbox.admin("POST", "/_admin/faults", fault)


def _count(sandbox: SandboxHandle, kind: str, **match: str) -> int:
    rows = sandbox.admin("GET", f"/_admin/records/{kind}")
    return sum(all(row.get(k) == v for k, v in match.items()) for row in rows)


@pytest.mark.parametrize(
    ("kind", "path", "step", "verdict"),
    [
        ("drop", "/api/v1/entities", "client", "reconciled"),  # acted, answer lost: found
        ("drop", "/api/v1/bills", "bill", "reconciled"),
        ("server_error", "/api/v1/entities", "client", "safe to retry"),  # 500: not acted
        ("server_error", "/api/v1/bills", "bill", "safe to retry"),
    ],
)
def test_in_doubt_write_is_read_back_and_happens_exactly_once(
    fast_sandbox: SandboxHandle,
    variant: str,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    kind: str,
    path: str,
    step: str,
    verdict: str,
):
    recipe = validate_recipe(write_recipe(tmp_path, CLIENT_STEP), registry=registry)
    practice = client.settings.client_id
    ref = f"fault-{kind}-{step}"
    store.record_event(practice, "test_event", "test.event", ref, {"ref": ref})
    _arm(fast_sandbox, kind, path)

    (outcome,) = Runner(recipe, store, client, practice=practice).process_pending()

    assert outcome.status == "succeeded"
    assert _count(fast_sandbox, "entities", entityName=f"Fault {ref}") == 1
    record = store.get_step(outcome.run_id, step)
    assert record is not None
    assert record.status == "succeeded"
    assert record.resolved_by == RECONCILER
    assert verdict in (record.resolution_note or "")
    entity_key = store.get_step(outcome.run_id, "client").output["entityKey"]  # type: ignore[union-attr]
    assert _count(fast_sandbox, "bills", entityKey=entity_key) == 1
    history = [
        (move.from_status, move.to_status) for move in store.step_history(outcome.run_id, step)
    ]
    assert ("sent", "in_doubt") in history


def test_write_without_read_back_holds_the_run_until_a_person_resolves_it(
    fast_sandbox: SandboxHandle,
    variant: str,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    steps = """\
  - id: lead
    use: create_lead
    with: {entityType: Individual, entityName: "Held {{ trigger.ref }}"}
  - id: client
    use: create_client
    with: {entityType: Company, entityName: "After {{ trigger.ref }}"}
"""
    recipe = validate_recipe(write_recipe(tmp_path, steps), registry=registry)
    practice = client.settings.client_id
    store.record_event(practice, "test_event", "test.event", "held-1", {"ref": "h1"})
    _arm(fast_sandbox, "drop", "/api/v1/leads")
    runner = Runner(recipe, store, client, practice=practice)

    (outcome,) = runner.process_pending()

    assert outcome.status == "in_doubt"
    assert outcome.held == ("lead",)
    assert store.get_step(outcome.run_id, "client") is None  # nothing after it was sent
    assert not store.pending_events(practice)  # the run, not the event, carries it now
    leads = _count(fast_sandbox, "leads", entityName="Held h1")
    assert leads == 1

    # A person checks the practice, sees the lead, and says it is done.
    store.resolve_step(outcome.run_id, "lead", "done", "alice", "lead seen in the portal")
    resumed = runner.resume_run(outcome.run_id)

    assert resumed.status == "succeeded"
    assert _count(fast_sandbox, "leads", entityName="Held h1") == 1
    assert _count(fast_sandbox, "entities", entityName="After h1") == 1


@pytest.mark.parametrize(
    ("kind", "verdict"),
    [("drop", "reconciled"), ("server_error", "safe to retry")],
)
def test_an_in_doubt_lead_with_an_email_is_found_by_it_among_lead_rows(
    fast_sandbox: SandboxHandle,
    variant: str,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    kind: str,
    verdict: str,
):
    steps = """\
  - id: lead
    use: create_lead
    with:
      entityType: Individual
      entityName: "Mail {{ trigger.ref }}"
      email: "{{ trigger.ref }}@example.com"
"""
    recipe = validate_recipe(write_recipe(tmp_path, steps), registry=registry)
    practice = client.settings.client_id
    ref = f"lead-{kind}"
    store.record_event(practice, "test_event", "test.event", ref, {"ref": ref})
    _arm(fast_sandbox, kind, "/api/v1/leads")

    (outcome,) = Runner(recipe, store, client, practice=practice).process_pending()

    assert outcome.status == "succeeded"
    assert _count(fast_sandbox, "leads", entityName=f"Mail {ref}") == 1
    record = store.get_step(outcome.run_id, "lead")
    assert record is not None
    assert record.resolved_by == RECONCILER
    assert verdict in (record.resolution_note or "")
    assert f"{ref}@example.com" not in (record.resolution_note or "")
