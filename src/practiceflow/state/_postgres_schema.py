"""The PostgreSQL schema: numbered migrations and how they are applied, the SELECTs that
read it, and row decoders.

Never edit a released migration: add the next number. ``pf_schema_version`` holds the
number of the last one applied; a database with a higher number is refused.

Tables carry a ``pf_`` prefix because a fleet's database is shared with procrastinate's
tables and the rate budget's. Times are ``timestamptz``; JSON columns are ``json`` (not
``jsonb``), which keeps the text as written and accepts every string JSON can carry.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import psycopg
from psycopg.conninfo import conninfo_to_dict

from practiceflow.errors import ConfigError
from practiceflow.state.rows import EventRecord, RunRecord, StepRecord, SubscriptionRecord

__all__ = [
    "CONNECT_TIMEOUT_S",
    "LATEST_VERSION",
    "MIGRATIONS",
    "SELECT_EVENTS",
    "SELECT_RUNS",
    "SELECT_STEPS",
    "SELECT_SUBSCRIPTIONS",
    "VERSION_TABLE",
    "Migration",
    "decode_event",
    "decode_run",
    "decode_step",
    "decode_subscription",
    "describe_url",
    "migrate",
    "migrate_on",
    "read_version",
    "refuse_newer",
    "schema_version",
    "utc",
]

#: The table holding the schema version (one row).
VERSION_TABLE: Final = "pf_schema_version"

_V1: Final = (
    """
    CREATE TABLE pf_events (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        practice text NOT NULL,
        source text NOT NULL,
        event_key text NOT NULL,
        event_id text NOT NULL,
        signature text,
        payload json NOT NULL,
        received_at timestamptz NOT NULL,
        handled_at timestamptz,
        UNIQUE (practice, source, event_id)
    )
    """,
    # A replay under a new event id still carries the old signature (the id is unsigned).
    """
    CREATE UNIQUE INDEX pf_events_by_signature ON pf_events (practice, source, signature)
        WHERE signature IS NOT NULL
    """,
    """
    CREATE INDEX pf_events_pending ON pf_events (practice, received_at)
        WHERE handled_at IS NULL
    """,
    "CREATE INDEX pf_events_received ON pf_events (received_at)",
    """
    CREATE TABLE pf_cursors (
        practice text NOT NULL,
        trigger_key text NOT NULL,
        value text NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (practice, trigger_key)
    )
    """,
    """
    CREATE TABLE pf_cursor_keys (
        practice text NOT NULL,
        trigger_key text NOT NULL,
        dedupe_key text NOT NULL,
        PRIMARY KEY (practice, trigger_key, dedupe_key),
        FOREIGN KEY (practice, trigger_key) REFERENCES pf_cursors (practice, trigger_key)
            ON DELETE CASCADE
    )
    """,
    """
    CREATE TABLE pf_subscriptions (
        practice text NOT NULL,
        trigger_key text NOT NULL,
        subscription_id text,
        event text NOT NULL,
        url text NOT NULL,
        secret text NOT NULL,
        path_token text NOT NULL CONSTRAINT pf_subscriptions_path_token UNIQUE,
        status text NOT NULL
            CHECK (status IN ('pending', 'active', 'in_doubt', 'failed')),
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (practice, trigger_key)
    )
    """,
    """
    CREATE UNIQUE INDEX pf_subscriptions_by_id ON pf_subscriptions (practice, subscription_id)
        WHERE subscription_id IS NOT NULL
    """,
    # One run per (practice, recipe, event): the same event never starts two runs.
    """
    CREATE TABLE pf_runs (
        run_id text PRIMARY KEY,
        practice text NOT NULL,
        recipe text NOT NULL,
        event_id text NOT NULL,
        status text NOT NULL CHECK (status IN
            ('pending', 'running', 'succeeded', 'failed', 'in_doubt', 'cancelled')),
        error json,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        UNIQUE (practice, recipe, event_id)
    )
    """,
    "CREATE INDEX pf_runs_created ON pf_runs (created_at)",
    """
    CREATE TABLE pf_steps (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id text NOT NULL REFERENCES pf_runs (run_id) ON DELETE CASCADE,
        step_id text NOT NULL,
        status text NOT NULL CHECK (status IN
            ('pending', 'sent', 'succeeded', 'failed', 'skipped', 'in_doubt')),
        request json,
        output json,
        error json,
        attempts integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        sent_at timestamptz,
        resolved_by text,
        resolved_at timestamptz,
        resolution_note text,
        UNIQUE (run_id, step_id)
    )
    """,
    """
    CREATE TABLE pf_step_journal (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id text NOT NULL REFERENCES pf_runs (run_id) ON DELETE CASCADE,
        step_id text NOT NULL,
        from_status text,
        to_status text NOT NULL,
        at timestamptz NOT NULL,
        who text,
        note text,
        detail json
    )
    """,
    "CREATE INDEX pf_step_journal_by_run ON pf_step_journal (run_id, step_id)",
    """
    CREATE TABLE pf_requests (
        practice text NOT NULL,
        at timestamptz NOT NULL
    )
    """,
    "CREATE INDEX pf_requests_by_practice ON pf_requests (practice, at)",
    "CREATE INDEX pf_requests_at ON pf_requests (at)",
)

# Subscription health, kept apart from subscriptions: a re-subscribe deletes that row.
_V2: Final = (
    """
    CREATE TABLE pf_subscription_health (
        practice text NOT NULL,
        trigger_key text NOT NULL,
        last_test_delivery_at timestamptz,
        resubscribes integer NOT NULL DEFAULT 0,
        PRIMARY KEY (practice, trigger_key)
    )
    """,
)

#: Statements of each schema version; all pending ones are applied in one transaction.
MIGRATIONS: Final[Mapping[int, Sequence[str]]] = {1: _V1, 2: _V2}

#: The schema version this practiceflow writes.
LATEST_VERSION: Final = max(MIGRATIONS)


# --- applying migrations ---------------------------------------------------------------------

#: Seconds to wait for the server when connecting.
CONNECT_TIMEOUT_S: Final = 10
#: Advisory lock key serializing migrations (any constant; CRC-32 of a fixed name).
_MIGRATION_LOCK: Final = zlib.crc32(b"practiceflow schema migration")


def describe_url(url: str) -> str:
    """``postgresql://host:port/dbname`` of a URL, without user, password or options."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(unparseable URL)"
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    return f"postgresql://{host}:{port}/{parts.get('dbname') or ''}"


def connect(url: str) -> psycopg.Connection[Any]:
    """A new connection to the database a URL names (not pooled), for migrations.

    Raises:
        ConfigError: the server cannot be reached or the URL is unusable; the message
            names host, port and database, never the password.
    """
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        # Only the first line: which host refused, or why; never the conninfo itself.
        lines = str(exc).strip().splitlines()
        reason = lines[0] if lines else type(exc).__name__
        message = f"state store {describe_url(url)}: cannot connect ({reason})"
        raise ConfigError(message) from None
    except psycopg.ProgrammingError:
        message = f"state store URL: got an unusable PostgreSQL URL ({describe_url(url)})"
        raise ConfigError(message) from None


def read_version(connection: psycopg.Connection[Any]) -> int:
    """The schema version a connection's database holds (0: none yet)."""
    exists = connection.execute("SELECT to_regclass(%s) IS NOT NULL", (VERSION_TABLE,))
    row = exists.fetchone()
    if row is None or not row[0]:
        return 0
    found = connection.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone()  # noqa: S608 -- constant table name.
    return 0 if found is None else int(found[0])


def refuse_newer(url: str, current: int) -> None:
    """Refuse a database written by a newer practiceflow.

    Raises:
        ConfigError: ``current`` is above :data:`LATEST_VERSION`.
    """
    if current > LATEST_VERSION:
        message = (
            f"state database {describe_url(url)} has schema version {current}, newer than "
            f"the {LATEST_VERSION} this practiceflow knows; upgrade practiceflow, or use "
            "another state database"
        )
        raise ConfigError(message)


def schema_version(url: str) -> int:
    """The schema version of a PostgreSQL state database (0 when it has none yet).

    Raises:
        ConfigError: the database cannot be reached.
    """
    with connect(url) as connection:
        return read_version(connection)


@dataclass(frozen=True)
class Migration:
    """What :func:`migrate` did.

    Attributes:
        before: the schema version found (0: an empty database).
        after: the schema version now (:data:`LATEST_VERSION`).
    """

    before: int
    after: int

    @property
    def changed(self) -> bool:
        """Whether any migration was applied."""
        return self.before != self.after


def migrate(url: str) -> Migration:
    """Create or upgrade the schema of a PostgreSQL state database to the latest version.

    All pending migrations run in one transaction, under an advisory lock so that
    replicas starting together apply them once.

    Args:
        url: the ``postgresql://`` URL.

    Returns:
        The versions before and after.

    Raises:
        ConfigError: the database cannot be reached, or its schema is newer than this
            practiceflow knows (it is left untouched).
    """
    with connect(url) as connection:
        return migrate_on(connection, url)


def migrate_on(connection: psycopg.Connection[Any], url: str) -> Migration:
    """:func:`migrate` on an open connection (outside any transaction)."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        current = read_version(connection)
        refuse_newer(url, current)
        if current == 0:
            connection.execute(f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version integer)")
        for version in range(current + 1, LATEST_VERSION + 1):
            for statement in MIGRATIONS[version]:
                connection.execute(statement)
        connection.execute(f"DELETE FROM {VERSION_TABLE}")  # noqa: S608 -- constant table name.
        connection.execute(f"INSERT INTO {VERSION_TABLE} VALUES (%s)", (LATEST_VERSION,))  # noqa: S608 -- constant table name.
    return Migration(current, LATEST_VERSION)


# --- reading rows -----------------------------------------------------------------------------

# Whole SELECT clauses as literals: call sites append only fixed WHERE text, and every
# value is a bound parameter.
SELECT_EVENTS: Final = (
    "SELECT practice, source, event_key, event_id, payload, signature, received_at,"
    " handled_at FROM pf_events"
)
SELECT_SUBSCRIPTIONS: Final = (
    "SELECT practice, trigger_key, subscription_id, event, url, secret, path_token, status,"
    " created_at, updated_at FROM pf_subscriptions"
)
SELECT_RUNS: Final = (
    "SELECT run_id, practice, recipe, event_id, status, error, created_at, updated_at FROM pf_runs"
)
SELECT_STEPS: Final = (
    "SELECT run_id, step_id, status, request, output, error, attempts, created_at,"
    " updated_at, sent_at, resolved_by, resolved_at, resolution_note FROM pf_steps"
)


def utc(value: datetime) -> datetime:
    """A ``timestamptz`` as read (in the session's zone) moved to UTC."""
    return value.astimezone(UTC)


def _maybe_utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def decode_event(row: Sequence[Any]) -> EventRecord:
    """Build the record of a pf_events row, columns as in SELECT_EVENTS."""
    return EventRecord(
        row[0], row[1], row[2], row[3], row[4], row[5], utc(row[6]), _maybe_utc(row[7])
    )


def decode_subscription(row: Sequence[Any]) -> SubscriptionRecord:
    """Build the record of a pf_subscriptions row, columns as in SELECT_SUBSCRIPTIONS."""
    return SubscriptionRecord(
        row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], utc(row[8]),
        utc(row[9]),
    )  # fmt: skip


def decode_run(row: Sequence[Any]) -> RunRecord:
    """Build the record of a pf_runs row, columns as in SELECT_RUNS."""
    return RunRecord(row[0], row[1], row[2], row[3], row[4], row[5], utc(row[6]), utc(row[7]))


def decode_step(row: Sequence[Any]) -> StepRecord:
    """Build the record of a pf_steps row, columns as in SELECT_STEPS."""
    return StepRecord(
        row[0], row[1], row[2], row[3], row[4], row[5], int(row[6]), utc(row[7]), utc(row[8]),
        _maybe_utc(row[9]), row[10], _maybe_utc(row[11]), row[12],
    )  # fmt: skip
