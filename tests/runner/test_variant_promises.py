"""The cases of issue 23, each against the sandbox playing the answer that broke a promise.

Every write here loses its answer (the sandbox's ``drop`` fault: it acts, then cuts the
connection), so the runner must read back. It may conclude "absent" (and send again) only
from positive evidence; the sandbox's own records then show how often the write happened.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.api import Client
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import Runner, validate_recipe
from practiceflow.runner.step_executor import marker_for
from practiceflow.state import StateStore
from practiceflow.testing import SandboxHandle
from runner._support import write_recipe

pytestmark = pytest.mark.integration

THIRDS = (
    "[{amount: 33.333, taxPercent: 10}, {amount: 33.333, taxPercent: 10}, "
    "{amount: 33.333, taxPercent: 10}]"
)
BOTH_TAXES = "[{amount: 100, taxPercent: 10, taxAmount: 3}]"


def _bill_steps(lines: str, bill_date: str | None) -> str:
    dated = f"\n      billDate: '{bill_date}'" if bill_date else ""
    return f"""\
  - id: bill
    use: create_bill
    with:
      entityKey: "{{{{ trigger.entityKey }}}}"{dated}
      lineItems: {lines}
"""


def _run_once_with_lost_answer(
    sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    steps: str,
    payload: dict,
    path: str,
):
    recipe = validate_recipe(write_recipe(tmp_path, steps), registry=registry)
    practice = client.settings.client_id
    store.record_event(practice, "test_event", "test.event", "e-1", payload)
    sandbox.admin(
        "POST", "/_admin/faults", {"kind": "drop", "count": 1, "method": "POST", "pathPrefix": path}
    )
    (outcome,) = Runner(recipe, store, client, practice=practice).process_pending()
    return outcome


def _active(sandbox: SandboxHandle) -> str:
    rows = sandbox.admin("GET", "/_admin/records/entities")
    return next(row["entityKey"] for row in rows if row["status"] == "Active")


@pytest.mark.parametrize(
    ("answers", "lines", "bill_date"),
    [
        ({}, BOTH_TAXES, None),  # taxPercent wins; the read-back assumed taxAmount
        ({"tax_precedence": "amount"}, BOTH_TAXES, None),
        ({}, THIRDS, None),  # rounded per line: 109.98, not 110.00
        ({"rounding": "per_total"}, THIRDS, None),
        ({"bill_rows": "slim"}, BOTH_TAXES, None),  # rows name the client by entityID only
        ({"field_case": "Id", "bill_rows": "slim"}, THIRDS, None),
        ({"end_date": "exclusive"}, BOTH_TAXES, "2025-06-02"),  # endDate=billDate shows none
        ({"page_size.bills": "ignored"}, THIRDS, None),
    ],
)
def test_a_bill_whose_answer_was_lost_exists_once(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    answers: dict,
    lines: str,
    bill_date: str | None,
):
    fast_sandbox.admin("POST", "/_admin/variants", {"set": answers})
    key = _active(fast_sandbox)
    before = [
        row for row in fast_sandbox.admin("GET", "/_admin/records/bills") if row["entityKey"] == key
    ]
    outcome = _run_once_with_lost_answer(
        fast_sandbox,
        client,
        registry,
        store,
        tmp_path,
        _bill_steps(lines, bill_date),
        {"entityKey": key},
        "/api/v1/bills",
    )
    after = [
        row for row in fast_sandbox.admin("GET", "/_admin/records/bills") if row["entityKey"] == key
    ]
    assert len(after) == len(before) + 1  # never twice
    assert outcome.status == "succeeded"  # found by reading back, not held


@pytest.mark.parametrize("marked", [False, True])
def test_a_near_miss_keeps_the_bill_in_doubt_rather_than_sending_it_again(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    marked: bool,
):
    # Another bill of the same client, same day, created in the read-back's window: without
    # the marker the read-back cannot prove ours is absent, so it holds the step for a
    # person; with it, every bill of the range is read and none carries the marker, so the
    # bill (refused by the 500) is sent again, once.
    key = _active(fast_sandbox)
    client.post("/api/v1/bills", {"entityKey": key, "lineItems": [{"amount": 7, "taxPercent": 0}]})
    fast_sandbox.admin(
        "POST",
        "/_admin/faults",
        {"kind": "server_error", "count": 1, "method": "POST", "pathPrefix": "/api/v1/bills"},
    )
    extra = "" if marked else "marker: false\n"
    recipe = validate_recipe(
        write_recipe(tmp_path, _bill_steps(BOTH_TAXES, None), extra=extra), registry=registry
    )
    practice = client.settings.client_id
    store.record_event(practice, "test_event", "test.event", "e-1", {"entityKey": key})
    (outcome,) = Runner(recipe, store, client, practice=practice).process_pending()
    bills = [
        row for row in fast_sandbox.admin("GET", "/_admin/records/bills") if row["entityKey"] == key
    ]
    ours = [row for row in bills if "[pf-" in str(row.get("billDetails"))]
    if not marked:
        assert outcome.status == "in_doubt"
        assert outcome.held == ("bill",)
        assert ours == []
        return
    assert outcome.status == "succeeded"
    assert len(ours) == 1
    step = store.get_step(outcome.run_id, "bill")
    assert step is not None
    assert "safe to retry" in str(step.resolution_note)
    assert "marker" in str(step.resolution_note)


CLIENT_STEPS = """\
  - id: client
    use: create_client
    with: {entityType: Company, entityName: Marked Pty Ltd}
"""


@pytest.mark.variants
@pytest.mark.parametrize("action", ["create_bill", "create_client"])
def test_a_lost_answer_is_settled_by_the_run_marker(
    variant: str,
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    action: str,
):
    key = _active(fast_sandbox)
    if action == "create_bill":
        steps, path, kind = _bill_steps(THIRDS, None), "/api/v1/bills", "bills"
    else:
        steps, path, kind = CLIENT_STEPS, "/api/v1/entities", "entities"
    outcome = _run_once_with_lost_answer(
        fast_sandbox, client, registry, store, tmp_path, steps, {"entityKey": key}, path
    )
    sid = "bill" if action == "create_bill" else "client"
    marker = marker_for(outcome.run_id, sid)
    field = "billDetails" if action == "create_bill" else "externalSystemID"
    rows = fast_sandbox.admin("GET", f"/_admin/records/{kind}")
    carrying = [
        row for row in rows if marker in str(row.get(field) or (row.get("extra") or {}).get(field))
    ]
    assert len(carrying) == 1  # acted once, never sent again
    assert outcome.status == "succeeded", outcome
    step = store.get_step(outcome.run_id, sid)
    assert step is not None
    assert step.status == "succeeded"
    assert step.resolved_by is not None
    assert "reconciled" in str(step.resolution_note)
    assert marker in str(step.resolution_note)


def test_a_lead_listed_only_under_leads_is_found_not_created_twice(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    fast_sandbox.admin("POST", "/_admin/variants", {"set": {"leads_in_entities": "hidden"}})
    steps = """\
  - id: lead
    use: create_lead
    with: {entityType: Individual, entityName: Hidden, email: hidden@example.com}
"""
    outcome = _run_once_with_lost_answer(
        fast_sandbox, client, registry, store, tmp_path, steps, {}, "/api/v1/leads"
    )
    leads = [
        row
        for row in fast_sandbox.admin("GET", "/_admin/records/leads")
        if row["entityName"] == "Hidden"
    ]
    assert len(leads) == 1
    assert outcome.status == "succeeded"


@pytest.mark.parametrize(
    "path",
    ["/api/v1/bills/list", "/api/v1/contacts/list", "/api/v1/proposals/list", "/api/v1/leads"],
)
def test_a_walk_reads_every_row_when_page_size_is_ignored(
    fast_sandbox: SandboxHandle, client: Client, path: str
):
    name = path.split("/")[3]
    answers = {f"page_size.{name}": "ignored", "proposals_filter": "optional"}
    fast_sandbox.admin("POST", "/_admin/variants", {"set": answers})
    kind = {"bills": "bills", "contacts": "contacts", "proposals": "proposals", "leads": "leads"}
    stored = len(fast_sandbox.admin("GET", f"/_admin/records/{kind[name]}"))
    assert stored > 20  # more than one page of the server's own size
    params = {"startDate": "2000-01-01", "endDate": "2100-01-01"} if name == "bills" else {}
    rows = list(client.paginate(path, params=params, page_size=100))
    assert len(rows) == stored
    spent = [row for row in fast_sandbox.state.request_log() if row["path"] == path]
    assert len(spent) <= -(-stored // 20) + 1  # the pages holding data, plus one
