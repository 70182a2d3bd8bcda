"""The store's SQL, written once: :class:`StoreBase` (connections, transactions, times),
:class:`SQLEvents` (events, subscriptions) and :class:`SQLCursors` (cursors, request counts);
``_store.py`` joins them with the other tables' mixins. Each changing method is one commit.
A database subclass never interleaves a read-then-write with another writer's on the same
rows, and leaves uniqueness to the database (``ON CONFLICT``), so that concurrent processes
agree on one event, one run, one subscription.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Final, Self

from practiceflow.errors import BugError
from practiceflow.state._dialect import (
    Connection,
    Dialect,
    SQLConnection,
    _as_read,
    _Row,
    select,
    shape,
)
from practiceflow.state.rows import (
    DEFAULT_KEEP_SEEN,
    SUBSCRIPTION_STATUSES,
    Clock,
    CursorState,
    EventRecord,
    Json,
    NewEvent,
    PracticeCounts,
    SubscriptionHealth,
    SubscriptionRecord,
    SubscriptionStatus,
    check_value,
)
from practiceflow.state.sealing import Sealer, to_json

_UPSERT_SUBSCRIPTION: Final = (
    "INSERT INTO {p}subscriptions (practice, trigger_key, subscription_id, event, url, secret,"
    " path_token, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (practice, trigger_key) DO UPDATE SET"
    " subscription_id = excluded.subscription_id, event = excluded.event,"
    " url = excluded.url, secret = excluded.secret, path_token = excluded.path_token,"
    " status = excluded.status, updated_at = excluded.updated_at"
)

#: The latest test delivery time is kept.
_UPSERT_TEST_DELIVERY: Final = (
    "INSERT INTO {p}subscription_health AS h (practice, trigger_key, last_test_delivery_at)"
    " VALUES (?, ?, ?) ON CONFLICT (practice, trigger_key) DO UPDATE SET"
    " last_test_delivery_at = CASE WHEN h.last_test_delivery_at > excluded.last_test_delivery_at"
    " THEN h.last_test_delivery_at ELSE excluded.last_test_delivery_at END"
)

_UPSERT_TEST_ASKED: Final = (
    "INSERT INTO {p}subscription_health (practice, trigger_key, test_asked_at, test_event_id)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (practice, trigger_key) DO UPDATE SET"
    " test_asked_at = excluded.test_asked_at, test_event_id = excluded.test_event_id"
)

_COUNT_RESUBSCRIBE: Final = (
    "INSERT INTO {p}subscription_health AS h (practice, trigger_key, resubscribes)"
    " VALUES (?, ?, 1) ON CONFLICT (practice, trigger_key)"
    " DO UPDATE SET resubscribes = h.resubscribes + 1 RETURNING resubscribes"
)


@dataclass
class _Atomic:
    """An open :meth:`StoreBase.atomic` block of one thread."""

    connection: SQLConnection
    durable: bool


def decode(dialect: Dialect, record: type[_Row], row: Sequence[Any]) -> _Row:
    """A row as a ``record`` whose fields are its columns, each read by its annotation."""
    read: dict[str, Callable[[Any], Any]] = {
        "datetime": dialect.load_time,
        "datetime | None": dialect.maybe_time,
        "Json": dialect.load_json,
        "int": int,
    }
    values = zip(shape(record)[1], row, strict=True)
    return record(*(read.get(kind, _as_read)(value) for kind, value in values))


class StoreBase(ABC):
    """Connections, transactions and times of a store (see the module docstring)."""

    dialect: ClassVar[Dialect]
    #: Every commit is durable (the database cannot relax one): ``durable`` needs nothing.
    always_durable: ClassVar[bool] = False

    def __init__(self, *, clock: Clock | None = None, key_file: Path | None = None) -> None:
        self._clock: Clock = clock or (lambda: datetime.now(UTC))
        self._local = threading.local()
        self.sealer = Sealer(key_file)
        self.sealer.check()  # a key given but unusable is said at open, not at a first write
        #: The dialect whose JSON columns are opened as they are read.
        self._load = replace(
            self.dialect, load_json=lambda value: self.sealer.open(self.dialect.load_json(value))
        )

    @classmethod
    @abstractmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> Self:
        """Open the store a URL of this store's scheme names (ConfigError if unusable)."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; the store cannot be used afterwards."""

    def now(self) -> datetime:
        """The store's current time (UTC), from the injected clock when there is one."""
        return self._clock().astimezone(UTC)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def _transaction(
        self, *, durable: bool = False, snapshot: bool = False
    ) -> AbstractContextManager[Connection]:
        """One transaction, committed on exit: a read of one state (``snapshot``), else a
        serialized write, fsynced when ``durable``."""

    @abstractmethod
    def _statement(self) -> AbstractContextManager[Connection]:
        """A connection for one statement that is its own transaction."""

    def _lock(self, db: SQLConnection, key: str) -> None:  # noqa: B027 (a default, not abstract)
        """Lock ``key`` until ``db``'s write transaction ends (here: writes are serial)."""

    @abstractmethod
    def _clash(self, exc: Exception) -> str | None:
        """The unique key an exception says was violated (never a value: it may be a secret)."""

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

    def _snapshot(self) -> AbstractContextManager[SQLConnection]:
        return self._join(lambda: self._transaction(snapshot=True))

    def _write(self, *, durable: bool = False) -> AbstractContextManager[SQLConnection]:
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if durable and outer is not None and not outer.durable:
            message = "a durable write inside atomic() opened without durable=True"
            raise BugError(message)
        return self._join(lambda: self._transaction(durable=durable))

    def _writes_alone(self) -> AbstractContextManager[SQLConnection]:
        """Writes each atomic alone, needing no transaction around them (here: one write
        transaction, its lock and checks; PostgreSQL sends each as its own statement)."""
        return self._write()

    @contextmanager
    def atomic(self, *, durable: bool = False) -> Iterator[None]:
        """Make the calls inside one transaction of this thread: one commit, all or none.

        Only an optimisation: callers must be correct committing one by one. A call that
        raises aborts it all; a nested block joins it. ``durable`` fsyncs the commit: a
        durable call inside a block opened without it is a BugError (SQLite fixes it at BEGIN).
        """
        with self._write(durable=durable) as connection:
            if getattr(self._local, "atomic", None) is not None:  # a nested block joins it
                yield
                return
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

    def _records(
        self, record: type[_Row], table: str, where: str = "", params: Sequence[Any] = ()
    ) -> list[_Row]:
        """The rows of ``{p}table`` that ``where`` (with ORDER BY...) keeps, as records."""
        rows = self._all(select(record, table) + where, params)
        return [decode(self._load, record, row) for row in rows]

    def _record(
        self, record: type[_Row], table: str, where: str, params: Sequence[Any]
    ) -> _Row | None:
        """The first of :meth:`_records`, or None."""
        return next(iter(self._records(record, table, where, params)), None)


class SQLEvents(StoreBase):
    """The events and the webhook subscriptions, and the store's own figures."""

    scheme: ClassVar[str]
    local_reads: ClassVar[bool] = False

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        return int(self._one("SELECT version FROM {p}schema_version")[0])

    def record_event(
        self,
        practice: str,
        source: str,
        event_key: str,
        event_id: str,
        payload: Json,
        signature: str | None = None,
        received_at: datetime | None = None,
    ) -> bool:
        """Record an incoming event (fields: :class:`NewEvent`) unless it was seen: returns
        ``False`` when its id or its signature (a replay under a new id) was recorded."""
        event = NewEvent(practice, source, event_key, event_id, payload, signature, received_at)
        return self.record_events([event])[0]

    def record_events(self, events: Sequence[NewEvent]) -> list[bool]:
        """Record several events in **one** durable commit (all or none), each as
        :meth:`record_event` would: for each, whether it was new (``group_commit.py``)."""
        rows = [
            (
                event.practice, event.source, event.event_key, event.event_id, event.signature,
                to_json(self.sealer.seal(event.payload, f"payload of event {event.event_id}"),
                        "a sealed payload"),
                self._stamp(event.received_at, "received_at"),
            )
            for event in events
        ]  # fmt: skip
        if not rows:
            return []
        # DO NOTHING without a target covers both unique keys (the id, the signature),
        # within the batch too; RETURNING names the rows inserted.
        values = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(rows))
        sql = (
            "INSERT INTO {p}events (practice, source, event_key, event_id, signature, payload,"
            f" received_at) VALUES {values}"
            " ON CONFLICT DO NOTHING RETURNING practice, source, event_id"
        )
        with self._write(durable=True) as db:
            inserted = set(db.execute(sql, [value for row in rows for value in row]).fetchall())
        answers = []
        for row in rows:  # a key's first row in the batch is the one inserted
            key = (row[0], row[1], row[3])
            answers.append(key in inserted)
            inserted.discard(key)
        return answers

    def seen_event(
        self, practice: str, source: str, event_id: str, signature: str | None = None
    ) -> bool:
        """Whether an event with this id (or, when given, this signature) was recorded."""
        where, params = "event_id = ?", [practice, source, event_id]
        if signature is not None:
            where, params = "(event_id = ? OR signature = ?)", [*params, signature]
        sql = "SELECT 1 FROM {p}events WHERE practice = ? AND source = ? AND " + where
        row = self._one(sql + " LIMIT 1", params)
        return row is not None

    def get_event(self, practice: str, source: str, event_id: str) -> EventRecord | None:
        """One recorded event, or ``None``."""
        where = " WHERE practice = ? AND source = ? AND event_id = ?"
        return self._record(EventRecord, "events", where, (practice, source, event_id))

    def pending_events(
        self, practice: str, limit: int = 100, *, source: str | None = None
    ) -> list[EventRecord]:
        """Events not yet handled, oldest first (only from ``source`` when given)."""
        where, params = "practice = ? AND handled_at IS NULL", [practice]
        if source is not None:
            where, params = where + " AND source = ?", [*params, source]
        order = " ORDER BY received_at, seq LIMIT ?"
        return self._records(EventRecord, "events", " WHERE " + where + order, (*params, limit))

    def mark_event_handled(
        self, practice: str, source: str, event_id: str, handled_at: datetime | None = None
    ) -> None:
        """Mark an event handled (the first time is kept); BugError if never recorded."""
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
        """Forget handled events received more than ``older_than`` ago; returns how many.
        Unhandled events are never purged; a redelivery after ``older_than`` is taken as new."""
        cutoff = self._stamp(self.now() - older_than, "older_than")
        with self._write() as db:
            sql = "DELETE FROM {p}events WHERE handled_at IS NOT NULL AND received_at < ?"
            return db.execute(sql, (cutoff,)).rowcount

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
        """Create or replace the subscription of (practice, trigger_key).

        Save it ``pending`` before subscribing (so a delivery racing the answer finds it),
        then ``active`` with the id and secret, or ``in_doubt`` if the answer was lost.
        BugError: an invalid ``status``, or a path token or id of another subscription.
        """
        check_value("subscription status", status, SUBSCRIPTION_STATUSES)
        stamp = self._stamp(None, "updated_at")
        # The secret signs deliveries: sealed at rest like the runs' data (a dump or a
        # backup shows none of it); the empty secret of a pending subscription stays empty.
        sealed = to_json(self.sealer.seal(secret, "webhook secret"), "a sealed secret")
        stored = sealed if secret else secret
        values = (practice, trigger_key, subscription_id, event, url, stored, path_token)
        try:
            with self._write(durable=True) as db:
                db.execute(_UPSERT_SUBSCRIPTION, (*values, status, stamp, stamp))
                row = db.execute(
                    select(SubscriptionRecord, "subscriptions")
                    + " WHERE practice = ? AND trigger_key = ?",
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
        return self._secret_opened(decode(self._load, SubscriptionRecord, row))

    def get_subscription(self, practice: str, trigger_key: str) -> SubscriptionRecord | None:
        """The subscription of a trigger, or ``None``."""
        where = " WHERE practice = ? AND trigger_key = ?"
        found = self._record(SubscriptionRecord, "subscriptions", where, (practice, trigger_key))
        return None if found is None else self._secret_opened(found)

    def find_subscription_by_path(self, path_token: str) -> SubscriptionRecord | None:
        """The subscription a delivery's URL path token routes to, or ``None``."""
        where = " WHERE path_token = ?"
        found = self._record(SubscriptionRecord, "subscriptions", where, (path_token,))
        return None if found is None else self._secret_opened(found)

    def list_subscriptions(self, practice: str | None = None) -> list[SubscriptionRecord]:
        """Subscriptions of one practice, or of all when ``practice`` is ``None``."""
        where, params = ("", ()) if practice is None else (" WHERE practice = ?", (practice,))
        where += " ORDER BY practice, trigger_key"
        found = self._records(SubscriptionRecord, "subscriptions", where, params)
        return [self._secret_opened(record) for record in found]

    def _secret_opened(self, record: SubscriptionRecord) -> SubscriptionRecord:
        """A subscription, its secret opened (one stored before sealing is plain)."""
        if record.secret.startswith("{"):
            return replace(record, secret=self.sealer.open(json.loads(record.secret)))
        return record

    def delete_subscription(self, practice: str, trigger_key: str) -> bool:
        """Forget a subscription; ``True`` when there was one."""
        with self._write() as db:
            sql = "DELETE FROM {p}subscriptions WHERE practice = ? AND trigger_key = ?"
            return db.execute(sql, (practice, trigger_key)).rowcount == 1

    def record_test_delivery(
        self, practice: str, trigger_key: str, at: datetime | None = None
    ) -> None:
        """Note a verified test delivery to a trigger (``at``: now); the latest is kept."""
        stamp = self._stamp(at, "at")
        with self._write() as db:
            db.execute(_UPSERT_TEST_DELIVERY, (practice, trigger_key, stamp))

    def count_resubscribe(self, practice: str, trigger_key: str) -> int:
        """Count one re-subscribe of a trigger's lost subscription; returns the new count."""
        with self._write() as db:
            row = db.execute(_COUNT_RESUBSCRIBE, (practice, trigger_key)).fetchone()
        return int(row[0])

    def set_test_asked(
        self, practice: str, trigger_key: str, asked_at: datetime | None, event_id: str | None
    ) -> None:
        """Note that a test delivery was asked for at ``asked_at`` (None: no longer awaited)
        and the event id the ``/test`` answer gave it."""
        stamp = None if asked_at is None else self._stamp(asked_at, "asked at")
        with self._write() as db:
            db.execute(_UPSERT_TEST_ASKED, (practice, trigger_key, stamp, event_id))

    def subscription_health(self, practice: str, trigger_key: str) -> SubscriptionHealth:
        """Last delivery (newest webhook event kept), test delivery and re-subscribes."""
        by_webhook = self.dialect.json_text.format(column="payload", key="source")
        row = self._one(
            "SELECT (SELECT MAX(received_at) FROM {p}events WHERE practice = ? AND source = ?"
            " AND " + by_webhook + " = 'webhook'), h.last_test_delivery_at,"
            " coalesce(h.resubscribes, 0), h.test_asked_at, h.test_event_id FROM (SELECT 1) AS one"
            " LEFT JOIN {p}subscription_health h ON h.practice = ? AND h.trigger_key = ?",
            (practice, trigger_key) * 2,
        )
        return decode(self.dialect, SubscriptionHealth, (practice, trigger_key, *row))

    def practice_counts(self) -> dict[str, PracticeCounts]:
        """Practice -> runs by status, steps in doubt and events waiting (``/metrics``),
        in one snapshot; a practice with no run and no event is absent."""
        with self._snapshot() as db:
            runs = db.execute(
                "SELECT practice, status, count(*) FROM {p}runs GROUP BY practice, status"
            ).fetchall()
            doubt = db.execute(
                "SELECT r.practice, count(*) FROM {p}steps s JOIN {p}runs r"
                " ON r.run_id = s.run_id WHERE s.status = 'in_doubt' GROUP BY r.practice"
            ).fetchall()
            waiting = db.execute(
                "SELECT practice, count(*) FROM {p}events WHERE handled_at IS NULL"
                " GROUP BY practice"
            ).fetchall()
        by_status: dict[str, dict[str, int]] = {}
        for practice, status, count in runs:
            by_status.setdefault(str(practice), {})[str(status)] = int(count)
        in_doubt = {str(row[0]): int(row[1]) for row in doubt}
        pending = {str(row[0]): int(row[1]) for row in waiting}
        return {
            practice: PracticeCounts(
                by_status.get(practice, {}), in_doubt.get(practice, 0), pending.get(practice, 0)
            )
            for practice in sorted({*by_status, *in_doubt, *pending})
        }


class SQLCursors(StoreBase):
    """The cursors' and request counts' part of :class:`~practiceflow.state.StateStore`."""

    def get_cursor_state(self, practice: str, trigger_key: str) -> CursorState | None:
        """The cursor with its boundary keys, or ``None`` before the first poll."""
        key = (practice, trigger_key)
        where = " WHERE practice = ? AND trigger_key = ?"
        # One snapshot: the value and its keys belong together.
        with self._snapshot() as db:
            row = db.execute("SELECT value, updated_at FROM {p}cursors" + where, key).fetchone()
            if row is None:
                return None
            keys = db.execute("SELECT dedupe_key FROM {p}cursor_keys" + where, key).fetchall()
        boundary = frozenset(str(k[0]) for k in keys)
        return CursorState(practice, trigger_key, row[0], boundary, self.dialect.load_time(row[1]))

    def cursor_states(self) -> list[CursorState]:
        """Every cursor of every practice with its boundary keys, in one snapshot."""
        with self._snapshot() as db:
            rows = db.execute("SELECT practice, trigger_key, value, updated_at FROM {p}cursors")
            cursors = rows.fetchall()
            keys = db.execute("SELECT practice, trigger_key, dedupe_key FROM {p}cursor_keys")
            boundary: dict[tuple[str, str], set[str]] = {}
            for practice, trigger_key, key in keys.fetchall():
                boundary.setdefault((practice, trigger_key), set()).add(str(key))
        load = self.dialect.load_time
        return [
            CursorState(p, k, value, frozenset(boundary.get((p, k), ())), load(at))
            for p, k, value, at in cursors
        ]

    def get_cursor(self, practice: str, trigger_key: str) -> str | None:
        """The cursor value, or ``None`` before the first poll."""
        state = self.get_cursor_state(practice, trigger_key)
        return None if state is None else state.value

    def set_cursor(
        self, practice: str, trigger_key: str, value: str, boundary_keys: Iterable[str] = ()
    ) -> None:
        """Move the cursor (only once the events up to ``value`` are handled) with its
        ``boundary_keys``: added to those kept when ``value`` is the stored one, else
        replacing them."""
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

    def record_request(self, practice: str, at: datetime | None = None) -> None:
        """Count one request sent with a practice's credentials (for reports)."""
        self.record_requests(practice, [self.now() if at is None else at])

    def record_requests(self, practice: str, times: Sequence[datetime]) -> None:
        """Count several requests, sent at ``times``, in one commit (see ``RequestLog``)."""
        rows = [(practice, self._stamp(at, "at")) for at in times]
        if rows:
            with self._write() as db:
                db.executemany("INSERT INTO {p}requests (practice, at) VALUES (?, ?)", rows)

    def request_counts(self, practice: str, since: datetime) -> int:
        """How many requests were recorded for a practice at or after ``since``."""
        row = self._one(
            "SELECT count(*) FROM {p}requests WHERE practice = ? AND at >= ?",
            (practice, self.dialect.dump_time(since, "since")),
        )
        return int(row[0])

    def purge_requests(self, older_than: timedelta = timedelta(days=2)) -> int:
        """Forget request records older than ``older_than``; returns how many."""
        cutoff = self._stamp(self.now() - older_than, "older_than")
        with self._write() as db:
            return db.execute("DELETE FROM {p}requests WHERE at < ?", (cutoff,)).rowcount
