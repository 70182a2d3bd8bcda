"""Each polling trigger keeps both promises whichever way the service answers what the spec
leaves open (the sandbox's variants): every new record fires once, and no poll spends more
than the pages that hold data plus one. Counts come from the sandbox's own request log."""

from __future__ import annotations

from pathlib import Path

import pytest

from _variants import play_variant
from practiceflow.state import SQLiteStore
from practiceflow.triggers import Poller, load_definition
from practiceflow.triggers.definition import TriggerDefinition

pytestmark = [pytest.mark.integration, pytest.mark.variants]

EVERY_CHANGE = """\
key: every_entity_change
title: Every entity change
description: Test module - each change of any entity fires once.
noun: Client
poll:
  path: /api/v1/entities/list
  cursor: {kind: lastUpdated, field: lastUpdated}
  dedupe: "{{ item.entityKey }}@{{ item.lastUpdated }}"
output:
  schema: {type: object, additionalProperties: true, properties: {}}
sample: {}
"""


def _requests(sandbox, path: str) -> list[dict]:
    return [row for row in sandbox.state.request_log() if row["path"] == path]


def _every_change(tmp_path: Path) -> TriggerDefinition:
    module = tmp_path / "triggers" / "every_entity_change.yaml"
    module.parent.mkdir()
    module.write_text(EVERY_CHANGE)
    return load_definition(str(module))


def _small_practice(sandbox, variant: str) -> None:
    """40 entities, listed 5 a page, budgets far above what the test sends."""
    sandbox.admin("POST", "/_admin/reset", {"entities": 40})
    play_variant(sandbox, variant)
    fast = {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}
    sandbox.admin("POST", "/_admin/config", {"pageSize": 5, "rateLimits": fast})


def _changes_defeating_a_restart(sandbox) -> list[str]:
    """Touch 12 clients so that creation order and time order disagree across pages of 5:
    positions 6-10 first (oldest stamps), then 1-5 in order, then 11-12."""
    rows = sandbox.admin("GET", "/_admin/records/entities")
    keys = [row["entityKey"] for row in rows if row["status"] == "Active"][:12]
    # Distinct stamps, all in our past: the poller never sends a time after its clock.
    sandbox.admin("POST", "/_admin/clock", {"advance": -600})
    for index in [5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 10, 11]:
        sandbox.admin("POST", "/_admin/clock", {"advance": 2})
        sandbox.admin("PATCH", f"/_admin/entities/{keys[index]}", {"email": f"c{index}@ex.com"})
    return keys


def test_every_change_fires_once_whatever_the_list_order(
    sandbox, store: SQLiteStore, client, tmp_path: Path, variant: str
):
    _small_practice(sandbox, variant)
    poller = Poller(client, store, "p", _every_change(tmp_path))
    assert poller.poll_once().events == []
    keys = _changes_defeating_a_restart(sandbox)
    seen = [event.raw["entityKey"] for event in poller.poll_once().events]
    seen += [event.raw["entityKey"] for event in poller.poll_once().events]
    assert sorted(seen) == sorted(keys)


@pytest.mark.parametrize("order", ["creation", "descending"])
def test_an_unordered_list_loses_no_change(
    sandbox, store: SQLiteStore, client, tmp_path: Path, order: str, variant: str
):
    _small_practice(sandbox, variant)
    sandbox.admin("POST", "/_admin/variants", {"set": {"entity_order": order}})
    poller = Poller(client, store, "p", _every_change(tmp_path))
    assert poller.poll_once().events == []
    keys = _changes_defeating_a_restart(sandbox)
    seen = [event.raw["entityKey"] for event in poller.poll_once().events]
    assert sorted(seen) == sorted(keys)


def test_new_bill_fires_once_for_a_new_bill(sandbox, store: SQLiteStore, client, variant: str):
    poller = Poller(client, store, "p", load_definition("new_bill"))
    assert poller.poll_once().events == []
    entity = next(
        row for row in sandbox.admin("GET", "/_admin/records/entities") if row["status"] == "Active"
    )
    known = {row["billingID"] for row in sandbox.admin("GET", "/_admin/records/bills")}
    client.post(
        "/api/v1/bills",
        {"entityKey": entity["entityKey"], "lineItems": [{"amount": 10, "taxPercent": 10}]},
    )
    (bill,) = [
        row
        for row in sandbox.admin("GET", "/_admin/records/bills")
        if row["billingID"] not in known
    ]
    before = len(_requests(sandbox, "/api/v1/bills/list"))
    result = poller.poll_once()
    assert [event.id for event in result.events] == [f"bill:{bill['billingID']}"]
    spent = len(_requests(sandbox, "/api/v1/bills/list")) - before
    listed = sum(
        1 for row in sandbox.admin("GET", "/_admin/records/bills") if row["billDate"] >= "2025"
    )
    assert spent <= listed // 20 + 2  # pages holding data (20 rows at least), plus one
    assert poller.poll_once().events == []


def test_new_client_fires_once_whatever_the_status_case(
    sandbox, store: SQLiteStore, client, variant: str
):
    poller = Poller(client, store, "p", load_definition("new_client"))
    assert poller.poll_once().events == []
    answer = client.post("/api/v1/entities", {"entityName": "Polled Co", "entityType": "CO"})
    del answer
    (made,) = [
        row
        for row in sandbox.admin("GET", "/_admin/records/entities")
        if row["entityName"] == "Polled Co"
    ]
    events = poller.poll_once().events
    assert [event.id.split(":")[-1] for event in events] == [made["entityKey"]]
    assert poller.poll_once().events == []


def test_a_recurring_run_poll_reads_an_unpaged_list_once(
    sandbox, store: SQLiteStore, client, variant: str
):
    schedule = sandbox.admin("GET", "/_admin/records/recurring")[0]
    options = {"recurringBillingId": schedule["recurringBillingID"]}
    poller = Poller(client, store, "p", load_definition("new_recurring_billing_run"), options)
    path = f"/api/v1/recurring-billing/{schedule['recurringBillingID']}/runs"
    poller.poll_once()
    poller.poll_once()
    # A bare array that ignores pageNumber: page 2 repeats page 1 and ends the walk.
    assert len(_requests(sandbox, path)) <= 4


def test_new_contact_fires_once_for_each_of_many_new_contacts(
    sandbox, store: SQLiteStore, client, variant: str
):
    fast = {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}
    sandbox.admin("POST", "/_admin/config", {"rateLimits": fast})
    poller = Poller(client, store, "p", load_definition("new_contact"))
    assert poller.poll_once().events == []
    entity = next(
        row for row in sandbox.admin("GET", "/_admin/records/entities") if row["status"] == "Active"
    )
    sandbox.admin("POST", "/_admin/clock", {"advance": -600})  # stamps in our past
    for number in range(25):  # more than a page of a server that ignores pageSize (20)
        client.post(f"/api/v1/entities/{entity['entityKey']}/contacts", {"firstName": f"N{number}"})
    made = {
        row["contactKey"]
        for row in sandbox.admin("GET", "/_admin/records/contacts")
        if row["entityKey"] == entity["entityKey"] and str(row["firstName"]).startswith("N")
    }
    fired = [event.id for event in poller.poll_once().events]
    fired += [event.id for event in poller.poll_once().events]
    assert sorted(fired) == sorted(f"contact:{key}" for key in made)
    assert len(made) == 25


def test_proposal_accepted_polls_an_acceptance_once(
    sandbox, store: SQLiteStore, client, variant: str
):
    proposal = sandbox.admin("GET", "/_admin/records/proposals")[0]
    options = {"entityKey": proposal["entityKey"]}
    poller = Poller(client, store, "p", load_definition("proposal_accepted"), options)
    assert poller.poll_once().events == []
    sandbox.admin("POST", f"/_admin/proposals/{proposal['proposalKey']}/accept")
    events = poller.poll_once().events
    assert [event.id for event in events] == [f"proposal:{proposal['proposalKey']}"]
    assert poller.poll_once().events == []
