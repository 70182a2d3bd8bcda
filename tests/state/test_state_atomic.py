"""Store-agnostic: ``atomic()`` makes the calls inside one transaction, all or none, and a
nested block joins the outer one. SQLite-specific: one COMMIT, fsynced when asked."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from practiceflow.errors import BugError
from practiceflow.state import NewEvent, SQLiteStore, StateStore, StepChange

P = "practice-a"


class Boom(Exception):
    """An error raised inside a block on purpose."""


def test_calls_inside_commit_together_and_read_their_own_writes(
    store: StateStore, open_store_again: Callable[[], StateStore]
) -> None:
    other = open_store_again()
    store.record_event(P, "webhook", "k", "e1", {"n": 1})
    with store.atomic():
        run_id, created = store.start_run(P, "onboard", "e1")
        store.change_step(
            run_id, "read", StepChange.to_pending({}), StepChange.to_sent(durable=False)
        )
        store.step_succeeded(run_id, "read", {"ok": True})
        store.set_run_status(run_id, "succeeded")
        store.mark_event_handled(P, "webhook", "e1")
        # Inside: this handle reads its own writes; another sees none of them yet.
        assert created
        step = store.get_step(run_id, "read")
        assert step is not None
        assert step.status == "succeeded"
        assert other.get_run(run_id) is None
        assert [event.event_id for event in other.pending_events(P)] == ["e1"]
    run = other.get_run(run_id)
    assert run is not None
    assert run.status == "succeeded"
    assert other.pending_events(P) == []
    assert [t.to_status for t in other.step_history(run_id)] == ["pending", "sent", "succeeded"]


def test_events_recorded_inside_join_the_block(
    store: StateStore, open_store_again: Callable[[], StateStore]
) -> None:
    other = open_store_again()
    with store.atomic(durable=True):
        assert store.record_events([NewEvent(P, "webhook", "k", "e1", {})]) == [True]
        assert store.record_event(P, "webhook", "k", "e1", {}) is False  # seen in the block
        assert other.pending_events(P) == []
    assert [event.event_id for event in other.pending_events(P)] == ["e1"]


def _skip_then_raise(store: StateStore, run_id: str) -> None:
    with store.atomic():
        store.step_skipped(run_id, "a", {"reason": "if was false"})
        store.set_run_status(run_id, "running")
        raise Boom


def test_an_error_inside_writes_nothing(store: StateStore) -> None:
    run_id, _ = store.start_run(P, "onboard", "e1")
    with pytest.raises(Boom):
        _skip_then_raise(store, run_id)
    assert store.get_steps(run_id) == []
    run = store.get_run(run_id)
    assert run is not None
    assert run.status == "pending"


def _skip_then_illegal(store: StateStore, run_id: str) -> None:
    with store.atomic():
        store.step_skipped(run_id, "a")
        store.step_succeeded(run_id, "b", {})  # illegal: a step is sent before it succeeds


def test_a_store_error_inside_writes_nothing_and_the_store_stays_usable(store: StateStore) -> None:
    run_id, _ = store.start_run(P, "onboard", "e1")
    with pytest.raises(BugError, match="succeeded"):
        _skip_then_illegal(store, run_id)
    assert store.get_steps(run_id) == []
    store.step_skipped(run_id, "a")
    assert [step.step_id for step in store.get_steps(run_id)] == ["a"]


def _nested_then_raise(store: StateStore, run_id: str) -> None:
    with store.atomic():
        with store.atomic():
            store.step_skipped(run_id, "inner")
        store.step_skipped(run_id, "outer")
        raise Boom


def test_a_nested_block_joins_the_outer_one(store: StateStore) -> None:
    run_id, _ = store.start_run(P, "onboard", "e1")
    with pytest.raises(Boom):
        _nested_then_raise(store, run_id)
    assert store.get_steps(run_id) == []


# --- SQLite: commits and their synchronous level ---------------------------------------------


def _commits(store: SQLiteStore, action: Callable[[], object]) -> list[int]:
    """The synchronous level (1 NORMAL, 2 FULL) in force at each COMMIT of ``action``."""
    connection = store._conn()
    levels: list[int] = []

    def trace(statement: str) -> None:
        if statement == "COMMIT":
            levels.append(int(probe.execute("PRAGMA synchronous").fetchone()[0]))

    probe = connection
    connection.set_trace_callback(trace)
    try:
        action()
    finally:
        connection.set_trace_callback(None)
    return levels


def _finish(store: SQLiteStore, run_id: str, *, durable: bool = False) -> None:
    with store.atomic(durable=durable):
        store.change_step(
            run_id, "read", StepChange.to_pending({}), StepChange.to_sent(durable=False)
        )
        store.step_succeeded(run_id, "read", {})
        store.set_run_status(run_id, "succeeded")
        store.mark_event_handled(P, "webhook", "e1")


def test_sqlite_makes_one_commit_of_a_block(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        store.record_event(P, "webhook", "k", "e1", {})
        run_id, _ = store.start_run(P, "onboard", "e1")
        assert _commits(store, lambda: _finish(store, run_id)) == [1]
        again, _ = store.start_run(P, "onboard", "e2")
        assert _commits(store, lambda: _finish(store, again, durable=True)) == [2]


def _durable_inside_plain(store: SQLiteStore, run_id: str) -> None:
    with store.atomic():
        store.step_skipped(run_id, "a")
        store.change_step(run_id, "w", StepChange.to_pending({}), StepChange.to_sent())


def test_sqlite_refuses_a_durable_call_in_a_block_opened_without_it(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        run_id, _ = store.start_run(P, "onboard", "e1")
        with pytest.raises(BugError, match="durable"):
            _durable_inside_plain(store, run_id)
        assert store.get_steps(run_id) == []
        with pytest.raises(BugError, match="durable"), store.atomic(), store.atomic(durable=True):
            pass  # pragma: no cover - refused on entry
        with store.atomic(durable=True):
            store.change_step(run_id, "w", StepChange.to_pending({}), StepChange.to_sent())
        assert [step.status for step in store.get_steps(run_id)] == ["sent"]


def test_sqlite_block_holds_the_write_lock_until_it_ends(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        run_id, _ = store.start_run(P, "onboard", "e1")
        with store.atomic():
            store.step_skipped(run_id, "a")
            other = sqlite3.connect(tmp_path / "state.db", timeout=0.05)
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
            other.close()
        assert [step.step_id for step in store.get_steps(run_id)] == ["a"]
