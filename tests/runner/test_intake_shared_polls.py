"""``serve``'s intake polls each list once for every trigger reading it, on a cadence set
by the recipes' ``max_delay`` (against the sandbox over real HTTP on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from practiceflow.api import Client, RateLimits
from practiceflow.manifest import load_modules
from practiceflow.runner import Priority, PriorityBudget, validate_recipe
from practiceflow.service.intake import TriggerIntake
from practiceflow.state import StateStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

ENTITY_TRIGGERS = ("new_client", "new_lead", "lead_converted", "updated_client")
RECIPE = """\
name: {key}
trigger:
  use: {key}
  mode: poll
{delay}steps:
  - id: save
    use: write_jsonl
    with:
      path: "{out}"
      record:
        entityKey: "{{{{ trigger.entityKey }}}}"
"""


def _intake(
    folder: Path, store: StateStore, client: Client, delays: dict[str, str]
) -> TriggerIntake:
    registry = load_modules()
    recipes = []
    for key in ENTITY_TRIGGERS:
        path = folder / f"{key}.yaml"
        delay = f"  max_delay: {delays[key]}\n" if key in delays else ""
        path.write_text(RECIPE.format(key=key, delay=delay, out=folder / f"{key}.jsonl"))
        recipes.append(validate_recipe(path, registry=registry))
    return TriggerIntake(recipes, store, client, "p", poll_interval=60.0)


def _list_requests(sandbox: SandboxHandle) -> int:
    log: list[dict[str, Any]] = sandbox.admin("GET", "/_admin/requests")
    return sum(1 for row in log if row["path"] == "/api/v1/entities/list" and row["status"] == 200)


def test_four_recipes_on_the_entities_list_cost_one_request_a_poll(
    fast_sandbox: SandboxHandle, store: StateStore, client: Client, tmp_path: Path
) -> None:
    intake = _intake(tmp_path, store, client, {})
    assert intake.poll_once() == 0
    assert sorted(intake.baselines) == sorted(ENTITY_TRIGGERS)
    assert intake.polls is not None
    assert [sorted(group.names) for group in intake.polls.groups] == [sorted(ENTITY_TRIGGERS)]
    fast_sandbox.admin(
        "POST", "/_admin/entities", {"entityType": "Company", "entityName": "Thandi"}
    )
    before = _list_requests(fast_sandbox)
    assert intake.poll_once() == 1  # a new client: new_client alone fires
    assert _list_requests(fast_sandbox) - before == 1
    stored = {key: store.pending_events("p", 10, source=key) for key in ENTITY_TRIGGERS}
    assert {key: len(events) for key, events in stored.items()} == {
        "new_client": 1,
        "new_lead": 0,
        "lead_converted": 0,
        "updated_client": 0,
    }


@pytest.mark.parametrize(
    ("delays", "slowest"),
    [
        ({}, 60.0),  # default: today's interval, no back-off
        ({key: "15m" for key in ENTITY_TRIGGERS}, 900.0),
        ({"new_client": "15m", "new_lead": "5m"}, 60.0),  # the others keep 60 s
        ({key: "2m" for key in ENTITY_TRIGGERS}, 120.0),
    ],
)
def test_the_shared_poll_backs_off_to_the_shortest_max_delay_and_a_delivery_resets_it(
    fast_sandbox: SandboxHandle,
    store: StateStore,
    client: Client,
    tmp_path: Path,
    delays: dict[str, str],
    slowest: float,
) -> None:
    intake = _intake(tmp_path, store, client, delays)
    intake.poll_once()
    assert intake.polls is not None
    (group,) = intake.polls.groups
    assert (group.cadence.fastest, group.cadence.slowest) == (60.0, slowest)
    for _ in range(5):  # quiet polls
        intake.poll_once()
    assert group.cadence.interval == slowest
    intake._stored()  # what the receiver calls when it stored a delivery
    assert group.cadence.interval == 60.0


def test_the_shared_poll_waits_behind_event_work_for_the_budget(
    fast_sandbox: SandboxHandle, store: StateStore, tmp_path: Path
) -> None:
    limits = RateLimits(per_minute=100_000, per_hour=1_000_000, per_day=10_000_000)
    budget = PriorityBudget(limits)
    client_id, secret = fast_sandbox.credentials("anz", "rw")
    base = fast_sandbox.base_url("anz")
    with Client(client_id, secret, base_url=base, budget=budget, timeout=5) as client:
        intake = _intake(tmp_path, store, client, {})
        intake.poll_once()
        intake.poll_once()
    # Every request of the polls was admitted at poll priority, behind event work.
    assert budget.admitted_by_priority[Priority.POLL] >= 2
    assert budget.admitted_by_priority[Priority.EVENT] == 0
