"""The embedded state store: one SQLite file, stdlib ``sqlite3``.

Durability and concurrency choices, and why:

* ``journal_mode=WAL``: readers never block the writer, and a crash leaves the last
  committed transaction intact.
* ``synchronous=NORMAL`` with WAL survives the process being killed at any point (a commit
  is in the WAL before it returns); only an OS crash or power loss can drop the latest
  commits. The commits whose loss would repeat or lose something are *durable*: they run
  with ``synchronous=FULL`` and are fsynced, which in WAL also flushes every commit before
  them. They are: an event recorded before its delivery is acknowledged, a subscription
  (its secret is returned once), a write step marked ``sent`` before its request leaves,
  and an operator's resolution (see ``StepChange.durable``). Anything lost after the last
  durable commit is re-derived on restart (a write ``sent`` without its answer becomes in
  doubt and is reconciled; a read is sent again).
* ``busy_timeout``: writers from other threads or processes wait instead of failing.
* one connection per thread (SQLite connections must not be used by two threads at once);
  every write runs in ``BEGIN IMMEDIATE`` so that a read-then-write is never interleaved.
* a ``schema_version`` table; migrations run on open, in one transaction, and a database
  written by a newer practiceflow is refused rather than misread. A database already at
  this schema is opened without the write lock (its version is read), so that reading
  it, ``runs list`` say, never waits behind another process's write.

The file is created readable by its owner only: it holds webhook secrets.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Final, Self, cast

from practiceflow.errors import BugError, ConfigError
from practiceflow.state._sqlite_db import (
    SQLiteDatabase,
    apply_step_changes,
    is_busy,
    no_run,
)
from practiceflow.state._sqlite_schema import (
    SELECT_EVENTS,
    SELECT_RUNS,
    SELECT_STEPS,
    SELECT_SUBSCRIPTIONS,
    decode_event,
    decode_run,
    decode_step,
    decode_subscription,
)
from practiceflow.state.base import (
    DEFAULT_KEEP_SEEN,
    Clock,
    StateStore,
    StepChange,
)
from practiceflow.state.rows import (
    RUN_STATUSES,
    SUBSCRIPTION_STATUSES,
    CursorState,
    EventRecord,
    Json,
    NewEvent,
    RunRecord,
    RunStatus,
    StepRecord,
    StepStatus,
    StepTransition,
    SubscriptionHealth,
    SubscriptionRecord,
    SubscriptionStatus,
    check_run_transition,
    check_value,
    event_rows,
    first_occurrences,
    from_json,
    from_utc,
    json_or_null,
    to_utc,
)
from practiceflow.state.steps import encode_step_change

__all__ = ["SQLiteStore", "sqlite_path"]

_SCHEME: Final = "sqlite"
_INSERT_EVENTS_HEAD: Final = (
    "INSERT INTO events (practice, source, event_key, event_id, signature, payload,"
    " received_at) VALUES "
)
_EVENT_VALUES: Final = "(?, ?, ?, ?, ?, ?, ?)"
_INSERT_EVENTS_TAIL: Final = " ON CONFLICT DO NOTHING RETURNING practice, source, event_id"
_DEFAULT_BUSY_TIMEOUT_MS: Final = 10_000


def _insert_events(rows: Sequence[tuple[Any, ...]]) -> tuple[str, list[Any]]:
    """The one INSERT of a batch of :func:`event_rows`, and its parameters."""
    sql = _INSERT_EVENTS_HEAD + ", ".join([_EVENT_VALUES] * len(rows)) + _INSERT_EVENTS_TAIL
    return sql, [value for row in rows for value in row]


_STEP_STATUS: Final = "SELECT status FROM steps WHERE run_id = ? AND step_id = ?"
_RUN_EXISTS: Final = "SELECT 1 FROM runs WHERE run_id = ?"


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:///path`` URL or a plain path names.

    ``sqlite:///var/lib/pf.db`` is the absolute ``/var/lib/pf.db``; a plain path (with no
    ``scheme://``) is taken as it is, relative to the current directory if relative.

    Raises:
        ConfigError: the URL names no file, or an in-memory database (which each
            thread's connection would see as a different, empty database).
    """
    prefix = f"{_SCHEME}://"
    text = url[len(prefix) :] if url.lower().startswith(prefix) else url
    if "://" in text:
        message = f"state store URL: got scheme {url.partition('://')[0]!r}; expected 'sqlite'"
        raise ConfigError(message)
    if text in ("", "/", ":memory:", "/:memory:") or text.startswith(("file:", "/file:")):
        message = (
            f"state store URL {url!r}: expected a file, as 'sqlite:///absolute/path.db' "
            "or a plain path; in-memory and URI forms are not supported (use a temporary "
            "file in tests)"
        )
        raise ConfigError(message)
    return Path(text)


class SQLiteStore(SQLiteDatabase, StateStore):
    """The state store in one SQLite file (WAL; durable commits fsynced, see the module).

    Args:
        path: the database file; created (with its folder) when missing.
        clock: the current time, for tests; the system clock when omitted.
        busy_timeout_ms: how long a write waits for another writer before failing.
    """

    scheme: ClassVar[str] = _SCHEME
    local_reads: ClassVar[bool] = True  # a file; WAL readers never wait for writers

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        busy_timeout_ms: int = _DEFAULT_BUSY_TIMEOUT_MS,
    ) -> None:
        StateStore.__init__(self, clock=clock)
        SQLiteDatabase.__init__(self, path, busy_timeout_ms)

    @classmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> Self:
        """Open the store at ``sqlite:///path`` or a plain path.

        Raises:
            ConfigError: see :func:`sqlite_path`, and a database of a newer schema.
        """
        return cls(sqlite_path(url), clock=clock)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        row = self._one("SELECT version FROM schema_version")
        return int(row[0])

    def _stamp(self, value: datetime | None, what: str) -> str:
        return to_utc(self.now() if value is None else value, what)

    # --- events -----------------------------------------------------------------------------

    def record_events(self, events: Sequence[NewEvent]) -> list[bool]:
        """See :meth:`StateStore.record_events`: one ``BEGIN IMMEDIATE``, one fsync."""
        rows = event_rows(events, self._stamp)
        if not rows:
            return []
        sql, params = _insert_events(rows)
        # One statement for the batch. DO NOTHING without a target covers both unique keys,
        # the event id and the signature, within the batch too.
        if getattr(self._local, "atomic", None) is not None:
            with self._write(durable=True) as db:
                inserted = db.execute(sql, params).fetchall()
            return first_occurrences(rows, inserted)
        # Alone, the statement is its own transaction (autocommit): all its rows or none,
        # committed (fsynced) when its last row is read. Two calls into SQLite instead of
        # four (BEGIN, INSERT, fetch, COMMIT): each is a wait for the GIL when the
        # receiver's event loop is busy.
        connection = self._conn()
        try:
            self._synchronous(connection, "FULL")
            inserted = connection.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc
        return first_occurrences(rows, inserted)

    def try_record_events(self, events: Sequence[NewEvent]) -> list[bool] | None:
        """See :meth:`StateStore.try_record_events`: ``None`` while another writer works.

        The same single statement as :meth:`record_events`, on this thread's second
        connection, which fails at once rather than wait for the write lock.
        """
        if getattr(self._local, "atomic", None) is not None:
            return None  # inside a transaction of this thread's own: not a separate commit
        rows = event_rows(events, self._stamp)
        if not rows:
            return []
        sql, params = _insert_events(rows)
        try:
            inserted = self._open_conn(wait=False).execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                return None  # nothing was written: the statement is its own transaction
            raise self._store_error(exc) from exc
        return first_occurrences(rows, inserted)

    def seen_event(
        self, practice: str, source: str, event_id: str, signature: str | None = None
    ) -> bool:
        """See :meth:`StateStore.seen_event`."""
        row = self._one(
            "SELECT 1 FROM events WHERE practice = ? AND source = ?"
            " AND (event_id = ? OR (? IS NOT NULL AND signature = ?)) LIMIT 1",
            (practice, source, event_id, signature, signature),
        )
        return row is not None

    def get_event(self, practice: str, source: str, event_id: str) -> EventRecord | None:
        """See :meth:`StateStore.get_event`."""
        row = self._one(
            SELECT_EVENTS + " WHERE practice = ? AND source = ? AND event_id = ?",
            (practice, source, event_id),
        )
        return None if row is None else decode_event(row)

    def pending_events(
        self, practice: str, limit: int = 100, *, source: str | None = None
    ) -> list[EventRecord]:
        """See :meth:`StateStore.pending_events`."""
        rows = self._all(
            SELECT_EVENTS + " WHERE practice = ?"
            " AND handled_at IS NULL AND (? IS NULL OR source = ?)"
            " ORDER BY received_at, seq LIMIT ?",
            (practice, source, source, limit),
        )
        return [decode_event(row) for row in rows]

    def mark_event_handled(
        self, practice: str, source: str, event_id: str, handled_at: datetime | None = None
    ) -> None:
        """See :meth:`StateStore.mark_event_handled`."""
        stamp = self._stamp(handled_at, "handled_at")
        with self._write() as db:
            cursor = db.execute(
                "UPDATE events SET handled_at = coalesce(handled_at, ?)"
                " WHERE practice = ? AND source = ? AND event_id = ?",
                (stamp, practice, source, event_id),
            )
            if cursor.rowcount == 0:
                message = f"event {event_id!r} of {practice!r} from {source!r} was never recorded"
                raise BugError(message)

    def purge_seen(self, older_than: timedelta = DEFAULT_KEEP_SEEN) -> int:
        """See :meth:`StateStore.purge_seen`."""
        cutoff = to_utc(self.now() - older_than)
        with self._write() as db:
            cursor = db.execute(
                "DELETE FROM events WHERE handled_at IS NOT NULL AND received_at < ?", (cutoff,)
            )
            return cursor.rowcount

    # --- polling cursors --------------------------------------------------------------------

    def get_cursor_state(self, practice: str, trigger_key: str) -> CursorState | None:
        """See :meth:`StateStore.get_cursor_state`."""
        key = (practice, trigger_key)
        with self._read() as db:
            row = db.execute(
                "SELECT value, updated_at FROM cursors WHERE practice = ? AND trigger_key = ?",
                key,
            ).fetchone()
            if row is None:
                return None
            keys = db.execute(
                "SELECT dedupe_key FROM cursor_keys WHERE practice = ? AND trigger_key = ?", key
            ).fetchall()
        boundary = frozenset(str(k[0]) for k in keys)
        return CursorState(practice, trigger_key, row[0], boundary, from_utc(row[1]))

    def set_cursor(
        self, practice: str, trigger_key: str, value: str, boundary_keys: Iterable[str] = ()
    ) -> None:
        """See :meth:`StateStore.set_cursor`."""
        key = (practice, trigger_key)
        stamp = self._stamp(None, "updated_at")
        with self._write() as db:
            row = db.execute(
                "SELECT value FROM cursors WHERE practice = ? AND trigger_key = ?", key
            ).fetchone()
            if row is not None and row[0] != value:
                db.execute("DELETE FROM cursor_keys WHERE practice = ? AND trigger_key = ?", key)
            db.execute(
                "INSERT INTO cursors (practice, trigger_key, value, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (practice, trigger_key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (*key, value, stamp),
            )
            db.executemany(
                "INSERT INTO cursor_keys (practice, trigger_key, dedupe_key) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [(*key, dedupe_key) for dedupe_key in boundary_keys],
            )

    # --- webhook subscriptions --------------------------------------------------------------

    def save_subscription(
        self,
        practice: str,
        trigger_key: str,
        subscription_id: str | None,
        event: str,
        url: str,
        secret: str,
        path_token: str,
        status: SubscriptionStatus,
    ) -> SubscriptionRecord:
        """See :meth:`StateStore.save_subscription`."""
        check_value("subscription status", status, SUBSCRIPTION_STATUSES)
        stamp = self._stamp(None, "updated_at")
        values = (practice, trigger_key, subscription_id, event, url, secret, path_token)
        try:
            with self._write(durable=True) as db:
                db.execute(
                    "INSERT INTO subscriptions (practice, trigger_key, subscription_id, event,"
                    " url, secret, path_token, status, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (practice, trigger_key) DO UPDATE SET"
                    " subscription_id = excluded.subscription_id, event = excluded.event,"
                    " url = excluded.url, secret = excluded.secret,"
                    " path_token = excluded.path_token, status = excluded.status,"
                    " updated_at = excluded.updated_at",
                    (*values, status, stamp, stamp),
                )
        except sqlite3.IntegrityError as exc:
            # The message names the column, never the values (the secret is one of them).
            message = (
                f"subscription of {practice!r} / {trigger_key!r} clashes with another "
                f"subscription's path token or subscription id ({exc})"
            )
            raise BugError(message) from None
        saved = self.get_subscription(practice, trigger_key)
        if saved is None:  # pragma: no cover - the row was written in this very call.
            raise BugError(f"subscription of {practice!r} / {trigger_key!r} vanished")
        return saved

    def get_subscription(self, practice: str, trigger_key: str) -> SubscriptionRecord | None:
        """See :meth:`StateStore.get_subscription`."""
        return self._one_subscription("practice = ? AND trigger_key = ?", (practice, trigger_key))

    def find_subscription_by_path(self, path_token: str) -> SubscriptionRecord | None:
        """See :meth:`StateStore.find_subscription_by_path`."""
        return self._one_subscription("path_token = ?", (path_token,))

    def _one_subscription(self, where: str, params: tuple[str, ...]) -> SubscriptionRecord | None:
        row = self._one(SELECT_SUBSCRIPTIONS + " WHERE " + where, params)
        return None if row is None else decode_subscription(row)

    def list_subscriptions(self, practice: str | None = None) -> list[SubscriptionRecord]:
        """See :meth:`StateStore.list_subscriptions`."""
        rows = self._all(
            SELECT_SUBSCRIPTIONS
            + " WHERE ? IS NULL OR practice = ? ORDER BY practice, trigger_key",
            (practice, practice),
        )
        return [decode_subscription(row) for row in rows]

    def delete_subscription(self, practice: str, trigger_key: str) -> bool:
        """See :meth:`StateStore.delete_subscription`."""
        with self._write() as db:
            cursor = db.execute(
                "DELETE FROM subscriptions WHERE practice = ? AND trigger_key = ?",
                (practice, trigger_key),
            )
            return cursor.rowcount == 1

    def record_test_delivery(
        self, practice: str, trigger_key: str, at: datetime | None = None
    ) -> None:
        """See :meth:`StateStore.record_test_delivery`."""
        stamp = self._stamp(at, "at")
        with self._write() as db:
            db.execute(
                "INSERT INTO subscription_health (practice, trigger_key, last_test_delivery_at)"
                " VALUES (?, ?, ?) ON CONFLICT (practice, trigger_key) DO UPDATE SET"
                " last_test_delivery_at = MAX(COALESCE(last_test_delivery_at, ''),"
                " excluded.last_test_delivery_at)",
                (practice, trigger_key, stamp),
            )

    def count_resubscribe(self, practice: str, trigger_key: str) -> int:
        """See :meth:`StateStore.count_resubscribe`."""
        with self._write() as db:
            row = db.execute(
                "INSERT INTO subscription_health (practice, trigger_key, resubscribes)"
                " VALUES (?, ?, 1) ON CONFLICT (practice, trigger_key) DO UPDATE SET"
                " resubscribes = resubscribes + 1 RETURNING resubscribes",
                (practice, trigger_key),
            ).fetchone()
            return int(row[0])

    def subscription_health(self, practice: str, trigger_key: str) -> SubscriptionHealth:
        """See :meth:`StateStore.subscription_health`."""
        key = (practice, trigger_key)
        delivered = self._one(
            "SELECT MAX(received_at) FROM events WHERE practice = ? AND source = ?"
            " AND json_extract(payload, '$.source') = 'webhook'",
            key,
        )
        row = self._one(
            "SELECT last_test_delivery_at, resubscribes FROM subscription_health"
            " WHERE practice = ? AND trigger_key = ?",
            key,
        )
        last = delivered[0] if delivered is not None else None
        test = row[0] if row is not None else None
        return SubscriptionHealth(
            practice,
            trigger_key,
            None if last is None else from_utc(last),
            None if test is None else from_utc(test),
            int(row[1]) if row is not None else 0,
        )

    # --- runs -------------------------------------------------------------------------------

    def start_run(
        self,
        practice: str,
        recipe: str,
        event_id: str,
        *,
        skipped: Mapping[str, Json] | None = None,
        run_id: str | None = None,
        created_at: datetime | None = None,
    ) -> tuple[str, bool]:
        """See :meth:`StateStore.start_run`."""
        key = (practice, recipe, event_id)
        stamp = self._stamp(created_at, "created_at")
        run_id = run_id or uuid.uuid4().hex
        skips = [
            (step_id, StepChange.to_skipped(reason)) for step_id, reason in (skipped or {}).items()
        ]
        encoded = [encode_step_change(move, f"run {run_id} step {sid!r}") for sid, move in skips]
        with self._write() as db:
            created = db.execute(
                "INSERT INTO runs (run_id, practice, recipe, event_id, status, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, 'pending', ?, ?)"
                " ON CONFLICT (practice, recipe, event_id) DO NOTHING RETURNING run_id",
                (run_id, *key, stamp, stamp),
            ).fetchone()
            if created is not None:
                # A run created just now has no steps: each skip is the step's first move.
                for (step_id, move), fields in zip(skips, encoded, strict=True):
                    apply_step_changes(db, run_id, step_id, None, (move,), (fields,), (stamp,))
                return run_id, True
            row = db.execute(
                "SELECT run_id FROM runs WHERE practice = ? AND recipe = ? AND event_id = ?", key
            ).fetchone()
        return str(row[0]), False

    def get_run(self, run_id: str) -> RunRecord | None:
        """See :meth:`StateStore.get_run`."""
        row = self._one(SELECT_RUNS + " WHERE run_id = ?", (run_id,))
        return None if row is None else decode_run(row)

    def list_runs(
        self,
        *,
        practice: str | None = None,
        recipe: str | None = None,
        status: RunStatus | None = None,
        event_id: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
    ) -> list[RunRecord]:
        """See :meth:`StateStore.list_runs`."""
        if status is not None:
            check_value("run status", status, RUN_STATUSES)
        filters: dict[str, str | None] = {
            "practice = ?": practice,
            "recipe = ?": recipe,
            "status = ?": status,
            "event_id = ?": event_id,
            "created_at >= ?": None if since is None else to_utc(since, "since"),
        }
        given = {clause: value for clause, value in filters.items() if value is not None}
        where = " AND ".join(given) or "1 = 1"
        rows = self._all(
            SELECT_RUNS + " WHERE " + where + " ORDER BY created_at DESC, run_id LIMIT ?",
            (*given.values(), limit),
        )
        return [decode_run(row) for row in rows]

    def set_run_status(self, run_id: str, status: RunStatus, error: Json = None) -> None:
        """See :meth:`StateStore.set_run_status`."""
        check_value("run status", status, RUN_STATUSES)
        stamp = self._stamp(None, "updated_at")
        with self._write() as db:
            row = db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise BugError(f"run {run_id} does not exist")
            check_run_transition(run_id, row[0], status)
            db.execute(
                "UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE run_id = ?",
                (status, json_or_null(error, f"error of run {run_id}"), stamp, run_id),
            )

    # --- step journal -----------------------------------------------------------------------

    def _change_step(self, run_id: str, step_id: str, *changes: StepChange) -> None:
        where = f"run {run_id} step {step_id!r}"
        encoded = [encode_step_change(change, where) for change in changes]
        now = self._stamp(None, "updated_at")
        stamps = [now if change.at is None else self._stamp(change.at, "at") for change in changes]
        with self._write(durable=any(change.durable for change in changes)) as db:
            row = db.execute(_STEP_STATUS, (run_id, step_id)).fetchone()
            current = None if row is None else cast(StepStatus, row[0])
            try:
                apply_step_changes(db, run_id, step_id, current, changes, encoded, stamps)
            except BugError:
                if current is None and db.execute(_RUN_EXISTS, (run_id,)).fetchone() is None:
                    raise no_run(run_id) from None
                raise

    def get_step(self, run_id: str, step_id: str) -> StepRecord | None:
        """See :meth:`StateStore.get_step`."""
        row = self._one(SELECT_STEPS + " WHERE run_id = ? AND step_id = ?", (run_id, step_id))
        return None if row is None else decode_step(row)

    def get_steps(self, run_id: str) -> list[StepRecord]:
        """See :meth:`StateStore.get_steps`."""
        rows = self._all(SELECT_STEPS + " WHERE run_id = ? ORDER BY seq", (run_id,))
        return [decode_step(row) for row in rows]

    def step_history(self, run_id: str, step_id: str | None = None) -> list[StepTransition]:
        """See :meth:`StateStore.step_history`."""
        rows = self._all(
            "SELECT run_id, step_id, from_status, to_status, at, who, note, detail"
            " FROM step_journal WHERE run_id = ? AND (? IS NULL OR step_id = ?)"
            " ORDER BY seq",
            (run_id, step_id, step_id),
        )
        return [
            StepTransition(r[0], r[1], r[2], r[3], from_utc(r[4]), r[5], r[6], from_json(r[7]))
            for r in rows
        ]

    # --- rate budget bookkeeping ------------------------------------------------------------

    def record_requests(self, practice: str, times: Sequence[datetime]) -> None:
        """See :meth:`StateStore.record_requests`."""
        rows = [(practice, self._stamp(at, "at")) for at in times]
        if not rows:
            return
        with self._write() as db:
            db.executemany("INSERT INTO requests (practice, at) VALUES (?, ?)", rows)

    def request_counts(self, practice: str, since: datetime) -> int:
        """See :meth:`StateStore.request_counts`."""
        row = self._one(
            "SELECT count(*) FROM requests WHERE practice = ? AND at >= ?",
            (practice, to_utc(since, "since")),
        )
        return int(row[0])

    def purge_requests(self, older_than: timedelta = timedelta(days=2)) -> int:
        """See :meth:`StateStore.purge_requests`."""
        cutoff = to_utc(self.now() - older_than)
        with self._write() as db:
            return db.execute("DELETE FROM requests WHERE at < ?", (cutoff,)).rowcount
