"""PostgreSQL store specifics: schema versions and migration, URLs without secrets, and
replicas (separate processes) racing on one database.

The behaviour every store shares is proven by the store-agnostic suite of this folder,
which runs against PostgreSQL through the ``store`` fixture.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from pgserver import PostgresServer, shared_server
from practiceflow.errors import ConfigError
from practiceflow.state import (
    PostgresStore,
    StateStore,
    describe_url,
    migrate,
    open_store,
    schema_version,
)
from practiceflow.state import _schema as schema


@pytest.fixture(scope="module")
def server() -> PostgresServer:
    return shared_server()


@pytest.fixture
def url(server: PostgresServer) -> str:
    return server.new_schema(prefix="pgspec")


@pytest.fixture
def opened() -> Iterator[list[StateStore]]:
    stores: list[StateStore] = []
    yield stores
    for store in stores:
        store.close()


def _raw(url: str, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(sql.encode(), params)
        return cursor.fetchall() if cursor.description else []


def test_open_store_serves_both_postgres_schemes(url: str, opened: list[StateStore]) -> None:
    for alias in (url, url.replace("postgresql://", "postgres://", 1)):
        store = open_store(alias)
        opened.append(store)
        assert isinstance(store, PostgresStore)


def test_an_empty_database_gets_the_schema_and_reopening_does_not_migrate_again(
    url: str, opened: list[StateStore]
) -> None:
    assert schema_version(url) == 0
    first = PostgresStore(url)
    opened.append(first)
    assert first.schema_version == schema.LATEST_VERSION
    first.set_cursor("p", "t", "v")
    again = PostgresStore(url)
    opened.append(again)
    assert again.get_cursor("p", "t") == "v"
    assert _raw(url, "SELECT count(*) FROM pf_schema_version") == [(1,)]
    assert migrate(url).changed is False


def test_a_database_of_a_newer_schema_is_refused_untouched(url: str) -> None:
    with PostgresStore(url) as store:
        store.set_cursor("p", "t", "v")
    newer = schema.LATEST_VERSION + 5
    _raw(url, "UPDATE pf_schema_version SET version = %s", (newer,))

    for attempt in (lambda: PostgresStore(url), lambda: migrate(url)):
        with pytest.raises(ConfigError) as caught:
            attempt()
        text = str(caught.value)
        assert f"schema version {newer}" in text
        assert "upgrade practiceflow" in text
    assert _raw(url, "SELECT version FROM pf_schema_version") == [(newer,)]
    assert _raw(url, "SELECT value FROM pf_cursors") == [("v",)]


def test_an_older_schema_is_refused_until_db_migrate_upgrades_it(
    url: str, monkeypatch: pytest.MonkeyPatch, opened: list[StateStore]
) -> None:
    with PostgresStore(url) as store:
        store.set_cursor("p", "t", "v")
    upgraded = schema.LATEST_VERSION + 1
    migrations = {**schema.MIGRATIONS, upgraded: ("ALTER TABLE pf_runs ADD COLUMN note text",)}
    monkeypatch.setattr(schema, "MIGRATIONS", migrations)
    monkeypatch.setattr(schema, "LATEST_VERSION", upgraded)

    with pytest.raises(ConfigError, match=r"older than .* run 'practiceflow db migrate"):
        PostgresStore(url)

    done = migrate(url)
    assert (done.before, done.after, done.changed) == (upgraded - 1, upgraded, True)
    store = PostgresStore(url)
    opened.append(store)
    assert store.get_cursor("p", "t") == "v"
    assert _raw(url, "SELECT count(*) FROM information_schema.columns WHERE column_name = 'note'")


def test_migration_6_moves_the_attention_runs_into_their_table(
    url: str, opened: list[StateStore]
) -> None:
    with PostgresStore(url) as store:
        gap, _ = store.start_run("p", "gap: eform_submitted", "gap:eform_submitted:w")
        store.step_pending(gap, "gap", {"use": "downtime"})
        store.set_run_status(gap, "in_doubt", {"reason": "down"})
        kept, _ = store.start_run("p", "lead", "ev-1")
    _raw(url, "DROP TABLE pf_attention")
    _raw(url, "DROP TABLE pf_pending_writes")
    _raw(url, "DROP TABLE pf_run_retries")
    _raw(url, "DROP TABLE pf_heartbeats")
    _raw(url, "ALTER TABLE pf_subscription_health DROP COLUMN test_asked_at")
    _raw(url, "ALTER TABLE pf_subscription_health DROP COLUMN test_event_id")
    _raw(url, "DROP TABLE pf_run_leases")
    _raw(url, "DROP TABLE pf_versions")
    _raw(url, "DROP INDEX pf_runs_by_version")
    _raw(url, "ALTER TABLE pf_runs DROP COLUMN version")
    _raw(url, "UPDATE pf_schema_version SET version = 4")
    assert migrate(url).changed
    store = PostgresStore(url)
    opened.append(store)
    assert [run.run_id for run in store.list_runs()] == [kept]
    (entry,) = store.list_attention()
    assert (entry.attention_id, entry.kind, entry.trigger, entry.status) == (
        gap,
        "gap",
        "eform_submitted",
        "open",
    )
    assert entry.evidence == {"reason": "down"}


def test_replicas_migrating_together_apply_the_schema_once(url: str) -> None:
    results: list[schema.Migration] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def replica() -> None:
        try:
            barrier.wait()
            results.append(migrate(url))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=replica) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(result.changed for result in results) == [False] * 5 + [True]


def test_repr_and_connection_errors_never_show_the_password() -> None:
    url = "postgresql://pf:hunter2@127.0.0.1:1/state?connect_timeout=2"
    assert describe_url(url) == "postgresql://127.0.0.1:1/state"
    with pytest.raises(ConfigError) as caught:
        open_store(url)
    text = str(caught.value)
    assert "postgresql://127.0.0.1:1/state: cannot connect" in text
    assert "hunter2" not in text


def test_store_repr_names_host_and_database_only(url: str, opened: list[StateStore]) -> None:
    store = PostgresStore(url.replace("postgres@", "postgres:s3cret@", 1))
    opened.append(store)
    assert "s3cret" not in repr(store)
    assert repr(store).startswith("PostgresStore('postgresql://127.0.0.1:")


_RACER = textwrap.dedent(
    """
    import sys, time
    from practiceflow.state import open_store

    store = open_store(sys.argv[1])
    store.get_run("warm-up")  # connected before the start line
    time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
    run_id, created = store.start_run("practice-a", "onboard", "evt-race")
    print(run_id, int(created), flush=True)
    store.close()
    """
)


def test_eight_processes_racing_start_exactly_one_run(
    store_url: str, open_store_again: Callable[[], StateStore]
) -> None:
    open_store_again().close()  # the schema exists before the race
    start_at = f"{time.time() + 3.0:.3f}"
    processes = [
        subprocess.Popen(  # noqa: S603 -- our own interpreter running our own code.
            [sys.executable, "-c", _RACER, store_url, start_at],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    outputs = [process.communicate(timeout=60) for process in processes]
    assert [process.returncode for process in processes] == [0] * 8, outputs
    results = [out.split() for out, _ in outputs]

    assert sum(int(created) for _, created in results) == 1
    assert len({run_id for run_id, _ in results}) == 1
    assert len(open_store_again().list_runs(event_id="evt-race")) == 1


def test_migration_9_moves_the_signs_of_life_and_awaited_tests(
    url: str, opened: list[StateStore]
) -> None:
    with PostgresStore(url) as store:
        store.set_cursor("p", "serve#alive", "2025-03-01T09:00:00+00:00")
        store.set_cursor("fleet#", "fleet#alive", "2025-03-01T09:00:00+00:00")
        store.set_cursor("p", "eform_submitted#test-asked", "2025-03-01T09:00:00+00:00", {"e-9"})
    _raw(url, "DROP TABLE pf_run_retries")
    _raw(url, "DROP TABLE pf_heartbeats")
    _raw(url, "ALTER TABLE pf_subscription_health DROP COLUMN test_asked_at")
    _raw(url, "ALTER TABLE pf_subscription_health DROP COLUMN test_event_id")
    _raw(url, "UPDATE pf_schema_version SET version = 8")
    assert migrate(url).changed
    store = PostgresStore(url)
    opened.append(store)
    rows = [(row.kind, row.practice, row.beat_at.isoformat()) for row in store.list_heartbeats()]
    assert rows == [
        ("fleet", "*", "2025-03-01T09:00:00+00:00"),
        ("serve", "p", "2025-03-01T09:00:00+00:00"),
    ]
    health = store.subscription_health("p", "eform_submitted")
    assert health.test_event_id == "e-9"
    assert _raw(url, "SELECT count(*) FROM pf_cursors") == [(0,)]


def test_a_database_restart_while_the_pools_connections_idle_fails_no_write() -> None:
    # A restart closes every connection the pool holds; they look idle until used. The
    # first transaction on each failed, and when it was a step's outcome after its
    # request was sent, the write was left in doubt for a person at every restart.
    own = PostgresServer.start()
    try:
        url = own.new_database("restarted")
        with PostgresStore(url, pool_size=4) as store:
            barrier = threading.Barrier(4)

            def read() -> None:
                barrier.wait()
                store.get_run("none")
                time.sleep(0.2)  # four at once: the pool grows to four, then they idle

            threads = [threading.Thread(target=read) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            own.halt()
            own.resume()

            for number in range(6):  # more than the pool held: each one a fresh use
                store.record_event("p", "s", "lead.created", f"e{number}", {"n": number})

            assert [event.event_id for event in store.pending_events("p")] == [
                f"e{number}" for number in range(6)
            ]
    finally:
        own.stop()
