"""Execution: one run per event, if / for_each / on_error / retry, the journal, masking,
graceful stop, and the four example recipes of ``recipes/`` against the sandbox."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from practiceflow.api import Client
from practiceflow.manifest import ModuleRegistry, load_modules
from practiceflow.runner import Runner, dry_run, validate_recipe
from practiceflow.state import StateStore
from practiceflow.testing import SandboxHandle
from runner._support import MODULES, REPO, write_recipe

pytestmark = pytest.mark.integration


def _active(sandbox: SandboxHandle, n: int = 0) -> dict[str, Any]:
    rows = sandbox.admin("GET", "/_admin/records/entities")
    return [row for row in rows if row["status"] == "Active"][n]


def _run(
    recipe_path: Path, registry: ModuleRegistry, store: StateStore, client: Client, payload: Any
) -> tuple[Runner, Any]:
    recipe = validate_recipe(recipe_path, registry=registry)
    practice = client.settings.client_id
    store.record_event(practice, recipe.trigger.key, "x", f"ev-{len(store.list_runs())}", payload)
    runner = Runner(recipe, store, client, practice=practice)
    (outcome,) = runner.process_pending()
    return runner, outcome


def _statuses(store: StateStore, run_id: str) -> dict[str, str]:
    return {s.step_id: s.status for s in store.get_steps(run_id) if not s.step_id.startswith("@")}


def test_if_for_each_and_on_error_continue_are_journaled_per_iteration(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    steps = """\
  - id: skipped
    use: get_client
    if: "{{ trigger.ref == 'never' }}"
    with: {entityKey: "{{ trigger.entityKey }}"}
  - id: ids
    use: get_client_integrations
    for_each: "{{ trigger.targets }}"
    on_error: continue
    with: {entityKey: "{{ item }}"}
  - id: after
    use: get_client
    with: {entityKey: "{{ trigger.entityKey }}"}
"""
    key = _active(fast_sandbox)["entityKey"]
    missing = "00000000-0000-4000-8000-000000000000"
    payload = {"ref": "r", "entityKey": key, "targets": [key, missing]}
    _, outcome = _run(write_recipe(tmp_path, steps), registry, store, client, payload)

    assert outcome.status == "succeeded"
    assert _statuses(store, outcome.run_id) == {
        "skipped": "skipped",
        "ids[0]": "succeeded",
        "ids[1]": "failed",  # 404, and on_error: continue
        "after": "succeeded",
    }


def test_on_error_stop_fails_the_run_and_retry_sends_only_the_failed_step(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    steps = """\
  - id: first
    use: get_client
    with: {entityKey: "{{ trigger.entityKey }}"}
  - id: second
    use: get_client_integrations
    with: {entityKey: "{{ trigger.entityKey }}"}
"""
    key = _active(fast_sandbox)["entityKey"]
    fault = {
        "kind": "500",
        "count": 10,
        "method": "GET",
        "pathPrefix": f"/api/v1/entities/{key}/in",
    }
    fast_sandbox.admin("POST", "/_admin/faults", fault)
    runner, outcome = _run(
        write_recipe(tmp_path, steps), registry, store, client, {"entityKey": key}
    )
    assert outcome.status == "failed"
    assert _statuses(store, outcome.run_id) == {"first": "succeeded", "second": "failed"}

    fast_sandbox.admin("DELETE", "/_admin/faults")
    before = len(fast_sandbox.admin("GET", "/_admin/requests"))
    again = runner.resume_run(outcome.run_id, retry_failed=True)
    sent = fast_sandbox.admin("GET", "/_admin/requests")[before:]
    assert again.status == "succeeded"
    assert [row["path"].endswith("/integrations") for row in sent] == [True]


def test_read_step_retry_rides_out_transient_errors(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    steps = """\
  - id: ids
    use: get_client_integrations
    retry: {attempts: 3, backoff: 0}
    with: {entityKey: "{{ trigger.entityKey }}"}
"""
    key = _active(fast_sandbox)["entityKey"]
    path = f"/api/v1/entities/{key}/integrations"
    # One request per attempt (the client's own read retries off): 2 failures, then success.
    fast_sandbox.admin("POST", "/_admin/faults", {"kind": "500", "count": 2, "pathPrefix": path})
    client.retry = type(client.retry)(max_attempts=1)
    _, outcome = _run(write_recipe(tmp_path, steps), registry, store, client, {"entityKey": key})
    assert outcome.status == "succeeded"
    (step,) = [s for s in store.get_steps(outcome.run_id) if s.step_id == "ids"]
    assert step.attempts == 3


def test_personal_fields_are_masked_in_the_journal_and_dry_run(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    steps = """\
  - id: c
    use: create_client
    with:
      entityType: Company
      entityName: "{{ trigger.name }}"
      email: "{{ trigger.email }}"
      taxNumber: "123456782"
      externalSystemID: ext-pii
"""
    path = write_recipe(tmp_path, steps)
    payload = {"name": "Secret Person Pty", "email": "secret.person@example.com"}
    _, outcome = _run(path, registry, store, client, payload)
    journal = json.dumps([s.request for s in store.get_steps(outcome.run_id)])
    for personal in ("Secret Person Pty", "secret.person@example.com", "123456782"):
        assert personal not in journal
    assert "ext-pii" in journal  # not personal: kept for people reading the journal

    shown = json.dumps(
        [
            step.request
            for step in dry_run(validate_recipe(path, registry=registry), trigger=payload)
        ]
    )
    assert "Secret Person" not in shown
    assert "secret.person" not in shown
    assert "***" in shown


def test_graceful_stop_leaves_the_rest_of_the_run_resumable(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    steps = """\
  - id: a
    use: get_client
    with: {entityKey: "{{ trigger.entityKey }}"}
  - id: b
    use: get_client_integrations
    with: {entityKey: "{{ trigger.entityKey }}"}
"""
    recipe = validate_recipe(write_recipe(tmp_path, steps), registry=registry)
    practice = client.settings.client_id
    key = _active(fast_sandbox)["entityKey"]
    store.record_event(practice, "test_event", "x", "ev", {"entityKey": key})
    stop = threading.Event()
    runner = Runner(recipe, store, client, practice=practice, stop=stop)
    runner._point = lambda label: stop.set() if label == "done:a" else None  # SIGTERM mid-run

    (outcome,) = runner.process_pending()
    assert outcome.status == "running"
    assert _statuses(store, outcome.run_id) == {"a": "succeeded"}
    assert store.pending_events(practice)  # not handled: it resumes on the next start

    stop.clear()
    (resumed,) = runner.process_pending()
    assert resumed.status == "succeeded"
    assert not resumed.created


# --- the four example recipes -----------------------------------------------------------


@pytest.fixture
def shipped() -> ModuleRegistry:
    return load_modules([MODULES])


@pytest.mark.variants
def test_example_accepted_proposal_bills_and_sends_the_eform(
    variant: str,
    fast_sandbox: SandboxHandle,
    client: Client,
    shipped: ModuleRegistry,
    store: StateStore,
):
    entity = _active(fast_sandbox)
    payload = {
        "source": "webhook",
        "event": "proposal.accepted",
        "data": {"entityKey": entity["entityKey"], "title": "Engagement"},
        "raw": {},
    }
    _, outcome = _run(
        REPO / "recipes/proposal_to_bill_and_eform.yaml", shipped, store, client, payload
    )
    assert outcome.status == "succeeded", outcome
    assert _statuses(store, outcome.run_id) == {"bill": "succeeded", "form": "succeeded"}
    bills = [
        b
        for b in fast_sandbox.admin("GET", "/_admin/records/bills")
        if b["entityKey"] == entity["entityKey"]
        and b["billDetails"].startswith("Onboarding - Engagement [pf-")
    ]
    forms = [
        f
        for f in fast_sandbox.admin("GET", "/_admin/records/eforms")
        if f.get("entityKey") == entity["entityKey"]
    ]
    assert (len(bills), len(forms)) == (1, 1)
    assert bills[0]["billTotal"] == 330.0


@pytest.mark.parametrize(("status", "converted"), [("Won", True), ("Contacted", False)])
@pytest.mark.variants
def test_example_won_lead_is_converted_and_its_contact_created(
    variant: str,
    fast_sandbox: SandboxHandle,
    client: Client,
    shipped: ModuleRegistry,
    store: StateStore,
    status: str,
    converted: bool,
):
    lead = fast_sandbox.admin(
        "POST",
        "/_admin/entities",
        {
            "entityType": "Individual",
            "entityName": "Lee",
            "entitySurname": "Won",
            "email": "lee@example.com",
            "clientStatus": "Lead",
        },
    )
    key = lead["entityKey"]
    fast_sandbox.admin("PATCH", f"/_admin/entities/{key}", {"leadStatus": status})
    _, outcome = _run(
        REPO / "recipes/won_lead_to_client.yaml", shipped, store, client, {"entityKey": key}
    )
    assert outcome.status == "succeeded", outcome
    entity = next(
        e for e in fast_sandbox.admin("GET", "/_admin/records/entities") if e["entityKey"] == key
    )
    contacts = [
        c for c in fast_sandbox.admin("GET", "/_admin/records/contacts") if c["entityKey"] == key
    ]
    assert (entity["status"] == "Active") is converted
    assert len(contacts) == (1 if converted else 0)


@pytest.mark.variants
def test_example_submitted_eform_starts_an_aml_check(
    variant: str,
    fast_sandbox: SandboxHandle,
    client: Client,
    shipped: ModuleRegistry,
    store: StateStore,
):
    key = _active(fast_sandbox)["entityKey"]
    payload = {"formKey": "f", "templateId": 1, "entityKey": key}
    _, outcome = _run(REPO / "recipes/eform_submitted_to_aml.yaml", shipped, store, client, payload)
    assert outcome.status == "succeeded", outcome
    checks = fast_sandbox.admin("GET", "/_admin/records/id-verifications")
    assert [c for c in checks if c.get("entityKey") == key]


@pytest.mark.variants
def test_example_new_client_integration_ids_go_to_a_jsonl_file_once(
    variant: str,
    fast_sandbox: SandboxHandle,
    client: Client,
    shipped: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.chdir(tmp_path)
    entity = _active(fast_sandbox)
    _, outcome = _run(
        REPO / "recipes/new_client_integrations_to_jsonl.yaml", shipped, store, client, entity
    )
    assert outcome.status == "succeeded", outcome
    lines = (tmp_path / "out/client_integrations.jsonl").read_text().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["entityKey"] == entity["entityKey"]


def test_a_secret_in_a_step_output_is_masked_in_the_journal_but_reaches_later_steps(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    steps = """\
  - id: hook
    use: subscribe_webhook
    with: {hookUrl: "http://127.0.0.1:9/hooks/x", webhookEvent: proposal.accepted}
  - id: note
    use: write_jsonl
    with:
      path: "{{ trigger.out }}"
      record: {secretLength: "{{ steps.hook.webhookSecret | length }}"}
"""
    out = tmp_path / "out.jsonl"
    recipe = write_recipe(tmp_path, steps)
    _, outcome = _run(recipe, registry, store, client, {"out": str(out)})
    assert outcome.status == "succeeded"
    subscriptions = fast_sandbox.state.practice("anz").subscriptions.values()
    secrets = [row["secret"] for row in subscriptions]
    assert secrets
    assert all(len(secret) > 8 for secret in secrets)
    written = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert written["secretLength"] == len(secrets[0])  # the later step saw the real value
    stored = {s.step_id: s.output for s in store.get_steps(outcome.run_id)}
    assert stored["hook"]["webhookSecret"] == "***"
    database = (tmp_path / "state.db").read_bytes() + (tmp_path / "state.db-wal").read_bytes()
    for secret in secrets:
        assert secret.encode() not in database


FIND_OR_CREATE = """\
  - id: find
    use: find_clients
    with: {entityCode: "{{ trigger.ref }}"}
  - id: create
    use: create_client
    if: "{{ steps.find.items | length == 0 }}"
    with:
      entityName: "{{ trigger.ref }} Pty Ltd"
      entityType: Company
      entityCode: "{{ trigger.ref }}"
  - id: read
    use: get_client
    with:
      entityKey: >-
        {{ steps.find.items[0].entityKey if steps.find.items else steps.create.entityKey }}
"""


def test_find_or_create_pages_past_page_one_inside_a_recipe(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    entities = fast_sandbox.admin("GET", "/_admin/records/entities")
    last = next(row for row in reversed(entities) if row.get("entityCode"))
    assert entities.index(last) >= 100, "the seeded client must sit beyond the first page"
    recipe = write_recipe(tmp_path, FIND_OR_CREATE)

    _, found = _run(recipe, registry, store, client, {"ref": last["entityCode"]})
    _, created = _run(recipe, registry, store, client, {"ref": "NEWCODE9"})

    assert found.status == "succeeded", found
    assert _statuses(store, found.run_id) == {
        "find": "succeeded",
        "create": "skipped",
        "read": "succeeded",
    }
    (read,) = [s for s in store.get_steps(found.run_id) if s.step_id == "read"]
    assert read.output["entityKey"] == last["entityKey"]
    assert created.status == "succeeded", created
    assert _statuses(store, created.run_id)["create"] == "succeeded"
    codes = [row.get("entityCode") for row in fast_sandbox.admin("GET", "/_admin/records/entities")]
    assert codes.count("NEWCODE9") == 1


LOCAL_ONLY = """\
  - id: note
    use: write_jsonl
    with:
      path: "{out}"
      record: {{n: "{{{{ trigger.n }}}}"}}
"""


def test_runners_sharing_a_recipe_store_its_version_once_and_run_on_it(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fleet serves one recipe file to many practices, each with a runner of its own.
    path = write_recipe(tmp_path, LOCAL_ONLY.format(out=tmp_path / "out.jsonl"))
    recipe = validate_recipe(path, registry=registry)
    saved: list[str] = []
    save = store.save_version

    def counted(digest: str, *args: Any, **kwargs: Any) -> Any:
        saved.append(digest)
        return save(digest, *args, **kwargs)

    monkeypatch.setattr(store, "save_version", counted)
    runners = [Runner(recipe, store, None, practice=f"p{n}") for n in range(3)]
    digests = {runner.stored_version() for runner in runners}
    assert len(digests) == 1
    assert len(saved) == len(set(saved))  # each row (recipe, modules) written once
    for runner in runners:
        store.record_event(runner.practice, runner.source, "x", "e1", {"n": 1})
        (event,) = store.pending_events(runner.practice)
        outcome = runner.run_event(event)
        assert outcome is not None
        assert outcome.status == "succeeded"
        run = store.get_run(outcome.run_id)
        assert run is not None
        assert run.version in digests
