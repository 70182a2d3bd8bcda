"""The one SQL store on its two databases: what each dialect translates, and the contract
that the same calls leave the same records on SQLite and on PostgreSQL.

The store-agnostic suite of this folder proves each behaviour on each backend; these tests
prove the dialects themselves (SQL text, time codec) and compare the backends directly.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pgserver import shared_server
from practiceflow.errors import BugError, ConfigError
from practiceflow.state import NewEvent, PostgresStore, SQLiteStore, StateStore, StepChange
from practiceflow.state._dialect import Dialect
from practiceflow.state._postgres import POSTGRES
from practiceflow.state._sqlite import SQLITE

if TYPE_CHECKING:
    from practiceflow.testing import FakeClock

P = "practice-a"
DIALECTS = [pytest.param(SQLITE, id="sqlite"), pytest.param(POSTGRES, id="postgresql")]


def test_statements_get_each_databases_prefix_and_placeholders() -> None:
    statement = "SELECT run_id FROM {p}runs WHERE practice = ? AND recipe = ?"
    assert SQLITE.sql(statement) == "SELECT run_id FROM runs WHERE practice = ? AND recipe = ?"
    assert POSTGRES.sql(statement) == (
        "SELECT run_id FROM pf_runs WHERE practice = %s AND recipe = %s"
    )


def test_schema_statements_get_each_databases_column_types() -> None:
    statement = "CREATE TABLE {p}t (seq {serial}, at {time}, body {json})"
    assert SQLITE.sql(statement) == (
        "CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT, body TEXT)"
    )
    assert POSTGRES.sql(statement) == (
        "CREATE TABLE pf_t (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " at timestamptz, body json)"
    )


def test_a_json_text_field_is_read_the_way_each_database_can() -> None:
    assert SQLITE.json_text.format(column="payload", key="source") == (
        "json_extract(payload, '$.source')"
    )
    assert POSTGRES.json_text.format(column="payload", key="source") == "payload ->> 'source'"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_naive_time_is_refused_naming_the_field(dialect: Dialect) -> None:
    with pytest.raises(ConfigError, match=r"received_at: got naive datetime 2025-03-01"):
        dialect.dump_time(datetime(2025, 3, 1, 9, 0), "received_at")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_time_in_any_zone_is_read_back_as_the_same_instant_in_utc(dialect: Dialect) -> None:
    paris = datetime(2025, 3, 1, 10, 0, 0, 123456, tzinfo=timezone(timedelta(hours=1)))
    read = dialect.load_time(dialect.dump_time(paris, "at"))
    assert read == paris
    assert read.tzinfo == UTC
    assert read.hour == 9
    assert dialect.maybe_time(None) is None


def test_sqlite_times_sort_as_text_in_time_order() -> None:
    zones = [timezone(timedelta(hours=h)) for h in (-8, 0, 5, 13)]
    start = datetime(2025, 3, 1, 23, 59, 59, tzinfo=UTC)
    instants = [start + timedelta(microseconds=7 * i) for i in range(12)]
    texts = [SQLITE.dump_time(at.astimezone(zones[i % 4]), "at") for i, at in enumerate(instants)]
    assert sorted(texts) == texts
    assert len(set(map(len, texts))) == 1


# --- the same calls on both backends ---------------------------------------------------------


@pytest.fixture
def stores(tmp_path: Path, clock: FakeClock) -> Iterator[list[tuple[StateStore, FakeClock]]]:
    """A fresh SQLite store and a fresh PostgreSQL store, each on a clock of its own."""
    sqlite_clock, postgres_clock = clock, type(clock)()  # both start at the same instant
    url = shared_server().new_schema(prefix="dialects")
    pairs: list[tuple[StateStore, FakeClock]] = [
        (SQLiteStore(tmp_path / "state.db", clock=sqlite_clock), sqlite_clock),
        (PostgresStore(url, clock=postgres_clock), postgres_clock),
    ]
    yield pairs
    for store, _ in pairs:
        store.close()


def _event(event_id: str, payload: object, signature: str | None = None) -> NewEvent:
    return NewEvent(P, "t", "job.created", event_id, payload, signature)


def _scenario(store: StateStore, clock: FakeClock) -> list[Any]:
    """Every kind of call, in an order a runner and an operator make them; what it read."""
    seen: list[Any] = []
    events = [
        _event("evt-1", {"source": "webhook", "name": "Zoë", "n": [1, 2.5, None]}),
        _event("evt-1", {"source": "webhook"}),
        _event("evt-2", {"source": "poll"}, signature="sig-2"),
        _event("evt-3", {"source": "poll"}, signature="sig-2"),
    ]
    seen += [store.record_events(events), store.seen_event(P, "t", "evt-9", "sig-2")]
    seen += [store.seen_event(P, "t", "evt-9"), store.seen_event(P, "t", "evt-2")]
    clock.advance(timedelta(seconds=1))
    store.mark_event_handled(P, "t", "evt-1")
    seen += [store.pending_events(P), store.get_event(P, "t", "evt-1")]
    seen += [store.subscription_health(P, "t")]
    store.set_cursor(P, "t", "2025-03-01T09:00:00Z", ["a", "b"])
    store.set_cursor(P, "t", "2025-03-01T09:00:00Z", ["c"])
    seen.append(store.get_cursor_state(P, "t"))
    store.set_cursor(P, "t", "2025-03-01T10:00:00Z", ["d"])
    seen.append(store.get_cursor_state(P, "t"))
    seen.append(
        store.save_subscription(P, "t", None, "job.created", "https://h/x", "s", "tok", "pending")
    )
    store.record_test_delivery(P, "t", clock.start + timedelta(hours=1))
    store.record_test_delivery(P, "t", clock.start)
    seen += [store.count_resubscribe(P, "t"), store.count_resubscribe(P, "t")]
    seen += [store.subscription_health(P, "t"), store.find_subscription_by_path("tok")]
    seen += [store.list_subscriptions(), store.list_subscriptions("nobody")]
    origin = {"payload": {"id": 1, "name": "Zoë"}}
    seen.append(store.start_run(P, "onboard", "evt-1", origin=origin, run_id="r1"))
    seen.append(store.start_run(P, "onboard", "evt-1", run_id="r2"))
    store.set_run_status("r1", "running")
    with store.atomic(durable=True):
        write = (StepChange.to_pending({"json": {"a": 1}}), StepChange.to_sent())
        store.change_step("r1", "w", *write)
    clock.advance(timedelta(seconds=2))
    store.step_in_doubt("r1", "w", {"reason": "timeout"})
    store.resolve_step("r1", "w", "done", "ops", "checked by phone", output={"key": "b-1"})
    store.set_run_status("r1", "succeeded")
    seen += [store.get_run("r1"), store.get_steps("r1"), store.step_history("r1")]
    seen += [store.step_history("r1", "w"), store.list_runs(practice=P, since=clock.start)]
    seen += [store.list_runs(status="failed"), store.get_step("r1", "w")]
    store.record_requests(P, [clock.start, clock.start + timedelta(seconds=30)])
    seen.append(store.request_counts(P, clock.start + timedelta(seconds=1)))
    clock.advance(timedelta(days=8))
    seen += [store.purge_seen(), store.purge_requests(), store.delete_subscription(P, "t")]
    seen += [store.pending_events(P), store.request_counts(P, clock.start)]
    return seen


def test_the_same_calls_leave_the_same_records_on_sqlite_and_postgresql(
    stores: list[tuple[StateStore, FakeClock]],
) -> None:
    (sqlite, sqlite_clock), (postgres, postgres_clock) = stores
    on_sqlite = _scenario(sqlite, sqlite_clock)
    on_postgres = _scenario(postgres, postgres_clock)
    for index, (left, right) in enumerate(zip(on_sqlite, on_postgres, strict=True)):
        assert left == right, f"read {index} differs"
    # Spot checks that the scenario reads what it should, so that equal means right.
    assert on_sqlite[0] == [True, False, True, False]
    assert on_sqlite[1:4] == [True, False, True]
    assert [event.event_id for event in on_sqlite[4]] == ["evt-2"]
    assert on_sqlite[5].payload["name"] == "Zoë"
    assert on_sqlite[7].boundary_keys == frozenset("abc")
    assert on_sqlite[8].boundary_keys == frozenset("d")
    assert on_sqlite[10:12] == [1, 2]
    health = on_sqlite[12]
    assert health.resubscribes == 2
    assert health.last_test_delivery_at == sqlite_clock.start + timedelta(hours=1)
    assert health.last_delivery_at == sqlite_clock.start
    assert on_sqlite[16:18] == [("r1", True), ("r1", False)]
    assert on_sqlite[18].origin == {"payload": {"id": 1, "name": "Zoë"}}


def test_a_unique_key_clash_is_the_same_bug_on_both_without_the_secret(
    stores: list[tuple[StateStore, FakeClock]],
) -> None:
    for store, _ in stores:
        store.save_subscription(P, "a", "sub-1", "e", "https://h/a", "secret-a", "tok", "active")
        with pytest.raises(BugError, match="clashes with another subscription") as caught:
            store.save_subscription(P, "b", None, "e", "https://h/b", "secret-b", "tok", "active")
        assert "secret" not in str(caught.value).replace("subscription", "")
        assert store.get_subscription(P, "b") is None


def test_importing_the_state_package_leaves_psycopg_unloaded() -> None:
    code = (
        "import sys, practiceflow.state as s; print('psycopg' in sys.modules);"
        " s.PostgresStore; print('psycopg' in sys.modules)"
    )
    out = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "True"]
