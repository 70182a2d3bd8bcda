"""The heartbeats table (issues 33 and 36): who listens, since when, last beat, per process
kind and practice; and migration 9, which moves the cursor rows that held these facts
(``serve#alive``, ``fleet#alive``, ``<trigger>#test-asked``) into it and into the
subscription's health row, so that an upgraded store keeps its downtime knowledge."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from practiceflow.errors import BugError
from practiceflow.service.compose import note_downtime
from practiceflow.service.heartbeat import Heartbeat, holder, last_alive
from practiceflow.state import SQLiteStore, StateStore
from practiceflow.state._schema import LATEST_VERSION
from practiceflow.triggers import load_definition, tests_asked

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def _classify(
    store: SQLiteStore, trigger: str, event_id: str, body: object
) -> tuple[bool, str | None]:
    """What the receiver asks of a mapped delivery, with the subscription's health."""
    health = store.subscription_health("p", trigger)
    return tests_asked.classify(health, store.now(), event_id, body, True)


def test_a_beat_keeps_since_until_a_new_start_and_a_stop_is_marked(store: StateStore) -> None:
    assert store.get_heartbeat("serve", "p") is None
    store.beat("serve", "p", "h:1", at=START, start=True)
    store.beat("serve", "p", "h:1", at=START + timedelta(seconds=5))
    row = store.get_heartbeat("serve", "p")
    assert row is not None
    assert (row.holder, row.since, row.beat_at, row.stopped_at) == (
        "h:1", START, START + timedelta(seconds=5), None,
    )  # fmt: skip
    store.beat("serve", "p", "h:1", at=START + timedelta(seconds=7), stop=True)
    stopped = store.get_heartbeat("serve", "p")
    assert stopped is not None
    assert stopped.stopped_at == START + timedelta(seconds=7)
    store.beat("serve", "p", "h:2", at=START + timedelta(minutes=1), start=True)
    again = store.get_heartbeat("serve", "p")
    assert again is not None
    assert (again.holder, again.since, again.stopped_at) == (
        "h:2",
        START + timedelta(minutes=1),
        None,
    )
    # One row per kind and practice: the fleet's and another practice's stand apart.
    store.beat("fleet", "*", "h:3", at=START, start=True)
    store.beat("serve", "q", "h:4", at=START, start=True)
    assert [(r.kind, r.practice) for r in store.list_heartbeats()] == [
        ("fleet", "*"), ("serve", "p"), ("serve", "q"),
    ]  # fmt: skip
    with pytest.raises(BugError, match="heartbeat kind"):
        store.beat("worker", "p", "h:5")  # type: ignore[arg-type]


def test_the_heartbeat_writer_names_this_process_and_stops_cleanly(store: StateStore) -> None:
    beat = Heartbeat(store, "p", every=3600).start(START)
    started = store.get_heartbeat("serve", "p")
    assert started is not None
    assert (started.holder, started.since, started.stopped_at) == (holder(), START, None)
    beat.stop()
    stopped = store.get_heartbeat("serve", "p")
    assert stopped is not None
    assert stopped.stopped_at is not None
    assert last_alive(store, "p") == stopped.beat_at == stopped.stopped_at


def _as_version_8(path: Path) -> None:
    """Make a latest database look as practiceflow with schema 8 left it."""
    with sqlite3.connect(path) as raw:
        raw.execute("DROP TABLE run_retries")
        raw.execute("DROP TABLE heartbeats")
        raw.execute("ALTER TABLE subscription_health DROP COLUMN test_asked_at")
        raw.execute("ALTER TABLE subscription_health DROP COLUMN test_event_id")
        raw.execute("UPDATE schema_version SET version = 8")


def test_a_version_8_store_keeps_its_downtime_and_awaited_test_after_migrating(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    down = START.isoformat()
    with SQLiteStore(path, clock=lambda: START) as store:
        # The rows practiceflow 8 wrote: serve's and the fleet's signs of life, an awaited
        # test delivery with the event id its answer gave, one that arrived, a real cursor.
        store.set_cursor("p", "serve#alive", down)
        store.set_cursor("fleet#", "fleet#alive", down)
        store.set_cursor("p", "eform_submitted#test-asked", down, {"e-42"})
        store.set_cursor("p", "proposal_accepted#test-asked", "done")
        store.set_cursor("p", "new_client", "2025-02-01T00:00:00Z")
        store.record_test_delivery("p", "eform_submitted", START - timedelta(days=1))
    _as_version_8(path)

    later = START + timedelta(minutes=20)
    with SQLiteStore(path, clock=lambda: later) as store:
        assert store.schema_version == LATEST_VERSION
        assert last_alive(store, "p") == START
        assert last_alive(store, "*", "fleet") == START
        health = store.subscription_health("p", "eform_submitted")
        assert (health.test_asked_at, health.test_event_id) == (START, "e-42")
        assert health.last_test_delivery_at == START - timedelta(days=1)  # kept
        assert store.subscription_health("p", "proposal_accepted").test_asked_at is None
        # The cursor rows are gone; a trigger's real cursor stays.
        for key in ("serve#alive", "eform_submitted#test-asked", "proposal_accepted#test-asked"):
            assert store.get_cursor("p", key) is None
        assert store.get_cursor("fleet#", "fleet#alive") is None
        assert store.get_cursor("p", "new_client") == "2025-02-01T00:00:00Z"
        # The downtime that began before the upgrade is still listed at the next start.
        eform = load_definition("eform_submitted")
        (entry_id,) = note_downtime(store, "p", [("eform_submitted", eform, False)])
        entry = store.get_attention(entry_id)
        assert entry is not None
        assert (entry.window_start, entry.window_end) == (START, later)
        # The awaited test is still told apart by the id its answer gave.
        assert _classify(store, "eform_submitted", "e-42", {}) == (True, None)
