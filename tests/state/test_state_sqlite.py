"""SQLite store specifics: WAL, durability pragmas, schema versions, file permissions, URLs."""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from practiceflow.errors import ConfigError, StoreError
from practiceflow.state import SQLiteStore, StepChange, open_store, sqlite_path
from practiceflow.state._schema import LATEST_VERSION


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "state.db"


def test_opening_creates_the_file_and_its_folder_in_wal_mode(db_path: Path) -> None:
    with SQLiteStore(db_path) as store:
        store.record_request("p")
    assert db_path.exists()
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_every_connection_waits_for_writers_and_syncs_normally(db_path: Path) -> None:
    with SQLiteStore(db_path, busy_timeout_ms=1234) as store:
        connection = store._conn()
        assert connection.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert connection.execute("PRAGMA busy_timeout").fetchone()[0] == 1234
        assert connection.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def _synced_commits(store: SQLiteStore, action: Callable[[], object]) -> list[str]:
    """The synchronous level in force at each commit ``action`` makes (COMMIT, or a
    statement run alone, which is its own transaction)."""
    connection = store._conn()
    levels: list[str] = []
    # The level is switched only when a commit needs another one: start from the actual.
    current = [{1: "NORMAL", 2: "FULL"}[connection_level(store)]]

    def trace(statement: str) -> None:
        if statement.startswith("PRAGMA synchronous = "):
            current[0] = statement.rsplit(" ", 1)[1]
        elif statement == "COMMIT":
            levels.append(current[0])
        elif statement.startswith("INSERT") and not connection.in_transaction:
            levels.append(current[0])  # a statement alone is its own transaction

    connection.set_trace_callback(trace)
    try:
        action()
    finally:
        connection.set_trace_callback(None)
    return levels


def test_only_commits_whose_loss_would_repeat_or_lose_something_are_fsynced(
    db_path: Path,
) -> None:
    with SQLiteStore(db_path) as store:
        run_id, _ = store.start_run("p", "r", "e1")
        assert _synced_commits(store, lambda: store.step_pending(run_id, "s", {})) == ["NORMAL"]
        assert _synced_commits(store, lambda: store.step_sent(run_id, "s")) == ["FULL"]
        assert _synced_commits(store, lambda: store.step_in_doubt(run_id, "s", {})) == ["NORMAL"]
        resolve = lambda: store.resolve_step(run_id, "s", "done", "ops")  # noqa: E731
        assert _synced_commits(store, resolve) == ["FULL"]
        event = lambda: store.record_event("p", "webhook", "k", "e2", {})  # noqa: E731
        assert _synced_commits(store, event) == ["FULL"]
        assert _synced_commits(store, lambda: store.record_request("p")) == ["NORMAL"]


def connection_level(store: SQLiteStore) -> int:
    return int(store._conn().execute("PRAGMA synchronous").fetchone()[0])


def test_a_writes_pending_and_sent_are_one_fsynced_commit_a_reads_one_plain_commit(
    db_path: Path,
) -> None:
    with SQLiteStore(db_path) as store:
        start = lambda: store.start_run("p", "r", "e1", origin={"payload": {}})  # noqa: E731
        assert _synced_commits(store, start) == ["NORMAL"]  # the run with its origin
        run_id, _ = store.start_run("p", "r", "e1")
        write = (StepChange.to_pending({"json": 1}), StepChange.to_sent())
        assert _synced_commits(store, lambda: store.change_step(run_id, "w", *write)) == ["FULL"]
        read = (
            StepChange.to_pending({}),
            StepChange.to_sent(durable=False),
            StepChange.to_succeeded({}),
        )
        assert _synced_commits(store, lambda: store.change_step(run_id, "r", *read)) == ["NORMAL"]


def test_the_file_is_private_to_its_owner(db_path: Path) -> None:
    with SQLiteStore(db_path):
        pass
    assert stat.S_IMODE(db_path.stat().st_mode) == 0o600


def test_schema_version_is_recorded_and_reopening_does_not_migrate_again(db_path: Path) -> None:
    with SQLiteStore(db_path) as store:
        assert store.schema_version == LATEST_VERSION
        store.set_cursor("p", "t", "v")
    with SQLiteStore(db_path) as store:
        assert store.schema_version == LATEST_VERSION
        assert store.get_cursor("p", "t") == "v"
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("SELECT count(*) FROM schema_version").fetchone()[0] == 1


def test_opening_a_current_database_takes_no_write_lock(db_path: Path) -> None:
    with SQLiteStore(db_path) as store:
        store.set_cursor("p", "t", "v")
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process's write transaction, left open
    try:
        # busy_timeout 0: a store that took the write lock to check its schema would fail.
        with SQLiteStore(db_path, busy_timeout_ms=0) as store:
            assert store.get_cursor("p", "t") == "v"
            with pytest.raises(StoreError, match="locked by another process"):
                store.set_cursor("p", "t", "w")
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_version_1_database_upgrade_waits_for_the_write_lock(db_path: Path) -> None:
    with SQLiteStore(db_path):
        pass
    with sqlite3.connect(db_path) as raw:
        raw.execute("DROP TABLE subscription_health")
        raw.execute("DROP TABLE run_retries")
        raw.execute("DROP TABLE heartbeats")
        raw.execute("DROP TABLE run_leases")
        raw.execute("DROP TABLE versions")
        raw.execute("DROP INDEX runs_by_version")
        raw.execute("ALTER TABLE runs DROP COLUMN version")
        raw.execute("ALTER TABLE runs DROP COLUMN origin")
        raw.execute("ALTER TABLE runs DROP COLUMN starts")
        raw.execute("DROP TABLE pending_writes")
        raw.execute("DROP TABLE attention")
        raw.execute("UPDATE schema_version SET version = 1")
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="locked by another process"):
            SQLiteStore(db_path, busy_timeout_ms=0)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    with SQLiteStore(db_path) as store:
        assert store.schema_version == LATEST_VERSION


def test_a_version_1_database_is_upgraded_in_place_keeping_its_data(db_path: Path) -> None:
    with SQLiteStore(db_path) as store:
        store.set_cursor("p", "t", "v")
    with sqlite3.connect(db_path) as raw:  # what practiceflow with schema 1 left behind
        raw.execute("DROP TABLE subscription_health")
        raw.execute("DROP TABLE run_retries")
        raw.execute("DROP TABLE heartbeats")
        raw.execute("DROP TABLE run_leases")
        raw.execute("DROP TABLE versions")
        raw.execute("DROP INDEX runs_by_version")
        raw.execute("ALTER TABLE runs DROP COLUMN version")
        raw.execute("ALTER TABLE runs DROP COLUMN origin")
        raw.execute("ALTER TABLE runs DROP COLUMN starts")
        raw.execute("DROP TABLE pending_writes")
        raw.execute("DROP TABLE attention")
        raw.execute("UPDATE schema_version SET version = 1")
    with SQLiteStore(db_path) as store:
        assert store.schema_version == LATEST_VERSION == 10
        assert store.get_cursor("p", "t") == "v"
        assert store.count_resubscribe("p", "t") == 1
        assert store.subscription_health("p", "t").resubscribes == 1


def test_a_version_3_database_gains_the_runs_starts_keeping_its_runs(db_path: Path) -> None:
    with SQLiteStore(db_path) as store:
        run_id, _ = store.start_run("p", "r", "e")
    with sqlite3.connect(db_path) as raw:  # what practiceflow with schema 3 left behind
        raw.execute("DROP TABLE run_retries")
        raw.execute("DROP TABLE heartbeats")
        raw.execute("ALTER TABLE subscription_health DROP COLUMN test_asked_at")
        raw.execute("ALTER TABLE subscription_health DROP COLUMN test_event_id")
        raw.execute("DROP TABLE run_leases")
        raw.execute("DROP TABLE versions")
        raw.execute("DROP INDEX runs_by_version")
        raw.execute("ALTER TABLE runs DROP COLUMN version")
        raw.execute("ALTER TABLE runs DROP COLUMN starts")
        raw.execute("DROP TABLE pending_writes")
        raw.execute("DROP TABLE attention")
        raw.execute("UPDATE schema_version SET version = 3")
    with SQLiteStore(db_path) as store:
        assert store.schema_version == LATEST_VERSION
        run = store.get_run(run_id)
        assert run is not None
        assert (run.status, run.starts) == ("pending", 0)
        assert store.count_start(run_id) == 1


def test_a_database_of_a_newer_schema_is_refused_untouched(db_path: Path) -> None:
    with SQLiteStore(db_path) as store:
        store.set_cursor("p", "t", "v")
    with sqlite3.connect(db_path) as raw:
        raw.execute("UPDATE schema_version SET version = ?", (LATEST_VERSION + 5,))

    with pytest.raises(ConfigError) as caught:
        SQLiteStore(db_path)

    text = str(caught.value)
    assert f"schema version {LATEST_VERSION + 5}" in text
    assert str(LATEST_VERSION) in text
    assert "upgrade practiceflow" in text
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("SELECT version FROM schema_version").fetchone()[0] == (
            LATEST_VERSION + 5
        )
        assert raw.execute("SELECT value FROM cursors").fetchone()[0] == "v"


def test_store_repr_names_the_file(db_path: Path) -> None:
    with SQLiteStore(db_path) as store:
        assert repr(store) == f"SQLiteStore({str(db_path)!r})"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param("sqlite:///var/lib/pf/state.db", Path("/var/lib/pf/state.db"), id="url"),
        pytest.param("state/pf.db", Path("state/pf.db"), id="relative-path"),
        pytest.param("/abs/pf.db", Path("/abs/pf.db"), id="absolute-path"),
        pytest.param(r"C:\state\pf.db", Path(r"C:\state\pf.db"), id="windows-path"),
        pytest.param("SQLite:///x.db", Path("/x.db"), id="scheme-any-case"),
    ],
)
def test_sqlite_urls_and_plain_paths(url: str, expected: Path) -> None:
    # Resolved: relative to the working directory, symlinks followed (one file, one name).
    assert sqlite_path(url) == expected.resolve()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite://:memory:", ":memory:", "", "file:x.db"])
def test_urls_naming_no_file_are_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="expected a file"):
        sqlite_path(url)


def test_a_foreign_scheme_is_not_taken_for_a_file_name() -> None:
    with pytest.raises(ConfigError, match="got scheme 'lazy'; expected 'sqlite'"):
        sqlite_path("lazy:///tmp/x.db")


def test_open_store_with_a_plain_path(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "plain.db")) as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / "plain.db"
