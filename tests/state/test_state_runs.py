"""Store-agnostic: runs (one per recipe and event) and the step journal's transitions."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from practiceflow.errors import BugError, ConfigError
from practiceflow.state import StateStore

if TYPE_CHECKING:
    from practiceflow.testing import FakeClock

P, Q = "practice-a", "practice-b"
REQUEST = {"method": "POST", "path": "/api/v1/bills", "json": {"entityKey": "k", "amount": 100}}


@pytest.fixture
def run_id(store: StateStore) -> str:
    run, created = store.start_run(P, "onboard", "evt-1")
    assert created
    return run


# --- runs --------------------------------------------------------------------------------------


def test_one_run_per_recipe_and_event(store: StateStore, clock: FakeClock) -> None:
    first, created = store.start_run(P, "onboard", "evt-1")
    again, created_again = store.start_run(P, "onboard", "evt-1")

    assert (created, created_again) == (True, False)
    assert again == first
    run = store.get_run(first)
    assert run is not None
    assert (run.practice, run.recipe, run.event_id, run.status) == (
        P,
        "onboard",
        "evt-1",
        "pending",
    )
    assert run.created_at == clock.start


@pytest.mark.parametrize(
    ("practice", "recipe", "event_id"),
    [
        pytest.param(P, "other-recipe", "evt-1", id="other-recipe"),
        pytest.param(P, "onboard", "evt-2", id="other-event"),
        pytest.param(Q, "onboard", "evt-1", id="other-practice"),
    ],
)
def test_a_different_recipe_event_or_practice_starts_its_own_run(
    store: StateStore, run_id: str, practice: str, recipe: str, event_id: str
) -> None:
    other, created = store.start_run(practice, recipe, event_id)
    assert created
    assert other != run_id


def _race(count: int, start_run: Callable[[int], tuple[str, bool]]) -> list[tuple[str, bool]]:
    barrier = threading.Barrier(count)
    results: list[tuple[str, bool]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        try:
            barrier.wait()
            result = start_run(index)
            with lock:
                results.append(result)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    return results


def test_racing_threads_on_one_store_start_exactly_one_run(store: StateStore) -> None:
    results = _race(8, lambda _: store.start_run(P, "onboard", "evt-race"))

    assert sum(created for _, created in results) == 1
    assert len({run for run, _ in results}) == 1
    assert len(store.list_runs(event_id="evt-race")) == 1


def test_racing_stores_on_one_database_start_exactly_one_run(
    open_store_again: Callable[[], StateStore],
) -> None:
    stores = [open_store_again() for _ in range(8)]  # separate connections, like processes
    results = _race(8, lambda i: stores[i].start_run(P, "onboard", "evt-race"))

    assert sum(created for _, created in results) == 1
    assert len({run for run, _ in results}) == 1


def test_run_status_changes_and_errors(store: StateStore, run_id: str, clock: FakeClock) -> None:
    store.set_run_status(run_id, "running")
    clock.advance(timedelta(seconds=5))
    store.set_run_status(run_id, "in_doubt", {"step": "bill", "reason": "timeout"})
    run = store.get_run(run_id)
    assert run is not None
    assert run.status == "in_doubt"
    assert run.error == {"step": "bill", "reason": "timeout"}
    assert run.updated_at == clock.start + timedelta(seconds=5)

    store.set_run_status(run_id, "running")
    store.set_run_status(run_id, "succeeded")
    store.set_run_status(run_id, "succeeded")  # finishing twice is harmless
    run = store.get_run(run_id)
    assert run is not None
    assert (run.status, run.error) == ("succeeded", None)


@pytest.mark.parametrize(
    ("path", "illegal"),
    [
        pytest.param(["running", "succeeded"], "running", id="succeeded-to-running"),
        pytest.param(["running", "succeeded"], "failed", id="succeeded-to-failed"),
        pytest.param(["cancelled"], "running", id="cancelled-to-running"),
        pytest.param(["running", "failed"], "succeeded", id="failed-to-succeeded"),
    ],
)
def test_illegal_run_status_changes_are_bugs(
    store: StateStore, run_id: str, path: list[Any], illegal: Any
) -> None:
    for status in path:
        store.set_run_status(run_id, status)
    with pytest.raises(BugError, match="valid next states are"):
        store.set_run_status(run_id, illegal)
    run = store.get_run(run_id)
    assert run is not None
    assert run.status == path[-1]


def test_unknown_runs_and_statuses_are_bugs(store: StateStore, run_id: str) -> None:
    assert store.get_run("no-such-run") is None
    with pytest.raises(BugError, match="does not exist"):
        store.set_run_status("no-such-run", "running")
    with pytest.raises(BugError, match=r"got 'done'; valid values are \["):
        store.set_run_status(run_id, "done")  # type: ignore[arg-type]


def test_list_runs_filters_and_orders_newest_first(store: StateStore, clock: FakeClock) -> None:
    ids = []
    for number, (practice, recipe) in enumerate([(P, "a"), (P, "b"), (Q, "a"), (P, "a")]):
        ids.append(store.start_run(practice, recipe, f"evt-{number}")[0])
        clock.advance(timedelta(minutes=1))
    store.set_run_status(ids[1], "failed", "boom")

    assert [r.run_id for r in store.list_runs()] == ids[::-1]
    assert [r.run_id for r in store.list_runs(practice=P)] == [ids[3], ids[1], ids[0]]
    assert [r.run_id for r in store.list_runs(practice=P, recipe="a")] == [ids[3], ids[0]]
    assert [r.run_id for r in store.list_runs(status="failed")] == [ids[1]]
    assert [r.run_id for r in store.list_runs(event_id="evt-2")] == [ids[2]]
    since = clock.start + timedelta(minutes=2)
    assert [r.run_id for r in store.list_runs(since=since)] == [ids[3], ids[2]]
    assert len(store.list_runs(limit=2)) == 2
    assert store.list_runs(practice="nobody") == []


# --- starts: what quarantine counts -----------------------------------------------------------


def _starts(store: StateStore, run_id: str) -> tuple[str, int]:
    run = store.get_run(run_id)
    assert run is not None
    return run.status, run.starts


def test_starts_are_counted_durably_until_the_run_ends(
    store: StateStore, run_id: str, open_store_again: Callable[[], StateStore]
) -> None:
    assert _starts(store, run_id) == ("pending", 0)
    assert [store.count_start(run_id) for _ in range(3)] == [1, 2, 3]
    # Another handle (another process, after a crash) sees every start.
    assert _starts(open_store_again(), run_id) == ("running", 3)

    store.set_run_status(run_id, "running", {"kind": "bug", "message": "boom"})
    assert _starts(store, run_id) == ("running", 3)  # an error recorded: still unfinished
    store.set_run_status(run_id, "in_doubt", {"kind": "quarantined"})
    assert _starts(store, run_id) == ("in_doubt", 0)  # held for a person: counted afresh
    assert store.count_start(run_id) == 1
    store.set_run_status(run_id, "failed", {"message": "refused"})
    assert _starts(store, run_id) == ("failed", 0)


def test_a_start_clears_the_last_error_and_a_stop_in_order_takes_it_back(
    store: StateStore, run_id: str
) -> None:
    store.count_start(run_id)
    store.set_run_status(run_id, "running", {"kind": "bug", "message": "boom"})
    store.count_start(run_id)
    run = store.get_run(run_id)
    assert run is not None
    assert (run.status, run.error, run.starts) == ("running", None, 2)

    store.uncount_start(run_id)
    store.uncount_start(run_id)
    store.uncount_start(run_id)  # never below zero
    assert _starts(store, run_id) == ("running", 0)


def test_a_finished_or_unknown_run_cannot_be_started(store: StateStore, run_id: str) -> None:
    store.count_start(run_id)
    store.set_run_status(run_id, "succeeded")
    with pytest.raises(BugError, match="valid next states are"):
        store.count_start(run_id)
    assert _starts(store, run_id) == ("succeeded", 0)
    with pytest.raises(BugError, match="does not exist"):
        store.count_start("no-such-run")
    with pytest.raises(BugError, match="does not exist"):
        store.uncount_start("no-such-run")


# --- steps -------------------------------------------------------------------------------------


def test_a_step_goes_pending_sent_succeeded(
    store: StateStore, run_id: str, clock: FakeClock
) -> None:
    store.step_pending(run_id, "bill", REQUEST)
    clock.advance(timedelta(seconds=1))
    store.step_sent(run_id, "bill")
    clock.advance(timedelta(seconds=1))
    store.step_succeeded(run_id, "bill", {"billingID": 7, "billTotal": 110.0})

    step = store.get_step(run_id, "bill")
    assert step is not None
    assert step.status == "succeeded"
    assert step.request == REQUEST
    assert step.output == {"billingID": 7, "billTotal": 110.0}
    assert step.attempts == 1
    assert step.sent_at == clock.start + timedelta(seconds=1)
    assert step.updated_at == clock.start + timedelta(seconds=2)
    assert step.created_at == clock.start
    assert "entityKey" not in repr(step)  # requests and outputs stay out of logs


def _apply(store: StateStore, run_id: str, move: str) -> None:
    step = "s"
    moves: dict[str, Callable[[], None]] = {
        "pending": lambda: store.step_pending(run_id, step, REQUEST),
        "sent": lambda: store.step_sent(run_id, step),
        "succeeded": lambda: store.step_succeeded(run_id, step, {"ok": True}),
        "failed": lambda: store.step_failed(run_id, step, {"status": 400}),
        "skipped": lambda: store.step_skipped(run_id, step, "if was false"),
        "in_doubt": lambda: store.step_in_doubt(run_id, step, {"reason": "timeout"}),
    }
    moves[move]()


LEGAL = [
    ["pending", "sent", "succeeded"],
    ["pending", "sent", "failed"],
    ["pending", "sent", "in_doubt"],
    ["pending", "pending", "sent"],
    ["pending", "sent", "sent", "succeeded"],
    ["pending", "sent", "pending", "sent", "succeeded"],  # a write refused with 429
    ["pending", "skipped"],
    ["skipped"],
    ["failed"],
    ["pending", "failed", "pending", "sent", "succeeded"],
]


@pytest.mark.parametrize("moves", LEGAL, ids=["-".join(m) for m in LEGAL])
def test_legal_step_paths(store: StateStore, run_id: str, moves: list[str]) -> None:
    for move in moves:
        _apply(store, run_id, move)
    step = store.get_step(run_id, "s")
    assert step is not None
    assert step.status == moves[-1]
    assert [t.to_status for t in store.step_history(run_id, "s")] == moves


ILLEGAL = [
    (["pending", "sent", "succeeded"], "sent"),
    (["pending", "sent", "succeeded"], "pending"),
    (["pending", "sent", "succeeded"], "succeeded"),
    (["pending", "sent", "succeeded"], "failed"),
    (["pending", "sent", "in_doubt"], "sent"),
    (["pending", "sent", "in_doubt"], "pending"),
    (["pending", "sent", "in_doubt"], "succeeded"),
    (["pending", "sent", "failed"], "sent"),
    (["pending", "skipped"], "pending"),
    (["pending", "sent"], "skipped"),
    (["pending"], "succeeded"),
    (["pending"], "in_doubt"),
    ([], "sent"),
    ([], "succeeded"),
    ([], "in_doubt"),
]


@pytest.mark.parametrize(
    ("moves", "illegal"), ILLEGAL, ids=[f"{'-'.join(m) or 'new'}-to-{i}" for m, i in ILLEGAL]
)
def test_illegal_step_moves_are_bugs_and_change_nothing(
    store: StateStore, run_id: str, moves: list[str], illegal: str
) -> None:
    for move in moves:
        _apply(store, run_id, move)
    before = store.get_step(run_id, "s")

    with pytest.raises(BugError, match="valid next states are"):
        _apply(store, run_id, illegal)

    assert store.get_step(run_id, "s") == before
    assert len(store.step_history(run_id, "s")) == len(moves)


def test_resolve_in_doubt_as_done_records_who_and_when(
    store: StateStore, run_id: str, clock: FakeClock
) -> None:
    for move in ["pending", "sent", "in_doubt"]:
        _apply(store, run_id, move)
    clock.advance(timedelta(hours=1))

    store.resolve_step(run_id, "s", "done", "alice@practice", "bill 1042 exists", output={"id": 1})

    step = store.get_step(run_id, "s")
    assert step is not None
    assert step.status == "succeeded"
    assert step.output == {"id": 1}
    assert step.resolved_by == "alice@practice"
    assert step.resolved_at == clock.start + timedelta(hours=1)
    assert step.resolution_note == "bill 1042 exists"
    last = store.step_history(run_id, "s")[-1]
    assert (last.from_status, last.to_status) == ("in_doubt", "succeeded")
    assert (last.who, last.note, last.at) == (
        "alice@practice",
        "bill 1042 exists",
        step.resolved_at,
    )
    with pytest.raises(BugError):
        store.step_sent(run_id, "s")  # a resolved-done step is never sent again


def test_resolve_as_retry_sends_again_and_history_keeps_the_error(
    store: StateStore, run_id: str
) -> None:
    for move in ["pending", "sent", "in_doubt"]:
        _apply(store, run_id, move)
    store.resolve_step(run_id, "s", "retry", "bob", "not in the ledger")
    step = store.get_step(run_id, "s")
    assert step is not None
    assert step.status == "pending"
    assert step.request == REQUEST

    store.step_sent(run_id, "s")
    store.step_succeeded(run_id, "s", {"ok": True})
    history = store.step_history(run_id, "s")
    assert [t.to_status for t in history] == [
        "pending",
        "sent",
        "in_doubt",
        "pending",
        "sent",
        "succeeded",
    ]
    assert history[2].detail == {"reason": "timeout"}
    assert [t.who for t in history] == [None, None, None, "bob", None, None]
    final = store.get_step(run_id, "s")
    assert final is not None
    assert (final.attempts, final.error) == (2, None)


def test_a_failed_step_can_be_resolved_as_done(store: StateStore, run_id: str) -> None:
    _apply(store, run_id, "failed")
    store.resolve_step(run_id, "s", "done", "carol")
    step = store.get_step(run_id, "s")
    assert step is not None
    assert (step.status, step.resolution_note) == ("succeeded", None)


@pytest.mark.parametrize("moves", [[], ["pending"], ["pending", "sent"], ["skipped"]])
def test_only_in_doubt_or_failed_steps_can_be_resolved(
    store: StateStore, run_id: str, moves: list[str]
) -> None:
    for move in moves:
        _apply(store, run_id, move)
    with pytest.raises(BugError, match="can be resolved"):
        store.resolve_step(run_id, "s", "done", "alice")


def test_resolve_needs_a_who_and_a_valid_decision(store: StateStore, run_id: str) -> None:
    for move in ["pending", "sent", "in_doubt"]:
        _apply(store, run_id, move)
    with pytest.raises(ConfigError, match="who"):
        store.resolve_step(run_id, "s", "done", "  ")
    with pytest.raises(BugError, match=r"valid values are \['done', 'retry'\]"):
        store.resolve_step(run_id, "s", "redo", "alice")  # type: ignore[arg-type]
    step = store.get_step(run_id, "s")
    assert step is not None
    assert step.status == "in_doubt"


def test_steps_of_an_unknown_run_are_bugs(store: StateStore) -> None:
    with pytest.raises(BugError, match="does not exist"):
        store.step_pending("no-such-run", "s", REQUEST)


def test_get_steps_in_the_order_first_written(store: StateStore, run_id: str) -> None:
    store.step_pending(run_id, "bill", REQUEST)
    store.step_skipped(run_id, "form", "if was false")
    store.step_pending(run_id, "bill", REQUEST)
    store.step_failed(run_id, "note", {"message": "template error"})

    steps = store.get_steps(run_id)
    assert [(s.step_id, s.status) for s in steps] == [
        ("bill", "pending"),
        ("form", "skipped"),
        ("note", "failed"),
    ]
    assert steps[1].error == "if was false"
    assert steps[2].error == {"message": "template error"}
    assert store.get_steps("no-such-run") == []
    assert store.get_step(run_id, "missing") is None
    assert len(store.step_history(run_id)) == 4


def test_steps_of_two_runs_are_separate(store: StateStore, run_id: str) -> None:
    other, _ = store.start_run(P, "onboard", "evt-2")
    store.step_pending(run_id, "bill", REQUEST)
    store.step_pending(other, "bill", {"other": True})
    store.step_sent(run_id, "bill")
    other_step = store.get_step(other, "bill")
    assert other_step is not None
    assert (other_step.status, other_step.request) == ("pending", {"other": True})


def test_step_sent_is_durable_once_it_returns(
    store: StateStore, run_id: str, open_store_again: Callable[[], StateStore]
) -> None:
    store.step_pending(run_id, "bill", REQUEST)
    store.step_sent(run_id, "bill")
    # Another handle (another connection) sees it at once: it was committed, not buffered.
    step = open_store_again().get_step(run_id, "bill")
    assert step is not None
    assert step.status == "sent"
