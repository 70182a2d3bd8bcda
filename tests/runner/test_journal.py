"""What the journal holds while a step runs (the rule of ``practiceflow.runner.journal``):
a write is journaled ``pending`` and ``sent`` in one fsynced commit once the rate budget
admitted it and before its request leaves, never while it waits for the budget; a read,
safe to send again, is journaled with its answer; every step's outcome is committed before
the next step starts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pgserver import shared_server
from practiceflow.api import Client, RateBudget, RateLimits
from practiceflow.errors import StoreError
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import Runner, validate_recipe
from practiceflow.state import StateStore, StepStatus, open_store
from practiceflow.testing import SandboxHandle
from runner._support import write_recipe

pytestmark = pytest.mark.integration

STEPS = """\
  - id: client
    use: create_client
    with:
      entityType: Company
      entityName: "Journal {{ trigger.n }}"
      externalSystemID: "journal-{{ trigger.n }}"
  - id: ids
    use: get_client_integrations
    with: {entityKey: "{{ trigger.key or steps.client.entityKey }}"}
"""


def _runner(
    tmp_path: Path,
    registry: ModuleRegistry,
    store: StateStore,
    client: Client,
    payload: Any,
    seen: dict[str, str | None],
    steps: str = STEPS,
    watch: str | None = None,
) -> Runner:
    """A runner on one recorded event that notes at each point the journaled status of the
    point's step (or of step ``watch``)."""
    recipe = validate_recipe(write_recipe(tmp_path, steps), registry=registry)
    practice = client.settings.client_id
    store.record_event(practice, recipe.trigger.key, "x", "ev-1", payload)

    def point(label: str) -> None:
        (run,) = store.list_runs()  # created, with its origin, before its first step
        step = store.get_step(run.run_id, watch or label.split(":", 1)[1])
        seen[label] = None if step is None else step.status

    return Runner(recipe, store, client, practice=practice, on_point=point)


def test_a_write_is_journaled_sent_before_it_leaves_a_read_with_its_answer(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 1, "key": None}, seen)

    (outcome,) = runner.process_pending()

    assert outcome.status == "succeeded"
    assert seen == {
        "pending:client": None,  # admitted by the budget, nothing journaled yet
        "sent:client": "sent",  # committed before the request leaves
        "answered:client": "sent",
        "done:client": "succeeded",  # committed before the next step starts
        "pending:ids": None,
        "sent:ids": None,  # a read: journaled only with its answer
        "answered:ids": None,
        "done:ids": "succeeded",
    }
    for step_id in ("client", "ids"):
        history = store.step_history(outcome.run_id, step_id)
        assert [(t.from_status, t.to_status) for t in history] == [
            (None, "pending"),
            ("pending", "sent"),
            ("sent", "succeeded"),
        ]
        step = store.get_step(outcome.run_id, step_id)
        assert step is not None
        assert (step.attempts, step.sent_at is not None) == (1, True)
    # The event is kept on the run itself, not among its steps.
    run = store.get_run(outcome.run_id)
    assert run is not None
    assert isinstance(run.origin, dict)
    assert (run.origin["event_id"], run.origin["payload"]) == ("ev-1", {"n": 1, "key": None})
    assert {t.step_id for t in store.step_history(outcome.run_id)} == {"client", "ids"}


def test_a_read_that_fails_is_journaled_pending_sent_failed_with_its_error(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    missing = "00000000-0000-4000-8000-000000000000"
    fault = {"kind": "500", "count": 1, "method": "GET", "pathPrefix": "/api/v1/entities/"}
    fast_sandbox.admin("POST", "/_admin/faults", fault)
    client.retry = type(client.retry)(max_attempts=1)
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 2, "key": missing}, seen)

    (outcome,) = runner.process_pending()

    assert outcome.status == "failed"
    assert seen["sent:ids"] is None
    history = store.step_history(outcome.run_id, "ids")
    assert [t.to_status for t in history] == ["pending", "sent", "failed"]
    assert history[-1].detail["status"] == 500
    step = store.get_step(outcome.run_id, "ids")
    assert step is not None
    assert (step.status, step.attempts, step.error["status"]) == ("failed", 1, 500)
    assert step.request["input"] == {"entityKey": missing}


def test_a_read_journaled_with_its_answer_keeps_when_it_was_sent(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    tmp_path: Path,
):
    start = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    now = [start]
    with open_store(str(tmp_path / "clocked.db"), clock=lambda: now[0]) as store:
        seen: dict[str, str | None] = {}
        runner = _runner(tmp_path, registry, store, client, {"n": 3, "key": None}, seen)
        inner = runner._point

        def point(label: str) -> None:
            inner(label)
            if label.startswith("answered:"):
                now[0] += timedelta(seconds=2)  # the answer took two seconds

        runner._point = point
        (outcome,) = runner.process_pending()

        history = store.step_history(outcome.run_id, "ids")
        step = store.get_step(outcome.run_id, "ids")
    assert [(t.to_status, t.at - start) for t in history] == [
        ("pending", timedelta(seconds=2)),  # after the write's answer
        ("sent", timedelta(seconds=2)),
        ("succeeded", timedelta(seconds=4)),
    ]
    assert step is not None
    assert (step.created_at, step.sent_at, step.updated_at) == (
        start + timedelta(seconds=2),
        start + timedelta(seconds=2),
        start + timedelta(seconds=4),
    )


READ_THEN_WRITE = """\
  - id: ids
    use: get_client_integrations
    with: {entityKey: "{{ trigger.key }}"}
  - id: client
    use: create_client
    with:
      entityType: Company
      entityName: "Journal {{ trigger.n }}"
      externalSystemID: "journal-{{ trigger.n }}"
"""


def test_a_reads_outcome_is_committed_before_the_next_write_leaves(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    known = client.post("/api/v1/entities", {"entityType": "Company", "entityName": "Known"})
    seen: dict[str, str | None] = {}
    payload = {"n": 4, "key": known["entityKey"]}
    runner = _runner(tmp_path, registry, store, client, payload, seen, READ_THEN_WRITE)
    reads: list[StepStatus | None] = []
    inner = runner._point

    def point(label: str) -> None:
        inner(label)
        if label == "sent:client":  # the write's request is about to leave
            (run,) = store.list_runs()
            step = store.get_step(run.run_id, "ids")
            reads.append(None if step is None else step.status)

    runner._point = point
    (outcome,) = runner.process_pending()

    assert outcome.status == "succeeded"
    assert (seen["done:ids"], seen["pending:client"]) == ("succeeded", None)
    assert reads == ["succeeded"]  # committed before the write left
    assert [(t.step_id, t.to_status) for t in store.step_history(outcome.run_id)] == [
        ("ids", "pending"),
        ("ids", "sent"),
        ("ids", "succeeded"),
        ("client", "pending"),
        ("client", "sent"),
        ("client", "succeeded"),
    ]
    assert store.pending_events(client.settings.client_id) == []


@pytest.mark.parametrize("ended", ["succeeded", "cancelled"])
def test_an_event_whose_run_already_ended_is_marked_handled_and_nothing_is_sent(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    ended: str,
):
    practice = client.settings.client_id
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 6, "key": None}, seen)
    (event,) = store.pending_events(practice)
    if ended == "succeeded":  # its event left pending, as when several recipes share it
        first = runner.run_event(event, mark_handled=False)
        assert first is not None
        run_id = first.run_id
    else:  # a person cancelled it before it ran
        run_id, _ = store.start_run(practice, runner.recipe.name, event.event_id)
        store.set_run_status(run_id, "cancelled")
    assert [e.event_id for e in store.pending_events(practice)] == ["ev-1"]
    seen.clear()
    before = fast_sandbox.admin("GET", "/_admin/records/entities")

    (outcome,) = runner.process_pending()

    assert (outcome.run_id, outcome.status, outcome.created) == (run_id, ended, False)
    assert seen == {}  # no step was rendered, nothing was sent
    assert fast_sandbox.admin("GET", "/_admin/records/entities") == before
    assert store.pending_events(practice) == []


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    """A fresh store of each backend."""
    if request.param == "sqlite":
        url = str(tmp_path / "state.db")
    else:
        url = shared_server().new_schema(prefix="runner")
    with open_store(url) as opened:
        yield opened


def test_a_step_another_runner_journaled_meanwhile_is_not_sent_again(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    any_store: StateStore,
    tmp_path: Path,
):
    store = any_store
    practice = client.settings.client_id
    seen: dict[str, str | None] = {}
    late = _runner(tmp_path, registry, store, client, {"n": 7, "key": None}, seen)
    early = Runner(late.recipe, store, client, practice=practice)
    (event,) = store.pending_events(practice)
    other: list[Any] = []
    inner = late._point

    def point(label: str) -> None:
        inner(label)
        if label == "pending:client" and not other:
            # Between `late` loading the run and journaling its write, its lease lapses
            # (a frozen process) and `early` runs it.
            (run,) = store.list_runs()
            lease = store.run_lease(run.run_id)
            assert lease is not None
            store.release_run_lease(run.run_id, lease.owner)
            other.append(early.run_event(event, mark_handled=False))

    late._point = point

    (outcome,) = late.process_pending()

    (first,) = other
    assert first is not None
    assert (first.status, first.created) == ("succeeded", False)  # `late` created the run
    assert (outcome.run_id, outcome.status) == (first.run_id, "succeeded")
    assert [run.run_id for run in store.list_runs()] == [first.run_id]
    # `late`'s intent commit found its lease lost before its request left: one client.
    records = fast_sandbox.admin("GET", "/_admin/records/entities")
    mine = [r for r in records if r.get("externalSystemID") == "journal-7"]
    assert len(mine) == 1
    history = store.step_history(first.run_id, "client")
    assert [t.to_status for t in history] == ["pending", "sent", "succeeded"]
    assert store.pending_events(practice) == []


def test_a_write_whose_sent_commit_fails_is_never_sent(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 8, "key": None}, seen)
    atomic = store.atomic
    failed: list[bool] = []

    @contextmanager
    def full_disk_once(*, durable: bool = False) -> Iterator[None]:
        if durable and not failed:  # the write's intent, the first durable commit
            failed.append(True)
            raise StoreError("state database: the disk is full (test)")
        with atomic(durable=durable):
            yield

    monkeypatch.setattr(store, "atomic", full_disk_once)
    before = fast_sandbox.admin("GET", "/_admin/requests")

    (outcome,) = runner.process_pending()

    assert outcome.status == "failed"
    assert "disk is full" in str(outcome.error)
    assert "sent:client" not in seen
    sent = fast_sandbox.admin("GET", "/_admin/requests")[len(before) :]
    assert [r["method"] for r in sent] == []  # nothing left this machine
    created = fast_sandbox.admin("GET", "/_admin/records/entities")
    assert "journal-8" not in [e["externalSystemID"] for e in created]
    # The step is journaled failed, never sent: nothing is in doubt.
    step = store.get_step(outcome.run_id, "client")
    assert step is not None
    assert (step.status, step.sent_at) == ("failed", None)


def test_a_write_waiting_for_the_rate_budget_is_not_journaled_sent(
    fast_sandbox: SandboxHandle,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    # A budget of one request a minute, already spent: the write waits (on a fake clock)
    # for the next slot, and the journal says nothing of it until the budget admits it.
    client_id, secret = fast_sandbox.credentials("anz", "rw")
    now = [1000.0]
    waits: list[tuple[float, StepStatus | None]] = []
    limits = RateLimits(per_minute=1, per_hour=60, per_day=1440)

    def sleep(seconds: float) -> None:
        runs = store.list_runs()
        step = store.get_step(runs[0].run_id, "client") if runs else None
        waits.append((seconds, None if step is None else step.status))
        now[0] += seconds

    budget = RateBudget(limits, clock=lambda: now[0], sleep=sleep)
    budget.acquire("GET", "/spent")
    with Client(
        client_id, secret, base_url=fast_sandbox.base_url("anz"), budget=budget, timeout=5
    ) as client:
        seen: dict[str, str | None] = {}
        steps = STEPS.split("  - id: ids")[0]
        runner = _runner(tmp_path, registry, store, client, {"n": 9, "key": None}, seen, steps)

        (outcome,) = runner.process_pending()

    assert outcome.status == "succeeded"
    assert waits
    assert all(status is None for _, status in waits)  # waited, never `sent` meanwhile
    assert sum(seconds for seconds, _ in waits) >= 59  # for the next slot of the minute
    assert (seen["pending:client"], seen["sent:client"]) == (None, "sent")


def test_a_write_answered_429_waits_as_pending_not_sent(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    """The API refused the write (429) without acting on it: while the budget pauses, the
    step is journaled ``pending`` again, so a kill during that wait leaves nothing in
    doubt; the write is journaled ``sent`` again just before it leaves once more."""
    fault = {"kind": "429", "count": 1, "method": "POST", "pathPrefix": "/api/v1/entities"}
    fast_sandbox.admin("POST", "/_admin/faults", {**fault, "retryAfter": 1})
    recipe = validate_recipe(write_recipe(tmp_path, STEPS), registry=registry)
    practice = client.settings.client_id
    store.record_event(practice, recipe.trigger.key, "x", "ev-1", {"n": 7, "key": None})
    seen: list[tuple[str, StepStatus | None]] = []

    def point(label: str) -> None:
        if label.endswith(":client"):
            (run,) = store.list_runs()
            step = store.get_step(run.run_id, "client")
            seen.append((label, None if step is None else step.status))

    (outcome,) = Runner(recipe, store, client, practice=practice, on_point=point).process_pending()

    assert outcome.status == "succeeded"
    assert seen == [
        ("pending:client", None),
        ("sent:client", "sent"),
        ("pending:client", "pending"),  # after the 429 and the budget's pause
        ("sent:client", "sent"),
        ("answered:client", "sent"),
        ("done:client", "succeeded"),
    ]
    posts = [
        row["status"]
        for row in fast_sandbox.admin("GET", "/_admin/requests")
        if row["method"] == "POST" and row["path"].endswith("/api/v1/entities")
    ]
    assert posts == [429, 201]
