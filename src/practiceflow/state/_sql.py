"""The one SQL store: every :class:`~practiceflow.state.StateStore` method, written once.

:class:`SQLStore` holds the statements and their rules; a subclass gives it a database:
its ``Dialect`` (what differs in the SQL text and in the values, ``_dialect.py``) and its
connections and transactions (:meth:`SQLStore._transaction`, :meth:`SQLStore._statement`,
:meth:`SQLStore._lock`). Statements are written in the store's one form (``?`` for each
parameter, ``{p}`` before each table name), which the dialect translates.

What every subclass must guarantee, and the methods rely on:

* a write transaction (:meth:`SQLStore._write`) that reads and then writes is never
  interleaved with another writer's on the same rows: SQLite takes the database's write
  lock when it begins, PostgreSQL locks the rows read (``Dialect.lock_row``) or a key
  (:meth:`SQLStore._lock`);
* uniqueness is the database's (unique indexes, ``ON CONFLICT DO NOTHING``), so that
  concurrent callers, threads or processes, agree on one event, one run, one subscription;
* inside :meth:`SQLStore.atomic`, every call of the thread joins the block's transaction.
"""

from __future__ import annotations

import threading
import uuid
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from practiceflow.errors import BugError
from practiceflow.state._attention_sql import SQLAttention
from practiceflow.state._dialect import Connection, Dialect, SQLConnection
from practiceflow.state._heartbeats_sql import SQLHeartbeats
from practiceflow.state._schema import (
    COUNT_RESUBSCRIBE,
    COUNT_START,
    JOURNAL,
    SELECT_EVENTS,
    SELECT_HEALTH,
    SELECT_RUNS,
    SELECT_STEPS,
    SELECT_SUBSCRIPTIONS,
    UPSERT_SUBSCRIPTION,
    UPSERT_TEST_ASKED,
    UPSERT_TEST_DELIVERY,
    count_by_practice,
    decode_event,
    decode_run,
    decode_step,
    decode_subscription,
    insert_events,
)
from practiceflow.state._versions_sql import SQLVersions
from practiceflow.state.base import DEFAULT_KEEP_SEEN, Clock, StateStore, StepChange
from practiceflow.state.pending_writes import PendingWriteStore
from practiceflow.state.retention import purge_finished
from practiceflow.state.rows import (
    RUN_STATUSES,
    SUBSCRIPTION_STATUSES,
    CursorState,
    EventRecord,
    Json,
    NewEvent,
    PracticeCounts,
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
    json_or_null,
    like_prefix,
)
from practiceflow.state.run_leases import RunLease, drop_lease, read_lease, renew_lease, take_lease
from practiceflow.state.sealing import Sealer
from practiceflow.state.steps import encode_step_change, fold_step_changes


@dataclass
class _Atomic:
    """An open :meth:`SQLStore.atomic` block of one thread."""

    connection: SQLConnection
    durable: bool


class SQLStore(PendingWriteStore, SQLAttention, SQLHeartbeats, SQLVersions, StateStore):
    """The state store in a SQL database; subclasses give the dialect and connections."""

    dialect: ClassVar[Dialect]
    #: Every commit is durable (the database cannot relax one): ``durable`` needs nothing.
    always_durable: ClassVar[bool] = False

    def __init__(self, *, clock: Clock | None = None, key_file: Path | None = None) -> None:
        super().__init__(clock=clock)
        self._local = threading.local()
        #: Seals every JSON value written and opens it when read (``sealing.py``).
        self.sealer = Sealer(key_file)
        self.sealer.check()  # a key given but unusable is said at open, not at a first write
        #: The dialect as the row decoders use it: JSON columns opened as they are read.
        self._load = replace(
            self.dialect, load_json=lambda value: self.sealer.open(self.dialect.load_json(value))
        )

    # --- what a subclass gives ------------------------------------------------------------

    @abstractmethod
    def _transaction(
        self, *, durable: bool = False, snapshot: bool = False
    ) -> AbstractContextManager[Connection]:
        """One transaction on a connection of this thread, committed on exit (rolled back
        on an exception).

        ``snapshot``: it only reads, and every read sees the same committed state. Else
        it writes, serialized with other writers (see the module), and its commit
        survives an OS crash when ``durable``.
        """

    @abstractmethod
    def _statement(self) -> AbstractContextManager[Connection]:
        """A connection for one statement that is its own transaction."""

    def _lock(self, db: SQLConnection, key: str) -> None:
        """Hold a lock named ``key`` until ``db``'s write transaction ends (this default:
        the database serializes every write transaction already)."""

    @abstractmethod
    def _clash(self, exc: Exception) -> str | None:
        """What names the unique key an exception says was violated (never the values,
        a secret may be one), or ``None`` when it is something else."""

    # --- transactions ---------------------------------------------------------------------

    def _stamp(self, value: datetime | None, what: str) -> Any:
        return self.dialect.dump_time(self.now() if value is None else value, what)

    @contextmanager
    def _join(
        self, begin: Callable[[], AbstractContextManager[Connection]]
    ) -> Iterator[SQLConnection]:
        """The connection of this thread's atomic block, else one that ``begin`` opens."""
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if outer is not None:
            yield outer.connection
            return
        with begin() as db:
            yield SQLConnection(db, self.dialect)

    def _write(self, *, durable: bool = False) -> AbstractContextManager[SQLConnection]:
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if durable and outer is not None and not outer.durable:
            message = "a durable write inside atomic() opened without durable=True"
            raise BugError(message)
        return self._join(lambda: self._transaction(durable=durable))

    @contextmanager
    def atomic(self, *, durable: bool = False) -> Iterator[None]:
        """See :meth:`StateStore.atomic`: the calls inside share one transaction.

        A store that fixes durability when its transaction begins (SQLite) fixes it when
        the block opens.
        """
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if outer is not None:
            if durable and not outer.durable:
                message = "atomic(durable=True) inside atomic() opened without it"
                raise BugError(message)
            yield
            return
        with self._transaction(durable=durable) as db:
            connection = SQLConnection(db, self.dialect)
            self._local.atomic = _Atomic(connection, durable or self.always_durable)
            try:
                yield
            finally:
                self._local.atomic = None

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._join(self._statement) as db:
            return db.execute(sql, params).fetchone()

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._join(self._statement) as db:
            return db.execute(sql, params).fetchall()

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        return int(self._one("SELECT version FROM {p}schema_version")[0])

    # --- events ---------------------------------------------------------------------------

    def record_events(self, events: Sequence[NewEvent]) -> list[bool]:
        """See :meth:`StateStore.record_events`: one statement, one durable commit."""
        rows = event_rows(events, self._stamp, self.sealer.seal)
        if not rows:
            return []
        sql, params = insert_events(rows)
        with self._write(durable=True) as db:
            inserted = db.execute(sql, params).fetchall()
        return first_occurrences(rows, inserted)

    def seen_event(
        self, practice: str, source: str, event_id: str, signature: str | None = None
    ) -> bool:
        """See :meth:`StateStore.seen_event`."""
        where, params = "event_id = ?", [practice, source, event_id]
        if signature is not None:
            where, params = "(event_id = ? OR signature = ?)", [*params, signature]
        sql = "SELECT 1 FROM {p}events WHERE practice = ? AND source = ? AND " + where
        row = self._one(sql + " LIMIT 1", params)
        return row is not None

    def get_event(self, practice: str, source: str, event_id: str) -> EventRecord | None:
        """See :meth:`StateStore.get_event`."""
        row = self._one(
            SELECT_EVENTS + " WHERE practice = ? AND source = ? AND event_id = ?",
            (practice, source, event_id),
        )
        return None if row is None else decode_event(row, self._load)

    def pending_events(
        self, practice: str, limit: int = 100, *, source: str | None = None
    ) -> list[EventRecord]:
        """See :meth:`StateStore.pending_events`."""
        where, params = "practice = ? AND handled_at IS NULL", [practice]
        if source is not None:
            where, params = where + " AND source = ?", [*params, source]
        rows = self._all(
            SELECT_EVENTS + " WHERE " + where + " ORDER BY received_at, seq LIMIT ?",
            (*params, limit),
        )
        return [decode_event(row, self._load) for row in rows]

    def mark_event_handled(
        self, practice: str, source: str, event_id: str, handled_at: datetime | None = None
    ) -> None:
        """See :meth:`StateStore.mark_event_handled`."""
        stamp = self._stamp(handled_at, "handled_at")
        with self._write() as db:
            cursor = db.execute(
                "UPDATE {p}events SET handled_at = coalesce(handled_at, ?)"
                " WHERE practice = ? AND source = ? AND event_id = ?",
                (stamp, practice, source, event_id),
            )
            if cursor.rowcount == 0:
                message = f"event {event_id!r} of {practice!r} from {source!r} was never recorded"
                raise BugError(message)

    def purge_seen(self, older_than: timedelta = DEFAULT_KEEP_SEEN) -> int:
        """See :meth:`StateStore.purge_seen`."""
        cutoff = self._stamp(self.now() - older_than, "older_than")
        with self._write() as db:
            sql = "DELETE FROM {p}events WHERE handled_at IS NOT NULL AND received_at < ?"
            return db.execute(sql, (cutoff,)).rowcount

    # --- polling cursors ------------------------------------------------------------------

    def get_cursor_state(self, practice: str, trigger_key: str) -> CursorState | None:
        """See :meth:`StateStore.get_cursor_state`."""
        key = (practice, trigger_key)
        where = " WHERE practice = ? AND trigger_key = ?"
        # One snapshot: the value and its keys belong together.
        with self._join(lambda: self._transaction(snapshot=True)) as db:
            row = db.execute("SELECT value, updated_at FROM {p}cursors" + where, key).fetchone()
            if row is None:
                return None
            keys = db.execute("SELECT dedupe_key FROM {p}cursor_keys" + where, key).fetchall()
        boundary = frozenset(str(k[0]) for k in keys)
        return CursorState(practice, trigger_key, row[0], boundary, self.dialect.load_time(row[1]))

    def set_cursor(
        self, practice: str, trigger_key: str, value: str, boundary_keys: Iterable[str] = ()
    ) -> None:
        """See :meth:`StateStore.set_cursor`."""
        key = (practice, trigger_key)
        where = " WHERE practice = ? AND trigger_key = ?"
        stamp = self._stamp(None, "updated_at")
        with self._write() as db:
            # The cursor may not exist yet (no row to lock): a lock on its key.
            self._lock(db, f"cursor\0{practice}\0{trigger_key}")
            row = db.execute("SELECT value FROM {p}cursors" + where, key).fetchone()
            if row is not None and row[0] != value:
                db.execute("DELETE FROM {p}cursor_keys" + where, key)
            db.execute(
                "INSERT INTO {p}cursors (practice, trigger_key, value, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (practice, trigger_key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (*key, value, stamp),
            )
            db.executemany(
                "INSERT INTO {p}cursor_keys (practice, trigger_key, dedupe_key) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [(*key, dedupe_key) for dedupe_key in boundary_keys],
            )

    # --- webhook subscriptions ------------------------------------------------------------

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
        """See :meth:`StateStore.save_subscription`: durable (its secret is shown once)."""
        check_value("subscription status", status, SUBSCRIPTION_STATUSES)
        stamp = self._stamp(None, "updated_at")
        values = (practice, trigger_key, subscription_id, event, url, secret, path_token)
        try:
            with self._write(durable=True) as db:
                db.execute(UPSERT_SUBSCRIPTION, (*values, status, stamp, stamp))
                row = db.execute(
                    SELECT_SUBSCRIPTIONS + " WHERE practice = ? AND trigger_key = ?",
                    (practice, trigger_key),
                ).fetchone()
        except Exception as exc:
            clash = self._clash(exc)
            if clash is None:
                raise
            message = (
                f"subscription of {practice!r} / {trigger_key!r} clashes with another "
                f"subscription's path token or subscription id ({clash})"
            )
            raise BugError(message) from None
        return decode_subscription(row, self._load)

    def get_subscription(self, practice: str, trigger_key: str) -> SubscriptionRecord | None:
        """See :meth:`StateStore.get_subscription`."""
        where = " WHERE practice = ? AND trigger_key = ?"
        row = self._one(SELECT_SUBSCRIPTIONS + where, (practice, trigger_key))
        return None if row is None else decode_subscription(row, self._load)

    def find_subscription_by_path(self, path_token: str) -> SubscriptionRecord | None:
        """See :meth:`StateStore.find_subscription_by_path`."""
        row = self._one(SELECT_SUBSCRIPTIONS + " WHERE path_token = ?", (path_token,))
        return None if row is None else decode_subscription(row, self._load)

    def list_subscriptions(self, practice: str | None = None) -> list[SubscriptionRecord]:
        """See :meth:`StateStore.list_subscriptions`."""
        where, params = ("", ()) if practice is None else (" WHERE practice = ?", (practice,))
        rows = self._all(SELECT_SUBSCRIPTIONS + where + " ORDER BY practice, trigger_key", params)
        return [decode_subscription(row, self._load) for row in rows]

    def delete_subscription(self, practice: str, trigger_key: str) -> bool:
        """See :meth:`StateStore.delete_subscription`."""
        with self._write() as db:
            sql = "DELETE FROM {p}subscriptions WHERE practice = ? AND trigger_key = ?"
            return db.execute(sql, (practice, trigger_key)).rowcount == 1

    def record_test_delivery(
        self, practice: str, trigger_key: str, at: datetime | None = None
    ) -> None:
        """See :meth:`StateStore.record_test_delivery`: the latest time is kept."""
        stamp = self._stamp(at, "at")
        with self._write() as db:
            db.execute(UPSERT_TEST_DELIVERY, (practice, trigger_key, stamp))

    def count_resubscribe(self, practice: str, trigger_key: str) -> int:
        """See :meth:`StateStore.count_resubscribe`."""
        with self._write() as db:
            row = db.execute(COUNT_RESUBSCRIBE, (practice, trigger_key)).fetchone()
        return int(row[0])

    def set_test_asked(
        self, practice: str, trigger_key: str, asked_at: datetime | None, event_id: str | None
    ) -> None:
        """See :meth:`StateStore.set_test_asked`."""
        stamp = None if asked_at is None else self._stamp(asked_at, "asked at")
        with self._write() as db:
            db.execute(UPSERT_TEST_ASKED, (practice, trigger_key, stamp, event_id))

    def subscription_health(self, practice: str, trigger_key: str) -> SubscriptionHealth:
        """See :meth:`StateStore.subscription_health`."""
        key = (practice, trigger_key)
        by_webhook = self.dialect.json_text.format(column="payload", key="source")
        delivered = self._one(
            "SELECT MAX(received_at) FROM {p}events WHERE practice = ? AND source = ?"
            " AND " + by_webhook + " = 'webhook'",
            key,
        )
        row = self._one(SELECT_HEALTH, key)
        return SubscriptionHealth(
            practice,
            trigger_key,
            self.dialect.maybe_time(None if delivered is None else delivered[0]),
            self.dialect.maybe_time(None if row is None else row[0]),
            0 if row is None else int(row[1]),
            self.dialect.maybe_time(None if row is None else row[2]),
            None if row is None else row[3],
        )

    # --- runs -----------------------------------------------------------------------------

    def start_run(
        self,
        practice: str,
        recipe: str,
        event_id: str,
        *,
        origin: Json = None,
        run_id: str | None = None,
        created_at: datetime | None = None,
        version: str | None = None,
    ) -> tuple[str, bool]:
        """See :meth:`StateStore.start_run`."""
        key = (practice, recipe, event_id)
        stamp = self._stamp(created_at, "created_at")
        run_id = run_id or uuid.uuid4().hex
        encoded = json_or_null(self.sealer.seal(origin, f"origin of run {run_id}"), run_id)
        with self._write() as db:
            # A racing insert of the same key waits for the winner's commit, then does
            # nothing; the SELECT after it sees the winner's row.
            created = db.execute(
                "INSERT INTO {p}runs (run_id, practice, recipe, event_id, status, origin,"
                " created_at, updated_at, version) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)"
                " ON CONFLICT (practice, recipe, event_id) DO NOTHING RETURNING run_id",
                (run_id, *key, encoded, stamp, stamp, version),
            ).fetchone()
            if created is not None:
                return run_id, True
            sql = "SELECT run_id FROM {p}runs WHERE practice = ? AND recipe = ? AND event_id = ?"
            row = db.execute(sql, key).fetchone()
        return str(row[0]), False

    def get_run(self, run_id: str) -> RunRecord | None:
        """See :meth:`StateStore.get_run`."""
        row = self._one(SELECT_RUNS + " WHERE run_id = ?", (run_id,))
        return None if row is None else decode_run(row, self._load)

    def list_runs(
        self,
        *,
        practice: str | None = None,
        recipe: str | None = None,
        status: RunStatus | None = None,
        event_id: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
        run_id_prefix: str | None = None,
        version: str | None = None,
    ) -> list[RunRecord]:
        """See :meth:`StateStore.list_runs`."""
        if status is not None:
            check_value("run status", status, RUN_STATUSES)
        filters: dict[str, object] = {
            "practice = ?": practice,
            "recipe = ?": recipe,
            "status = ?": status,
            "event_id = ?": event_id,
            "run_id LIKE ? ESCAPE '\\'": like_prefix(run_id_prefix),
            "version LIKE ? ESCAPE '\\'": like_prefix(version),
            "created_at >= ?": None if since is None else self.dialect.dump_time(since, "since"),
        }
        given = {clause: value for clause, value in filters.items() if value is not None}
        where = " AND ".join(given) or "TRUE"
        rows = self._all(
            SELECT_RUNS + " WHERE " + where + " ORDER BY created_at DESC, run_id LIMIT ?",
            (*given.values(), limit),
        )
        return [decode_run(row, self._load) for row in rows]

    def set_run_status(self, run_id: str, status: RunStatus, error: Json = None) -> None:
        """See :meth:`StateStore.set_run_status`."""
        check_value("run status", status, RUN_STATUSES)
        stamp = self._stamp(None, "updated_at")
        encoded = json_or_null(self.sealer.seal(error, f"error of run {run_id}"), run_id)
        with self._write() as db:
            check_run_transition(run_id, self._locked_run(db, run_id), status)
            reset = "" if status == "running" else ", starts = 0"
            sql = "UPDATE {p}runs SET status = ?, error = ?, updated_at = ?" + reset
            db.execute(sql + " WHERE run_id = ?", (status, encoded, stamp, run_id))

    def _locked_run(self, db: SQLConnection, run_id: str) -> RunStatus:
        """The run's status, its row locked for this write transaction where the database
        needs it (every move of a run or of its steps goes through here)."""
        sql = "SELECT status FROM {p}runs WHERE run_id = ?" + self.dialect.lock_row
        row = db.execute(sql, (run_id,)).fetchone()
        if row is None:
            raise BugError(f"run {run_id} does not exist; start_run first")
        status: RunStatus = row[0]
        return status

    def count_start(self, run_id: str) -> int:
        """See :meth:`StateStore.count_start`."""
        stamp = self._stamp(None, "updated_at")
        with self._write() as db:
            check_run_transition(run_id, self._locked_run(db, run_id), "running")
            counted = db.execute(COUNT_START, (stamp, run_id)).fetchone()
        return int(counted[0])

    def uncount_start(self, run_id: str) -> None:
        """See :meth:`StateStore.uncount_start`."""
        with self._write() as db:
            self._locked_run(db, run_id)
            db.execute(
                "UPDATE {p}runs SET starts = starts - 1 WHERE run_id = ? AND starts > 0", (run_id,)
            )

    def purge_payloads(self, before: datetime) -> int:
        """See :meth:`StateStore.purge_payloads` (``retention.py``)."""
        cutoff = self.dialect.dump_time(before, "before")
        with self._write(durable=True) as db:
            return purge_finished(db, cutoff)

    # --- run leases (run_leases.py) -----------------------------------------------------

    def take_run_lease(self, wanted: RunLease, dead: Callable[[RunLease], bool]) -> RunLease:
        """See :meth:`StateStore.take_run_lease`."""
        with self._write() as db:
            self._locked_run(db, wanted.run_id)
            return take_lease(db, wanted, self.now(), dead)

    def renew_run_lease(self, run_id: str, owner: str, expires_at: datetime) -> bool:
        """See :meth:`StateStore.renew_run_lease`."""
        with self._write() as db:
            return renew_lease(db, run_id, owner, self._stamp(expires_at, "expires_at"))

    def release_run_lease(self, run_id: str, owner: str) -> None:
        """See :meth:`StateStore.release_run_lease`."""
        with self._write() as db:
            drop_lease(db, run_id, owner)

    def run_lease(self, run_id: str) -> RunLease | None:
        """See :meth:`StateStore.run_lease`."""
        locked = getattr(self._local, "atomic", None) is not None
        with self._write() if locked else self._join(self._statement) as db:
            if locked:
                self._locked_run(db, run_id)
            return read_lease(db, run_id)

    # --- step journal ---------------------------------------------------------------------

    def _change_step(self, run_id: str, step_id: str, *changes: StepChange) -> None:
        where = f"run {run_id} step {step_id!r}"
        encoded = [encode_step_change(change, where, self.sealer.seal) for change in changes]
        now = self._stamp(None, "updated_at")
        stamps = [now if change.at is None else self._stamp(change.at, "at") for change in changes]
        with self._write(durable=any(change.durable for change in changes)) as db:
            self._locked_run(db, run_id)  # serializes every move of the run's steps
            sql = "SELECT status FROM {p}steps WHERE run_id = ? AND step_id = ?"
            row = db.execute(sql, (run_id, step_id)).fetchone()
            current: StepStatus | None = None if row is None else row[0]
            self._write_step(db, run_id, step_id, current, changes, encoded, stamps)

    def _write_step(
        self,
        db: SQLConnection,
        run_id: str,
        step_id: str,
        current: StepStatus | None,
        changes: Sequence[StepChange],
        encoded: Sequence[Mapping[str, str | None]],
        stamps: Sequence[Any],
    ) -> None:
        """Check and write moves of a step from ``current`` (``None``: no row yet) inside
        ``db``'s write transaction: the step's row, and one history row per move."""
        write = fold_step_changes(run_id, step_id, current, changes, encoded, stamps)
        # Column names are fixed or checked by the encoder; values are parameters.
        columns = write.columns
        if current is None:
            columns.update(
                run_id=run_id, step_id=step_id, attempts=write.sends, created_at=stamps[0]
            )
            marks = ", ".join("?" * len(columns))
            sql = f"INSERT INTO {{p}}steps ({', '.join(columns)}) VALUES ({marks})"
            params: tuple[Any, ...] = tuple(columns.values())
        else:
            sets = [f"{name} = ?" for name in columns]
            if write.sends:
                sets.append(f"attempts = attempts + {write.sends:d}")
            sql = f"UPDATE {{p}}steps SET {', '.join(sets)} WHERE run_id = ? AND step_id = ?"
            params = (*columns.values(), run_id, step_id)
        db.execute(sql, params)
        db.executemany(JOURNAL, write.journal)

    def get_step(self, run_id: str, step_id: str) -> StepRecord | None:
        """See :meth:`StateStore.get_step`."""
        row = self._one(SELECT_STEPS + " WHERE run_id = ? AND step_id = ?", (run_id, step_id))
        return None if row is None else decode_step(row, self._load)

    def get_steps(self, run_id: str) -> list[StepRecord]:
        """See :meth:`StateStore.get_steps`."""
        rows = self._all(SELECT_STEPS + " WHERE run_id = ? ORDER BY seq", (run_id,))
        return [decode_step(row, self._load) for row in rows]

    def step_history(self, run_id: str, step_id: str | None = None) -> list[StepTransition]:
        """See :meth:`StateStore.step_history`."""
        where, params = ("", ()) if step_id is None else (" AND step_id = ?", (step_id,))
        rows = self._all(
            "SELECT run_id, step_id, from_status, to_status, at, who, note, detail"
            " FROM {p}step_journal WHERE run_id = ?" + where + " ORDER BY seq",
            (run_id, *params),
        )
        load = self._load
        return [
            StepTransition(
                r[0], r[1], r[2], r[3], load.load_time(r[4]), r[5], r[6], load.load_json(r[7])
            )
            for r in rows
        ]

    # --- rate budget bookkeeping ----------------------------------------------------------

    def record_requests(self, practice: str, times: Sequence[datetime]) -> None:
        """See :meth:`StateStore.record_requests`."""
        rows = [(practice, self._stamp(at, "at")) for at in times]
        if rows:
            with self._write() as db:
                db.executemany("INSERT INTO {p}requests (practice, at) VALUES (?, ?)", rows)

    def request_counts(self, practice: str, since: datetime) -> int:
        """See :meth:`StateStore.request_counts`."""
        row = self._one(
            "SELECT count(*) FROM {p}requests WHERE practice = ? AND at >= ?",
            (practice, self.dialect.dump_time(since, "since")),
        )
        return int(row[0])

    def purge_requests(self, older_than: timedelta = timedelta(days=2)) -> int:
        """See :meth:`StateStore.purge_requests`."""
        cutoff = self._stamp(self.now() - older_than, "older_than")
        with self._write() as db:
            return db.execute("DELETE FROM {p}requests WHERE at < ?", (cutoff,)).rowcount

    # --- operations ---------------------------------------------------------------------

    def practice_counts(self) -> dict[str, PracticeCounts]:
        """See :meth:`StateStore.practice_counts`."""
        # One snapshot: the three counts describe the same moment.
        with self._join(lambda: self._transaction(snapshot=True)) as db:
            return count_by_practice(db)
