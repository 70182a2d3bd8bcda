"""Faults of the state store: the database locked by another process (a real second
process holding the write lock), the disk full (simulated: the store's connection fails
every INSERT/UPDATE/DELETE with SQLite's own ``SQLITE_FULL`` error, as on a full disk;
``max_page_count`` was tried first, but small rows still fit in free pages), and what
the user sees in each case: a :class:`StoreError` with the file and the way out, never
a raw ``sqlite3`` traceback; nothing half-recorded, nothing lost.
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from practiceflow.errors import StoreError
from practiceflow.state import SQLiteStore, open_store
from practiceflow.testing import SandboxHandle
from reliability._support import (
    TWO_STEP_RECIPE,
    InProcessService,
    cli_env,
    create_clients,
    free_port,
    practiceflow,
    wait_until,
    writes_by_entity,
)

pytestmark = pytest.mark.integration

LOCKER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_state_db_locked_by_another_process_is_a_clear_transient_error(
    rsandbox: SandboxHandle, tmp_path: Path
):
    state = tmp_path / "state.db"
    with open_store(str(state)) as store:
        run_id, _ = store.start_run("p", "recipe", "e1")
        store.step_pending(run_id, "form", {"use": "send_eform"})
        store.step_sent(run_id, "form")
        store.step_in_doubt(run_id, "form", {"reason": "no answer"})
    resolve = ("runs", "resolve", run_id, "--step", "form", "--as", "done", "--who", "ops")
    locker = subprocess.Popen(  # noqa: S603 - a fixed script of ours
        # It holds the lock until the test kills it: however slow the machine, both CLI
        # commands meet the lock.
        [sys.executable, "-c", LOCKER, str(state), "600"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None
        assert locker.stdout.readline().strip() == "locked"
        # Reading never waits for the writer: opening the store takes no write lock
        # when its schema is current.
        listed = subprocess.run(  # noqa: S603 - our own CLI
            practiceflow("runs", "list", "--state", str(state), "--json"),
            env=cli_env(rsandbox),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        done = subprocess.run(  # noqa: S603 - our own CLI
            practiceflow(*resolve, "--state", str(state)),
            env=cli_env(rsandbox),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        locker.kill()
        locker.wait(timeout=10)
        if locker.stdout is not None:
            locker.stdout.close()
    assert listed.returncode == 0, listed.stderr
    assert run_id in listed.stdout
    # A write: one line naming the file and the way out; exit 4 (transient).
    assert done.returncode == 4, done.stderr
    assert "is locked by another process" in done.stderr
    assert str(state) in done.stderr
    assert "Traceback" not in done.stderr
    assert "sqlite3" not in done.stderr
    with open_store(str(state)) as store:
        step = store.get_step(run_id, "form")
        assert step is not None
        assert step.status == "in_doubt"  # nothing half-recorded
    # Once the other process is gone the same command works.
    again = subprocess.run(  # noqa: S603 - our own CLI
        practiceflow(*resolve, "--state", str(state)),
        env=cli_env(rsandbox),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    with open_store(str(state)) as store:
        step = store.get_step(run_id, "form")
        assert step is not None
        assert (step.status, step.resolved_by) == ("succeeded", "ops")


class _FullConnection:
    """A connection whose writes fail as SQLite fails them on a full disk (SQLITE_FULL)."""

    def __init__(self, inner: sqlite3.Connection) -> None:
        self._inner = inner

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> sqlite3.Cursor:
        if sql.lstrip().split(" ", 1)[0].upper() in ("INSERT", "UPDATE", "DELETE"):
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
            raise error
        return self._inner.execute(sql, params)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


class DiskFull:
    """While ``on``, the store's writes fail with SQLITE_FULL in the named threads (all
    when ``threads`` is None); reads still work, as they do on a full disk."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.on = False
        self.threads: set[str] | None = None
        original = SQLiteStore._conn
        full = self

        # Every connection of the store comes from _conn: each thread's own.
        def conn(store: SQLiteStore) -> sqlite3.Connection:
            connection = original(store)
            name = threading.current_thread().name
            if full.on and (full.threads is None or any(t in name for t in full.threads)):
                return _FullConnection(connection)  # type: ignore[return-value]
            return connection

        monkeypatch.setattr(SQLiteStore, "_conn", conn)


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> Iterator[DiskFull]:
    return DiskFull(monkeypatch)


def _recipe(tmp_path: Path) -> Path:
    recipe = tmp_path / "two_writes.yaml"
    recipe.write_text(TWO_STEP_RECIPE, encoding="utf-8")
    return recipe


def test_disk_full_at_the_receiver_refuses_deliveries_until_space_returns(
    rsandbox: SandboxHandle, tmp_path: Path, disk_full: DiskFull, caplog: pytest.LogCaptureFixture
):
    serve = InProcessService(rsandbox, _recipe(tmp_path), tmp_path / "state.db").start()
    try:
        wait_until(lambda: rsandbox.admin("GET", "/_admin/records/subscriptions"), 90, "subscribe")
        # The receiver's threads: its event loop, its group commit's writer and its worker
        # threads.
        disk_full.threads = {"pf-receiver", "pf-group-commit", "AnyIO"}
        disk_full.on = True
        with caplog.at_level(logging.WARNING):
            keys = set(create_clients(rsandbox, 2, "Full"))
            refused = wait_until(
                lambda: [r for r in rsandbox.state.dispatcher.log() if not r["ok"]],
                10,
                "a refused delivery",
            )
            disk_full.on = False  # space is back before the sender's retries run out
            wait_until(
                lambda: len(writes_by_entity(rsandbox, keys)[1]) == 2, 30, "both runs", every=0.2
            )
    finally:
        serve.stop()
    # What the sender saw: a 5xx (retry later), never a 2xx for an event not stored.
    assert all(row["status"] is not None and row["status"] >= 500 for row in refused), refused
    bills, contacts = writes_by_entity(rsandbox, keys)
    assert set(bills.values()) == {1}
    assert set(contacts.values()) == {1}
    # What the operator saw: a one-line warning naming the cause, no sqlite3 traceback.
    texts = [record.getMessage() for record in caplog.records]
    assert any("disk is full" in text for text in texts), texts
    assert not any(
        record.exc_info and isinstance(record.exc_info[1], sqlite3.Error | StoreError)
        for record in caplog.records
    )


def test_disk_full_in_the_runner_stops_before_sending_and_resumes_once(
    rsandbox: SandboxHandle, tmp_path: Path, disk_full: DiskFull
):
    port = free_port()
    state = tmp_path / "state.db"
    failures: list[BaseException] = []
    hook = threading.excepthook

    def catch(args: threading.ExceptHookArgs) -> None:
        failures.append(args.exc_value)  # type: ignore[arg-type]

    threading.excepthook = catch
    serve = InProcessService(rsandbox, _recipe(tmp_path), state, listen_port=port)
    disk_full.threads = {"rel-serve"}  # only the runner's thread finds the disk full
    try:
        serve.start()
        wait_until(lambda: rsandbox.admin("GET", "/_admin/records/subscriptions"), 90, "subscribe")
        disk_full.on = True
        keys = set(create_clients(rsandbox, 2, "RunFull"))
        serve.thread.join(timeout=30)
    finally:
        threading.excepthook = hook
        disk_full.on = False
        serve.intake.stop()
        serve.client.close()
        serve.store.close()
    # What the user sees: serve stops with StoreError (the CLI prints it, exit 4).
    assert len(failures) == 1, failures
    assert isinstance(failures[0], StoreError), failures
    assert "disk is full" in str(failures[0])
    assert failures[0].exit_code == 4
    # Journal first: nothing was sent that the journal does not know about.
    assert writes_by_entity(rsandbox, keys) == (writes_by_entity(rsandbox, set())[0],) * 2
    # Space is back: the next start runs each event once.
    again = InProcessService(rsandbox, _recipe(tmp_path), state, listen_port=port).start()
    try:
        wait_until(
            lambda: len(writes_by_entity(rsandbox, keys)[1]) == 2, 30, "both runs", every=0.2
        )
        time.sleep(0.5)
    finally:
        again.stop()
    bills, contacts = writes_by_entity(rsandbox, keys)
    assert set(bills.values()) == {1}
    assert set(contacts.values()) == {1}


def test_deliveries_refused_until_the_sender_gave_up_are_listed_once_space_returns(
    rsandbox: SandboxHandle, tmp_path: Path, disk_full: DiskFull
):
    """Issue 35: the sender's retries ended while the disk was full; once a delivery is
    stored again, the window of refusals is listed as a gap needing attention."""
    serve = InProcessService(rsandbox, _recipe(tmp_path), tmp_path / "state.db").start()
    try:
        wait_until(lambda: rsandbox.admin("GET", "/_admin/records/subscriptions"), 90, "subscribe")
        disk_full.threads = {"pf-receiver", "pf-group-commit", "AnyIO"}
        disk_full.on = True
        lost = set(create_clients(rsandbox, 2, "Lost"))
        wait_until(
            lambda: len([r for r in rsandbox.state.dispatcher.log() if not r["willRetry"]]) >= 2,
            60,
            "the sender to give both deliveries up",
            every=0.2,
        )
        disk_full.on = False
        later = set(create_clients(rsandbox, 1, "Later"))
        wait_until(lambda: len(writes_by_entity(rsandbox, later)[0]) == 1, 30, "the later run")
        gaps = wait_until(
            lambda: serve.store.list_attention(kind="gap", statuses=("open", "checking")),
            30,
            "the refused window listed",
        )
        (gap,) = gaps
    finally:
        serve.stop()
    assert writes_by_entity(rsandbox, lost)[0] == {}  # lost: never stored, never run
    assert gap.trigger == "any_webhook_event"
    assert gap.window_start is not None
    assert gap.window_end is not None
    assert "the state store was down" in gap.reason
    assert "refused with 503" in gap.reason
