"""The fleet's state store: PostgreSQL through psycopg 3 and a psycopg-pool connection pool.

Durability and concurrency choices, and why:

* every method that changes something is one transaction (``READ COMMITTED``), committed
  before it returns, with the server's default ``synchronous_commit = on``: a step marked
  ``sent`` is on the server's disk before the request leaves;
* uniqueness is the database's: one run per (practice, recipe, event) and one event per
  id or signature are unique indexes, and ``INSERT ... ON CONFLICT DO NOTHING`` makes
  racing replicas agree without a lock of ours;
* a read-then-write takes a row lock (``FOR UPDATE`` on the run, for its status and its
  steps) or a transaction-scoped advisory lock (a cursor and its boundary keys), so two
  replicas never interleave one;
* ``pf_schema_version`` holds the schema version. Opening an empty database creates the
  schema; opening an older one is refused until ``practiceflow db migrate`` upgrades it
  (a replica of a rolling deploy must not change the schema under the others), and a
  newer one is refused outright. :func:`migrate` serializes concurrent callers with an
  advisory lock.

Errors never echo the URL's password: the store's ``repr`` and messages name host, port
and database only.
"""

from __future__ import annotations

import threading
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Final, Self

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool

from practiceflow.errors import BugError, ConfigError
from practiceflow.state._postgres_schema import (
    CONNECT_TIMEOUT_S,
    LATEST_VERSION,
    SELECT_EVENTS,
    SELECT_RUNS,
    SELECT_STEPS,
    SELECT_SUBSCRIPTIONS,
    Migration,
    connect,
    decode_event,
    decode_run,
    decode_step,
    decode_subscription,
    describe_url,
    migrate,
    migrate_on,
    read_version,
    refuse_newer,
    schema_version,
    utc,
)
from practiceflow.state._postgres_steps import (
    apply_step_changes,
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
    StepTransition,
    SubscriptionHealth,
    SubscriptionRecord,
    SubscriptionStatus,
    check_run_transition,
    check_value,
    event_rows,
    first_occurrences,
    json_or_null,
    to_utc,
)
from practiceflow.state.steps import encode_step_change

__all__ = ["Migration", "PostgresStore", "describe_url", "migrate", "schema_version"]

_INSERT_EVENTS_HEAD: Final = (
    "INSERT INTO pf_events (practice, source, event_key, event_id, signature, payload,"
    " received_at) VALUES "
)
_EVENT_VALUES: Final = "(%s, %s, %s, %s, %s, %s::json, %s)"
_INSERT_EVENTS_TAIL: Final = " ON CONFLICT DO NOTHING RETURNING practice, source, event_id"
_DEFAULT_POOL_SIZE: Final = 8


def _aware(value: datetime, what: str) -> datetime:
    to_utc(value, what)  # refuses a naive datetime with a ConfigError
    return value.astimezone(UTC)


class PostgresStore(StateStore):
    """The state store in a PostgreSQL database, shared by every replica of a fleet.

    Args:
        url: a ``postgresql://user:password@host:port/dbname`` URL (libpq form; any
            libpq parameter may follow as a query string).
        clock: the current time, for tests; the system clock when omitted.
        pool_size: at most this many connections (threads beyond it wait for one).

    Raises:
        ConfigError: the database cannot be reached, or its schema is older (run
            ``practiceflow db migrate``) or newer than this practiceflow's.
    """

    scheme: ClassVar[str] = "postgresql"

    def __init__(
        self, url: str, *, clock: Clock | None = None, pool_size: int = _DEFAULT_POOL_SIZE
    ) -> None:
        super().__init__(clock=clock)
        self._where = describe_url(url)
        self._closed = False
        self._local = threading.local()
        self._open_schema(url)
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            open=True,
            name="practiceflow-state",
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S},
        )

    @classmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> Self:
        """Open the store at a ``postgresql://`` (or ``postgres://``) URL.

        Raises:
            ConfigError: see the class.
        """
        return cls(url, clock=clock)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where!r})"

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        with self._tx() as db:
            return read_version(db)

    def close(self) -> None:
        """Close the pool; further use raises :class:`BugError`."""
        self._closed = True
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()

    # --- connections and transactions -------------------------------------------------------

    def _open_schema(self, url: str) -> None:
        with connect(url) as connection:
            current = read_version(connection)
            connection.commit()
            refuse_newer(url, current)
            if current == 0:
                migrate_on(connection, url)
            elif current < LATEST_VERSION:
                message = (
                    f"state database {self._where} has schema version {current}, older than "
                    f"the {LATEST_VERSION} this practiceflow needs; run 'practiceflow db "
                    "migrate --state URL' once (with the older replicas stopped)"
                )
                raise ConfigError(message)

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Any]]:
        """One transaction, committed on exit (rolled back on an exception); inside
        :meth:`atomic`, the block's."""
        outer: psycopg.Connection[Any] | None = getattr(self._local, "atomic", None)
        if outer is not None:
            yield outer
            return
        if self._closed:
            message = f"state store {self._where} is closed; open it again to use it"
            raise BugError(message)
        with self._pool.connection() as connection:
            yield connection

    @contextmanager
    def atomic(
        self, *, durable: bool = False, before_commit: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """See :meth:`StateStore.atomic`: the calls inside share one pooled connection's
        transaction. Every commit is durable here (``synchronous_commit = on``);
        ``before_commit`` runs just before the commit's round trip to the server."""
        del durable
        if getattr(self._local, "atomic", None) is not None:
            yield
            return
        with self._tx() as connection:
            self._local.atomic = connection
            try:
                yield
            finally:
                self._local.atomic = None
            if before_commit is not None:
                before_commit()

    def _one(self, sql: str, params: Iterable[Any] = ()) -> Any:
        with self._tx() as db:
            return db.execute(sql, tuple(params)).fetchone()

    def _all(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        with self._tx() as db:
            return db.execute(sql, tuple(params)).fetchall()

    def _stamp(self, value: datetime | None, what: str) -> datetime:
        return _aware(self.now() if value is None else value, what)

    # --- events -----------------------------------------------------------------------------

    def record_events(self, events: Sequence[NewEvent]) -> list[bool]:
        """See :meth:`StateStore.record_events`: one transaction, one commit."""
        rows = event_rows(events, self._stamp)
        if not rows:
            return []
        sql = _INSERT_EVENTS_HEAD + ", ".join([_EVENT_VALUES] * len(rows)) + _INSERT_EVENTS_TAIL
        with self._tx() as db:
            # One statement for the batch. DO NOTHING without a target covers both unique
            # keys, the event id and the signature, within the batch too.
            inserted = db.execute(sql, [value for row in rows for value in row]).fetchall()
        return first_occurrences(rows, inserted)

    def seen_event(
        self, practice: str, source: str, event_id: str, signature: str | None = None
    ) -> bool:
        """See :meth:`StateStore.seen_event`."""
        row = self._one(
            "SELECT 1 FROM pf_events WHERE practice = %s AND source = %s"
            " AND (event_id = %s OR (%s::text IS NOT NULL AND signature = %s)) LIMIT 1",
            (practice, source, event_id, signature, signature),
        )
        return row is not None

    def get_event(self, practice: str, source: str, event_id: str) -> EventRecord | None:
        """See :meth:`StateStore.get_event`."""
        row = self._one(
            SELECT_EVENTS + " WHERE practice = %s AND source = %s AND event_id = %s",
            (practice, source, event_id),
        )
        return None if row is None else decode_event(row)

    def pending_events(
        self, practice: str, limit: int = 100, *, source: str | None = None
    ) -> list[EventRecord]:
        """See :meth:`StateStore.pending_events`."""
        rows = self._all(
            SELECT_EVENTS + " WHERE practice = %s"
            " AND handled_at IS NULL AND (%s::text IS NULL OR source = %s)"
            " ORDER BY received_at, seq LIMIT %s",
            (practice, source, source, limit),
        )
        return [decode_event(row) for row in rows]

    def mark_event_handled(
        self, practice: str, source: str, event_id: str, handled_at: datetime | None = None
    ) -> None:
        """See :meth:`StateStore.mark_event_handled`."""
        stamp = self._stamp(handled_at, "handled_at")
        with self._tx() as db:
            cursor = db.execute(
                "UPDATE pf_events SET handled_at = coalesce(handled_at, %s)"
                " WHERE practice = %s AND source = %s AND event_id = %s",
                (stamp, practice, source, event_id),
            )
            if cursor.rowcount == 0:
                message = f"event {event_id!r} of {practice!r} from {source!r} was never recorded"
                raise BugError(message)

    def purge_seen(self, older_than: timedelta = DEFAULT_KEEP_SEEN) -> int:
        """See :meth:`StateStore.purge_seen`."""
        cutoff = self.now() - older_than
        with self._tx() as db:
            cursor = db.execute(
                "DELETE FROM pf_events WHERE handled_at IS NOT NULL AND received_at < %s",
                (cutoff,),
            )
            return cursor.rowcount

    # --- polling cursors --------------------------------------------------------------------

    def get_cursor_state(self, practice: str, trigger_key: str) -> CursorState | None:
        """See :meth:`StateStore.get_cursor_state`."""
        key = (practice, trigger_key)
        with self._tx() as db:
            # One REPEATABLE READ snapshot: the value and its keys belong together.
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            row = db.execute(
                "SELECT value, updated_at FROM pf_cursors WHERE practice = %s AND trigger_key = %s",
                key,
            ).fetchone()
            if row is None:
                return None
            keys = db.execute(
                "SELECT dedupe_key FROM pf_cursor_keys WHERE practice = %s AND trigger_key = %s",
                key,
            ).fetchall()
        boundary = frozenset(str(k[0]) for k in keys)
        return CursorState(practice, trigger_key, row[0], boundary, utc(row[1]))

    def set_cursor(
        self, practice: str, trigger_key: str, value: str, boundary_keys: Iterable[str] = ()
    ) -> None:
        """See :meth:`StateStore.set_cursor`."""
        key = (practice, trigger_key)
        stamp = self._stamp(None, "updated_at")
        lock = zlib.crc32(f"cursor\0{practice}\0{trigger_key}".encode())
        with self._tx() as db:
            # The cursor may not exist yet (no row to lock): an advisory lock on its key.
            db.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
            row = db.execute(
                "SELECT value FROM pf_cursors WHERE practice = %s AND trigger_key = %s", key
            ).fetchone()
            if row is not None and row[0] != value:
                db.execute(
                    "DELETE FROM pf_cursor_keys WHERE practice = %s AND trigger_key = %s", key
                )
            db.execute(
                "INSERT INTO pf_cursors (practice, trigger_key, value, updated_at)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (practice, trigger_key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (*key, value, stamp),
            )
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO pf_cursor_keys (practice, trigger_key, dedupe_key)"
                    " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
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
            with self._tx() as db:
                db.execute(
                    "INSERT INTO pf_subscriptions (practice, trigger_key, subscription_id,"
                    " event, url, secret, path_token, status, created_at, updated_at)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (practice, trigger_key) DO UPDATE SET"
                    " subscription_id = excluded.subscription_id, event = excluded.event,"
                    " url = excluded.url, secret = excluded.secret,"
                    " path_token = excluded.path_token, status = excluded.status,"
                    " updated_at = excluded.updated_at",
                    (*values, status, stamp, stamp),
                )
                row = db.execute(
                    SELECT_SUBSCRIPTIONS + " WHERE practice = %s AND trigger_key = %s",
                    (practice, trigger_key),
                ).fetchone()
        except pg_errors.UniqueViolation as exc:
            # The server's detail quotes the clashing values; only the constraint is named.
            message = (
                f"subscription of {practice!r} / {trigger_key!r} clashes with another "
                f"subscription's path token or subscription id ({exc.diag.constraint_name})"
            )
            raise BugError(message) from None
        if row is None:  # pragma: no cover - the row was written in this very transaction.
            raise BugError(f"subscription of {practice!r} / {trigger_key!r} vanished")
        return decode_subscription(row)

    def get_subscription(self, practice: str, trigger_key: str) -> SubscriptionRecord | None:
        """See :meth:`StateStore.get_subscription`."""
        row = self._one(
            SELECT_SUBSCRIPTIONS + " WHERE practice = %s AND trigger_key = %s",
            (practice, trigger_key),
        )
        return None if row is None else decode_subscription(row)

    def find_subscription_by_path(self, path_token: str) -> SubscriptionRecord | None:
        """See :meth:`StateStore.find_subscription_by_path`."""
        row = self._one(SELECT_SUBSCRIPTIONS + " WHERE path_token = %s", (path_token,))
        return None if row is None else decode_subscription(row)

    def list_subscriptions(self, practice: str | None = None) -> list[SubscriptionRecord]:
        """See :meth:`StateStore.list_subscriptions`."""
        rows = self._all(
            SELECT_SUBSCRIPTIONS
            + " WHERE %s::text IS NULL OR practice = %s ORDER BY practice, trigger_key",
            (practice, practice),
        )
        return [decode_subscription(row) for row in rows]

    def delete_subscription(self, practice: str, trigger_key: str) -> bool:
        """See :meth:`StateStore.delete_subscription`."""
        with self._tx() as db:
            cursor = db.execute(
                "DELETE FROM pf_subscriptions WHERE practice = %s AND trigger_key = %s",
                (practice, trigger_key),
            )
            return cursor.rowcount == 1

    def record_test_delivery(
        self, practice: str, trigger_key: str, at: datetime | None = None
    ) -> None:
        """See :meth:`StateStore.record_test_delivery`."""
        stamp = self._stamp(at, "at")
        with self._tx() as db:
            db.execute(
                "INSERT INTO pf_subscription_health (practice, trigger_key,"
                " last_test_delivery_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (practice, trigger_key) DO UPDATE SET last_test_delivery_at ="
                " GREATEST(pf_subscription_health.last_test_delivery_at,"
                " excluded.last_test_delivery_at)",
                (practice, trigger_key, stamp),
            )

    def count_resubscribe(self, practice: str, trigger_key: str) -> int:
        """See :meth:`StateStore.count_resubscribe`."""
        with self._tx() as db:
            row = db.execute(
                "INSERT INTO pf_subscription_health (practice, trigger_key, resubscribes)"
                " VALUES (%s, %s, 1) ON CONFLICT (practice, trigger_key) DO UPDATE SET"
                " resubscribes = pf_subscription_health.resubscribes + 1"
                " RETURNING resubscribes",
                (practice, trigger_key),
            ).fetchone()
        if row is None:  # pragma: no cover - RETURNING always gives the row.
            raise BugError(f"re-subscribe count of {practice!r} / {trigger_key!r} vanished")
        return int(row[0])

    def subscription_health(self, practice: str, trigger_key: str) -> SubscriptionHealth:
        """See :meth:`StateStore.subscription_health`."""
        key = (practice, trigger_key)
        delivered = self._one(
            "SELECT MAX(received_at) FROM pf_events WHERE practice = %s AND source = %s"
            " AND payload->>'source' = 'webhook'",
            key,
        )
        row = self._one(
            "SELECT last_test_delivery_at, resubscribes FROM pf_subscription_health"
            " WHERE practice = %s AND trigger_key = %s",
            key,
        )
        last = delivered[0] if delivered is not None else None
        test = row[0] if row is not None else None
        return SubscriptionHealth(
            practice,
            trigger_key,
            None if last is None else last.astimezone(UTC),
            None if test is None else test.astimezone(UTC),
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
        with self._tx() as db:
            # A racing insert of the same key waits for the winner's commit, then does
            # nothing; the SELECT (a new snapshot under READ COMMITTED) sees the winner's row.
            created = db.execute(
                "INSERT INTO pf_runs (run_id, practice, recipe, event_id, status, created_at,"
                " updated_at) VALUES (%s, %s, %s, %s, 'pending', %s, %s)"
                " ON CONFLICT (practice, recipe, event_id) DO NOTHING RETURNING run_id",
                (run_id, *key, stamp, stamp),
            ).fetchone()
            if created is not None:
                # A run created just now has no steps: each skip is the step's first move
                # (and no other transaction sees the run before this one commits).
                for (step_id, move), fields in zip(skips, encoded, strict=True):
                    apply_step_changes(db, run_id, step_id, None, (move,), (fields,), (stamp,))
                return run_id, True
            row = db.execute(
                "SELECT run_id FROM pf_runs WHERE practice = %s AND recipe = %s AND event_id = %s",
                key,
            ).fetchone()
        if row is None:  # pragma: no cover - the conflict means the row exists.
            raise BugError(f"run of {practice!r} / {recipe!r} / {event_id!r} vanished")
        return str(row[0]), False

    def get_run(self, run_id: str) -> RunRecord | None:
        """See :meth:`StateStore.get_run`."""
        row = self._one(SELECT_RUNS + " WHERE run_id = %s", (run_id,))
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
        filters: dict[str, object] = {
            "practice = %s": practice,
            "recipe = %s": recipe,
            "status = %s": status,
            "event_id = %s": event_id,
            "created_at >= %s": None if since is None else _aware(since, "since"),
        }
        given = {clause: value for clause, value in filters.items() if value is not None}
        where = " AND ".join(given) or "TRUE"
        rows = self._all(
            SELECT_RUNS + " WHERE " + where + " ORDER BY created_at DESC, run_id LIMIT %s",
            (*given.values(), limit),
        )
        return [decode_run(row) for row in rows]

    def set_run_status(self, run_id: str, status: RunStatus, error: Json = None) -> None:
        """See :meth:`StateStore.set_run_status`."""
        check_value("run status", status, RUN_STATUSES)
        stamp = self._stamp(None, "updated_at")
        encoded = json_or_null(error, f"error of run {run_id}")
        with self._tx() as db:
            row = db.execute(
                "SELECT status FROM pf_runs WHERE run_id = %s FOR UPDATE", (run_id,)
            ).fetchone()
            if row is None:
                raise BugError(f"run {run_id} does not exist")
            check_run_transition(run_id, row[0], status)
            db.execute(
                "UPDATE pf_runs SET status = %s, error = %s::json, updated_at = %s"
                " WHERE run_id = %s",
                (status, encoded, stamp, run_id),
            )

    # --- step journal -----------------------------------------------------------------------

    def _change_step(self, run_id: str, step_id: str, *changes: StepChange) -> None:
        # Every commit is durable here (synchronous_commit = on): ``durable`` needs nothing.
        where = f"run {run_id} step {step_id!r}"
        encoded = [encode_step_change(change, where) for change in changes]
        now = self._stamp(None, "updated_at")
        stamps = [now if change.at is None else self._stamp(change.at, "at") for change in changes]
        with self._tx() as db:
            # The run's row lock serializes every move of its steps across replicas.
            locked = db.execute(
                "SELECT 1 FROM pf_runs WHERE run_id = %s FOR NO KEY UPDATE", (run_id,)
            ).fetchone()
            if locked is None:
                raise BugError(f"run {run_id} does not exist; start_run first")
            row = db.execute(
                "SELECT status FROM pf_steps WHERE run_id = %s AND step_id = %s",
                (run_id, step_id),
            ).fetchone()
            current = None if row is None else row[0]
            apply_step_changes(db, run_id, step_id, current, changes, encoded, stamps)

    def get_step(self, run_id: str, step_id: str) -> StepRecord | None:
        """See :meth:`StateStore.get_step`."""
        row = self._one(SELECT_STEPS + " WHERE run_id = %s AND step_id = %s", (run_id, step_id))
        return None if row is None else decode_step(row)

    def get_steps(self, run_id: str) -> list[StepRecord]:
        """See :meth:`StateStore.get_steps`."""
        rows = self._all(SELECT_STEPS + " WHERE run_id = %s ORDER BY seq", (run_id,))
        return [decode_step(row) for row in rows]

    def step_history(self, run_id: str, step_id: str | None = None) -> list[StepTransition]:
        """See :meth:`StateStore.step_history`."""
        rows = self._all(
            "SELECT run_id, step_id, from_status, to_status, at, who, note, detail"
            " FROM pf_step_journal WHERE run_id = %s AND (%s::text IS NULL OR step_id = %s)"
            " ORDER BY seq",
            (run_id, step_id, step_id),
        )
        return [StepTransition(r[0], r[1], r[2], r[3], utc(r[4]), r[5], r[6], r[7]) for r in rows]

    # --- rate budget bookkeeping ------------------------------------------------------------

    def record_requests(self, practice: str, times: Sequence[datetime]) -> None:
        """See :meth:`StateStore.record_requests`."""
        rows = [(practice, self._stamp(at, "at")) for at in times]
        if not rows:
            return
        with self._tx() as db, db.cursor() as cursor:
            cursor.executemany("INSERT INTO pf_requests (practice, at) VALUES (%s, %s)", rows)

    def request_counts(self, practice: str, since: datetime) -> int:
        """See :meth:`StateStore.request_counts`."""
        row = self._one(
            "SELECT count(*) FROM pf_requests WHERE practice = %s AND at >= %s",
            (practice, _aware(since, "since")),
        )
        return int(row[0])

    def purge_requests(self, older_than: timedelta = timedelta(days=2)) -> int:
        """See :meth:`StateStore.purge_requests`."""
        cutoff = self.now() - older_than
        with self._tx() as db:
            return db.execute("DELETE FROM pf_requests WHERE at < %s", (cutoff,)).rowcount
