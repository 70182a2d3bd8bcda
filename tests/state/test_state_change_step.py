"""Store-agnostic: several moves of a step in one transaction (``change_step``) read
exactly as the same moves made one call each; a run keeps its ``origin``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from practiceflow.errors import BugError, ConfigError
from practiceflow.state import StateStore, StepChange, StepRecord, StepTransition

if TYPE_CHECKING:
    from practiceflow.testing import FakeClock

P = "practice-a"
REQUEST = {"method": "POST", "path": "/api/v1/bills", "json": {"entityKey": "k", "amount": 100}}

#: Each move as a StepChange, and as the one-call method that makes it.
MOVES: dict[str, tuple[StepChange, Callable[[StateStore, str, str], None]]] = {
    "pending": (
        StepChange.to_pending(REQUEST),
        lambda store, run, step: store.step_pending(run, step, REQUEST),
    ),
    "sent": (StepChange.to_sent(), lambda store, run, step: store.step_sent(run, step)),
    "succeeded": (
        StepChange.to_succeeded({"ok": True}),
        lambda store, run, step: store.step_succeeded(run, step, {"ok": True}),
    ),
    "failed": (
        StepChange.to_failed({"status": 400}),
        lambda store, run, step: store.step_failed(run, step, {"status": 400}),
    ),
    "skipped": (
        StepChange.to_skipped("if was false"),
        lambda store, run, step: store.step_skipped(run, step, "if was false"),
    ),
    "in_doubt": (
        StepChange.to_in_doubt({"reason": "timeout"}),
        lambda store, run, step: store.step_in_doubt(run, step, {"reason": "timeout"}),
    ),
}

PATHS = [
    ["pending", "sent"],
    ["pending", "sent", "succeeded"],
    ["pending", "sent", "failed"],
    ["pending", "sent", "in_doubt"],
    ["pending", "sent", "sent", "succeeded"],
    ["pending", "pending", "sent"],
    ["pending", "sent", "pending", "sent", "succeeded"],  # a write refused with 429
    ["pending", "skipped"],
    ["skipped"],
    ["pending", "failed", "pending", "sent", "succeeded"],
]


def _step_state(step: StepRecord | None) -> tuple[Any, ...]:
    """A step without its times (the two ways commit at different moments)."""
    assert step is not None
    return (
        step.step_id,
        step.status,
        step.request,
        step.output,
        step.error,
        step.attempts,
        step.sent_at is None,
        step.resolved_by,
        step.resolution_note,
    )


def _history(transitions: list[StepTransition]) -> list[tuple[Any, ...]]:
    return [(t.from_status, t.to_status, t.who, t.note, t.detail) for t in transitions]


def _run(store: StateStore, event_id: str) -> str:
    run_id, created = store.start_run(P, "onboard", event_id)
    assert created
    return run_id


@pytest.mark.parametrize("moves", PATHS, ids=["-".join(m) for m in PATHS])
def test_moves_in_one_transaction_read_as_the_same_moves_one_call_each(
    store: StateStore, moves: list[str]
) -> None:
    one_by_one, together = _run(store, "evt-1"), _run(store, "evt-2")
    for move in moves:
        MOVES[move][1](store, one_by_one, "s")

    store.change_step(together, "s", *(MOVES[move][0] for move in moves))

    assert _step_state(store.get_step(together, "s")) == _step_state(
        store.get_step(one_by_one, "s")
    )
    assert _history(store.step_history(together, "s")) == _history(
        store.step_history(one_by_one, "s")
    )


def test_moves_made_together_share_one_time(store: StateStore, clock: FakeClock) -> None:
    run_id = _run(store, "evt-1")
    clock.advance(timedelta(seconds=5))
    store.change_step(run_id, "s", *(MOVES[m][0] for m in ["pending", "sent", "succeeded"]))

    step = store.get_step(run_id, "s")
    assert step is not None
    moment = clock.start + timedelta(seconds=5)
    assert (step.created_at, step.sent_at, step.updated_at) == (moment, moment, moment)
    assert {t.at for t in store.step_history(run_id, "s")} == {moment}


def test_moves_journaled_after_the_fact_keep_their_own_times(
    store: StateStore, clock: FakeClock
) -> None:
    run_id = _run(store, "evt-1")
    left = clock.start + timedelta(seconds=1)
    clock.advance(timedelta(seconds=3))  # the answer came two seconds after the send
    store.change_step(
        run_id,
        "s",
        StepChange.to_pending(REQUEST, at=left),
        StepChange.to_sent(durable=False, at=left),
        StepChange.to_succeeded({"ok": True}),
    )

    answered = clock.start + timedelta(seconds=3)
    assert [t.at for t in store.step_history(run_id, "s")] == [left, left, answered]
    step = store.get_step(run_id, "s")
    assert step is not None
    assert (step.created_at, step.sent_at, step.updated_at) == (left, left, answered)


def test_a_move_time_without_a_time_zone_is_refused(store: StateStore) -> None:
    run_id = _run(store, "evt-1")
    with pytest.raises(ConfigError, match="naive"):
        store.change_step(run_id, "s", StepChange.to_pending(REQUEST, at=datetime(2025, 3, 1)))
    assert store.get_step(run_id, "s") is None


ILLEGAL = [
    ([], ["pending", "succeeded"]),
    ([], ["sent"]),
    ([], ["pending", "sent", "succeeded", "sent"]),
    (["pending", "sent", "succeeded"], ["pending", "sent"]),
    (["pending", "sent", "in_doubt"], ["pending", "sent"]),
    (["pending"], ["sent", "skipped"]),
]


@pytest.mark.parametrize(
    ("before", "moves"),
    ILLEGAL,
    ids=[f"{'-'.join(b) or 'new'}-then-{'-'.join(m)}" for b, m in ILLEGAL],
)
def test_an_illegal_move_among_several_writes_none_of_them(
    store: StateStore, before: list[str], moves: list[str]
) -> None:
    run_id = _run(store, "evt-1")
    for move in before:
        MOVES[move][1](store, run_id, "s")
    step_before = store.get_step(run_id, "s")

    with pytest.raises(BugError, match="valid next states are"):
        store.change_step(run_id, "s", *(MOVES[move][0] for move in moves))

    assert store.get_step(run_id, "s") == step_before
    assert len(store.step_history(run_id, "s")) == len(before)


@pytest.mark.parametrize("first", ["pending", "sent", "succeeded"])
def test_moves_of_an_unknown_run_are_bugs_whatever_the_move(store: StateStore, first: str) -> None:
    with pytest.raises(BugError, match="does not exist"):
        store.change_step("no-such-run", "s", MOVES[first][0])


def test_change_step_needs_a_move(store: StateStore) -> None:
    run_id = _run(store, "evt-1")
    with pytest.raises(BugError, match="got no moves"):
        store.change_step(run_id, "s")
    assert store.get_step(run_id, "s") is None


def test_a_run_keeps_its_origin_and_has_no_steps(store: StateStore) -> None:
    origin = {"event_id": "evt-1", "payload": {"n": 1, "name": "Jane"}}

    run_id, created = store.start_run(P, "onboard", "evt-1", origin=origin)

    assert created
    run = store.get_run(run_id)
    assert run is not None
    assert run.origin == origin
    assert store.get_steps(run_id) == []
    assert store.step_history(run_id) == []


def test_finding_an_existing_run_keeps_its_first_origin(store: StateStore) -> None:
    run_id, _ = store.start_run(P, "onboard", "evt-1", origin={"n": 1})

    again, created = store.start_run(P, "onboard", "evt-1", origin={"n": 2})

    assert (again, created) == (run_id, False)
    run = store.get_run(run_id)
    assert run is not None
    assert run.origin == {"n": 1}
    assert store.step_history(run_id) == []
