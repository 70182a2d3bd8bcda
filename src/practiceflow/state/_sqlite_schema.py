"""The SQLite schema: numbered migrations, the SELECTs that read it, and row decoders.

Never edit a released migration: add the next number. ``schema_version`` holds the number
of the last one applied; a database with a higher number is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from practiceflow.state.rows import (
    EventRecord,
    RunRecord,
    StepRecord,
    SubscriptionRecord,
    from_json,
    from_utc,
)

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "SELECT_EVENTS",
    "SELECT_RUNS",
    "SELECT_STEPS",
    "SELECT_SUBSCRIPTIONS",
    "decode_event",
    "decode_run",
    "decode_step",
    "decode_subscription",
]

_STEP_STATUS_CHECK: Final = (
    "CHECK (status IN ('pending', 'sent', 'succeeded', 'failed', 'skipped', 'in_doubt'))"
)

_V1: Final = (
    """
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        practice TEXT NOT NULL,
        source TEXT NOT NULL,
        event_key TEXT NOT NULL,
        event_id TEXT NOT NULL,
        signature TEXT,
        payload TEXT NOT NULL,
        received_at TEXT NOT NULL,
        handled_at TEXT,
        UNIQUE (practice, source, event_id)
    )
    """,
    # A replay under a new event id still carries the old signature (the id is unsigned).
    """
    CREATE UNIQUE INDEX events_by_signature ON events (practice, source, signature)
        WHERE signature IS NOT NULL
    """,
    "CREATE INDEX events_pending ON events (practice, handled_at, received_at)",
    "CREATE INDEX events_received ON events (received_at)",
    """
    CREATE TABLE cursors (
        practice TEXT NOT NULL,
        trigger_key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (practice, trigger_key)
    )
    """,
    """
    CREATE TABLE cursor_keys (
        practice TEXT NOT NULL,
        trigger_key TEXT NOT NULL,
        dedupe_key TEXT NOT NULL,
        PRIMARY KEY (practice, trigger_key, dedupe_key),
        FOREIGN KEY (practice, trigger_key) REFERENCES cursors (practice, trigger_key)
            ON DELETE CASCADE
    )
    """,
    """
    CREATE TABLE subscriptions (
        practice TEXT NOT NULL,
        trigger_key TEXT NOT NULL,
        subscription_id TEXT,
        event TEXT NOT NULL,
        url TEXT NOT NULL,
        secret TEXT NOT NULL,
        path_token TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL
            CHECK (status IN ('pending', 'active', 'in_doubt', 'failed')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (practice, trigger_key)
    )
    """,
    """
    CREATE UNIQUE INDEX subscriptions_by_id ON subscriptions (practice, subscription_id)
        WHERE subscription_id IS NOT NULL
    """,
    # One run per (practice, recipe, event): the same event never starts two runs.
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        practice TEXT NOT NULL,
        recipe TEXT NOT NULL,
        event_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN
            ('pending', 'running', 'succeeded', 'failed', 'in_doubt', 'cancelled')),
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (practice, recipe, event_id)
    )
    """,
    "CREATE INDEX runs_created ON runs (created_at)",
    f"""
    CREATE TABLE steps (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        step_id TEXT NOT NULL,
        status TEXT NOT NULL {_STEP_STATUS_CHECK},
        request TEXT,
        output TEXT,
        error TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        sent_at TEXT,
        resolved_by TEXT,
        resolved_at TEXT,
        resolution_note TEXT,
        UNIQUE (run_id, step_id)
    )
    """,
    """
    CREATE TABLE step_journal (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        step_id TEXT NOT NULL,
        from_status TEXT,
        to_status TEXT NOT NULL,
        at TEXT NOT NULL,
        who TEXT,
        note TEXT,
        detail TEXT
    )
    """,
    "CREATE INDEX step_journal_by_run ON step_journal (run_id, step_id)",
    """
    CREATE TABLE requests (
        practice TEXT NOT NULL,
        at TEXT NOT NULL
    )
    """,
    "CREATE INDEX requests_by_practice ON requests (practice, at)",
    "CREATE INDEX requests_at ON requests (at)",
)

# Subscription health, kept apart from subscriptions: a re-subscribe deletes that row.
_V2: Final = (
    """
    CREATE TABLE subscription_health (
        practice TEXT NOT NULL,
        trigger_key TEXT NOT NULL,
        last_test_delivery_at TEXT,
        resubscribes INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (practice, trigger_key)
    )
    """,
)

#: Statements of each schema version, applied in one transaction per open.
MIGRATIONS: Final[Mapping[int, tuple[str, ...]]] = {1: _V1, 2: _V2}

#: The schema version this practiceflow writes.
LATEST_VERSION: Final = max(MIGRATIONS)


# --- reading rows -----------------------------------------------------------------------------

# Whole SELECT clauses as literals: call sites append only fixed WHERE text, and every
# value is a bound parameter.
SELECT_EVENTS: Final = (
    "SELECT practice, source, event_key, event_id, payload, signature, received_at,"
    " handled_at FROM events"
)
SELECT_SUBSCRIPTIONS: Final = (
    "SELECT practice, trigger_key, subscription_id, event, url, secret, path_token, status,"
    " created_at, updated_at FROM subscriptions"
)
SELECT_RUNS: Final = (
    "SELECT run_id, practice, recipe, event_id, status, error, created_at, updated_at FROM runs"
)
SELECT_STEPS: Final = (
    "SELECT run_id, step_id, status, request, output, error, attempts, created_at,"
    " updated_at, sent_at, resolved_by, resolved_at, resolution_note FROM steps"
)


def _maybe_utc(text: str | None) -> datetime | None:
    return None if text is None else from_utc(text)


def decode_event(row: sqlite3.Row | tuple[Any, ...]) -> EventRecord:
    """Build the record of an events row, columns as in SELECT_EVENTS."""
    return EventRecord(
        row[0], row[1], row[2], row[3], from_json(row[4]), row[5], from_utc(row[6]),
        _maybe_utc(row[7]),
    )  # fmt: skip


def decode_subscription(row: sqlite3.Row | tuple[Any, ...]) -> SubscriptionRecord:
    """Build the record of a subscriptions row, columns as in SELECT_SUBSCRIPTIONS."""
    return SubscriptionRecord(
        row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], from_utc(row[8]),
        from_utc(row[9]),
    )  # fmt: skip


def decode_run(row: sqlite3.Row | tuple[Any, ...]) -> RunRecord:
    """Build the record of a runs row, columns as in SELECT_RUNS."""
    return RunRecord(
        row[0], row[1], row[2], row[3], row[4], from_json(row[5]), from_utc(row[6]),
        from_utc(row[7]),
    )  # fmt: skip


def decode_step(row: sqlite3.Row | tuple[Any, ...]) -> StepRecord:
    """Build the record of a steps row, columns as in SELECT_STEPS."""
    return StepRecord(
        row[0], row[1], row[2], from_json(row[3]), from_json(row[4]), from_json(row[5]),
        int(row[6]), from_utc(row[7]), from_utc(row[8]), _maybe_utc(row[9]), row[10],
        _maybe_utc(row[11]), row[12],
    )  # fmt: skip
