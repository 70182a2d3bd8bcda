"""The attention table (issue 33): one row per thing that needs a person, listed once per
``(practice, kind, dedupe)``, moved until closed and never after; and the migration that
moves the pseudo-runs of earlier versions into it."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from practiceflow.state import SQLiteStore, StateStore
from practiceflow.state._schema import LATEST_VERSION

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def test_an_entry_is_listed_once_and_moves_until_closed(store: StateStore) -> None:
    window = (START, START + timedelta(minutes=7))
    first, created = store.add_attention(
        "gap", "p", "eform_submitted", "w1", "down", window=window, status="checking"
    )
    assert created
    assert (first.kind, first.trigger, first.status) == ("gap", "eform_submitted", "checking")
    assert (first.window_start, first.window_end) == window
    again, created = store.add_attention("gap", "p", "eform_submitted", "w1", "other text")
    assert not created
    assert again.attention_id == first.attention_id
    assert again.reason == "down"  # the first listing stands

    assert store.update_attention(first.attention_id, "open", reason="held", evidence={"n": 1})
    moved = store.get_attention(first.attention_id)
    assert moved is not None
    assert (moved.status, moved.reason, moved.evidence) == ("open", "held", {"n": 1})
    assert moved.settled_by is None

    assert store.update_attention(first.attention_id, "closed", settled_by="ann", note="seen")
    closed = store.get_attention(first.attention_id)
    assert closed is not None
    assert (closed.status, closed.settled_by, closed.note) == ("closed", "ann", "seen")
    assert closed.settled_at is not None
    # Closed stays closed, as it was settled.
    assert not store.update_attention(first.attention_id, "open", reason="again")
    assert not store.update_attention("0" * 32, "closed")


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, {"a", "b", "c"}),
        ({"practice": "p"}, {"a", "b"}),
        ({"kind": "unrecognised"}, {"b"}),
        ({"trigger": "t2"}, {"c"}),
        ({"statuses": ("open",)}, {"a", "b"}),
        ({"statuses": ("checking", "closed")}, {"c"}),
    ],
)
def test_entries_are_listed_by_what_is_given(
    store: StateStore, filters: dict[str, object], expected: set[str]
) -> None:
    store.add_attention("gap", "p", "t1", "a", "r")
    store.add_attention("unrecognised", "p", "t1", "b", "r")
    store.add_attention("gap", "q", "t2", "c", "r", status="checking")
    found = store.list_attention(**filters)  # type: ignore[arg-type]
    assert {entry.dedupe for entry in found} == expected
    counts = store.count_attention()
    assert counts[("p", "gap", "open")] == 1
    assert counts[("q", "gap", "checking")] == 1


def test_a_version_4_database_moves_its_attention_runs_into_the_table(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as store:
        gap, _ = store.start_run("p", "gap: eform_submitted", "gap:eform_submitted:w")
        store.step_pending(gap, "gap", {"use": "downtime"})
        store.step_sent(gap, "gap")
        store.step_in_doubt(gap, "gap", {"message": "down"})
        store.set_run_status(gap, "in_doubt", {"step": "gap", "reason": "down"})
        doubt, _ = store.start_run("p", "subscription in doubt: t", "subscription-doubt:t#1")
        store.set_run_status(doubt, "succeeded")
        held, _ = store.start_run("p", "unrecognised:t", "ev-1")
        store.set_run_status(held, "in_doubt", {"reason": "no key", "deliveryId": "d1"})
        recipe_run, _ = store.start_run("p", "lead", "ev-1")
    with sqlite3.connect(path) as raw:  # what practiceflow with schema 4 left behind
        raw.execute("DROP TABLE run_retries")
        raw.execute("DROP TABLE attention")
        raw.execute("DROP TABLE pending_writes")
        raw.execute("DROP TABLE heartbeats")
        raw.execute("ALTER TABLE subscription_health DROP COLUMN test_asked_at")
        raw.execute("ALTER TABLE subscription_health DROP COLUMN test_event_id")
        raw.execute("DROP TABLE run_leases")
        raw.execute("DROP TABLE versions")
        raw.execute("DROP INDEX runs_by_version")
        raw.execute("ALTER TABLE runs DROP COLUMN version")
        raw.execute("UPDATE schema_version SET version = 4")
    with SQLiteStore(path) as store:
        assert store.schema_version == LATEST_VERSION
        assert [run.run_id for run in store.list_runs()] == [recipe_run]
        assert store.get_steps(gap) == []
        entries = {entry.attention_id: entry for entry in store.list_attention()}
        assert set(entries) == {gap, doubt, held}  # the ids people noted still work
        moved = [
            (e.kind, e.trigger, e.status) for e in map(entries.__getitem__, (gap, doubt, held))
        ]
        assert moved == [
            ("gap", "eform_submitted", "open"),
            ("subscription_in_doubt", "t", "closed"),
            ("unrecognised", "t", "open"),
        ]
        assert "gap:eform_submitted:w" in entries[gap].reason
        assert entries[held].evidence == {"reason": "no key", "deliveryId": "d1"}
        assert entries[doubt].settled_by == "practiceflow"
