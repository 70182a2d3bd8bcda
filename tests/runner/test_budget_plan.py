"""The shared rate budget's priorities, and ``plan``'s arithmetic."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.api import RateLimits
from practiceflow.budget import Priority, RateBudget, priority
from practiceflow.cli import cli
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import validate_recipe
from practiceflow.runner.plan import plan
from runner._support import MODULES, REPO, write_recipe


def test_event_work_gets_the_next_slot_before_polling_when_the_budget_is_spent():
    now = [0.0]
    gate = threading.Event()

    def sleep(seconds: float) -> None:
        gate.wait(5)  # the first waiter holds the limiter until every other one queued
        now[0] += seconds

    budget = RateBudget(
        RateLimits(per_minute=1, per_hour=60, per_day=1440), clock=lambda: now[0], sleep=sleep
    )
    budget.acquire("GET", "/first")  # spends the minute
    order: list[str] = []

    def ask(level: Priority, name: str) -> None:
        with priority(level):
            budget.acquire("GET", name)
        order.append(name)

    holder = threading.Thread(target=ask, args=(Priority.POLL, "poll-1"))
    holder.start()
    time.sleep(0.05)  # poll-1 is inside the limiter, waiting for the window
    waiters = [
        threading.Thread(target=ask, args=(Priority.BACKFILL, "backfill")),
        threading.Thread(target=ask, args=(Priority.POLL, "poll-2")),
        threading.Thread(target=ask, args=(Priority.EVENT, "event")),
        threading.Thread(target=ask, args=(Priority.ACTION, "action")),
    ]
    for thread in waiters:
        thread.start()
    deadline = time.monotonic() + 60  # a bound against a hang; the loop ends when all wait
    while sum(budget.waiting().values()) < len(waiters) and time.monotonic() < deadline:
        time.sleep(0.01)
    gate.set()
    for thread in [holder, *waiters]:
        thread.join(timeout=10)
    assert order == ["poll-1", "action", "event", "poll-2", "backfill"]
    assert budget.admitted_by_priority[Priority.ACTION] == 1


@pytest.mark.parametrize(
    ("recipe", "per_run", "polls"),
    [
        ("proposal_to_bill_and_eform.yaml", 4, True),  # bill + 2 check reads + eForm
        ("won_lead_to_client.yaml", 3, True),  # read + convert + 1 contact
        ("eform_submitted_to_aml.yaml", 1, False),  # webhook only
        ("new_client_integrations_to_jsonl.yaml", 1, True),  # the JSONL step is local
    ],
)
def test_plan_counts_requests_per_run_and_polling(
    recipe: str, per_run: int, polls: bool, tmp_path: Path
):
    from practiceflow.manifest import load_modules

    checked = validate_recipe(REPO / "recipes" / recipe, registry=load_modules())
    result = plan([checked], events_per_day=10, poll_interval=60)
    (cost,) = result.recipes
    assert cost.per_run == per_run
    assert cost.polls is polls
    assert cost.poll_per_day == (1440 if polls else 0)
    assert result.per_day == per_run * 10 + cost.poll_per_day


def test_plan_warns_when_the_recipes_exceed_the_daily_budget(
    registry: ModuleRegistry, tmp_path: Path
):
    steps = "  - id: a\n    use: get_client\n    with: {entityKey: '{{ trigger.entityKey }}'}\n"
    checked = validate_recipe(write_recipe(tmp_path, steps), registry=registry)
    result = plan([checked] * 3, events_per_day=4000)
    assert result.per_day == 12_000
    assert result.share == pytest.approx(1.2)
    assert "one request per 8.64 s" in result.warnings[0]


def test_plan_counts_the_elements_of_a_literal_for_each_list(
    registry: ModuleRegistry, tmp_path: Path
):
    steps = (
        "  - id: listed\n    use: get_client\n    for_each: '{{ vars.clients }}'\n"
        "    with: {entityKey: '{{ item }}'}\n"
        "  - id: from_event\n    use: get_client\n    for_each: '{{ [trigger.entityKey] }}'\n"
        "    with: {entityKey: '{{ item }}'}\n"
    )
    two = (
        "vars:\n  clients:\n    - 1b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58\n"
        "    - 2c6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58\n"
    )
    path = write_recipe(tmp_path, steps, extra=two)
    result = plan([validate_recipe(path, registry=registry)], items=3)
    listed, from_event = result.recipes[0].steps
    assert (listed.requests, listed.note) == (2, "1 request, x2 items")
    assert (from_event.requests, from_event.note) == (3, "1 request, x3 items (assumed)")
    shown = CliRunner().invoke(
        cli, ["plan", str(path), "--modules", str(MODULES)], env={"COLUMNS": "200"}
    )
    assert shown.exit_code == 0, shown.output
    assert "t / listed: 2 (1 request, x2 items)" in shown.output
    assert "t / from_event: 1 (1 request, x1 items (assumed))" in shown.output
