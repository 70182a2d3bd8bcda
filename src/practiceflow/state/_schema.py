"""The schema of every SQL store: numbered migrations and how they are applied.

Statements are written once, for both databases, with names each ``Dialect`` fills in
(``{p}``, ``{serial}``, ``{time}``, ``{json}``). Never edit a released migration: add the
next number. ``{p}schema_version`` holds the last one applied; a higher one is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from practiceflow.errors import ConfigError
from practiceflow.state._dialect import SQLConnection

_V1: Final = (
    """
    CREATE TABLE {p}events (
        seq {serial},
        practice text NOT NULL,
        source text NOT NULL,
        event_key text NOT NULL,
        event_id text NOT NULL,
        signature text,
        payload {json} NOT NULL,
        received_at {time} NOT NULL,
        handled_at {time},
        UNIQUE (practice, source, event_id)
    )
    """,
    # A replay under a new event id still carries the old signature (the id is unsigned).
    """
    CREATE UNIQUE INDEX {p}events_by_signature ON {p}events (practice, source, signature)
        WHERE signature IS NOT NULL
    """,
    """
    CREATE INDEX {p}events_pending ON {p}events (practice, received_at)
        WHERE handled_at IS NULL
    """,
    "CREATE INDEX {p}events_received ON {p}events (received_at)",
    """
    CREATE TABLE {p}cursors (
        practice text NOT NULL,
        trigger_key text NOT NULL,
        value text NOT NULL,
        updated_at {time} NOT NULL,
        PRIMARY KEY (practice, trigger_key)
    )
    """,
    """
    CREATE TABLE {p}cursor_keys (
        practice text NOT NULL,
        trigger_key text NOT NULL,
        dedupe_key text NOT NULL,
        PRIMARY KEY (practice, trigger_key, dedupe_key),
        FOREIGN KEY (practice, trigger_key) REFERENCES {p}cursors (practice, trigger_key)
            ON DELETE CASCADE
    )
    """,
    """
    CREATE TABLE {p}subscriptions (
        practice text NOT NULL,
        trigger_key text NOT NULL,
        subscription_id text,
        event text NOT NULL,
        url text NOT NULL,
        secret text NOT NULL,
        path_token text NOT NULL CONSTRAINT {p}subscriptions_path_token UNIQUE,
        status text NOT NULL
            CHECK (status IN ('pending', 'active', 'in_doubt', 'failed')),
        created_at {time} NOT NULL,
        updated_at {time} NOT NULL,
        PRIMARY KEY (practice, trigger_key)
    )
    """,
    """
    CREATE UNIQUE INDEX {p}subscriptions_by_id ON {p}subscriptions (practice, subscription_id)
        WHERE subscription_id IS NOT NULL
    """,
    # One run per (practice, recipe, event): the same event never starts two runs.
    """
    CREATE TABLE {p}runs (
        run_id text PRIMARY KEY,
        practice text NOT NULL,
        recipe text NOT NULL,
        event_id text NOT NULL,
        status text NOT NULL CHECK (status IN
            ('pending', 'running', 'succeeded', 'failed', 'in_doubt', 'cancelled')),
        error {json},
        created_at {time} NOT NULL,
        updated_at {time} NOT NULL,
        UNIQUE (practice, recipe, event_id)
    )
    """,
    "CREATE INDEX {p}runs_created ON {p}runs (created_at)",
    """
    CREATE TABLE {p}steps (
        seq {serial},
        run_id text NOT NULL REFERENCES {p}runs (run_id) ON DELETE CASCADE,
        step_id text NOT NULL,
        status text NOT NULL CHECK (status IN
            ('pending', 'sent', 'succeeded', 'failed', 'skipped', 'in_doubt')),
        request {json},
        output {json},
        error {json},
        attempts integer NOT NULL DEFAULT 0,
        created_at {time} NOT NULL,
        updated_at {time} NOT NULL,
        sent_at {time},
        resolved_by text,
        resolved_at {time},
        resolution_note text,
        UNIQUE (run_id, step_id)
    )
    """,
    """
    CREATE TABLE {p}step_journal (
        seq {serial},
        run_id text NOT NULL REFERENCES {p}runs (run_id) ON DELETE CASCADE,
        step_id text NOT NULL,
        from_status text,
        to_status text NOT NULL,
        at {time} NOT NULL,
        who text,
        note text,
        detail {json}
    )
    """,
    "CREATE INDEX {p}step_journal_by_run ON {p}step_journal (run_id, step_id)",
    """
    CREATE TABLE {p}requests (
        practice text NOT NULL,
        at {time} NOT NULL
    )
    """,
    "CREATE INDEX {p}requests_by_practice ON {p}requests (practice, at)",
    "CREATE INDEX {p}requests_at ON {p}requests (at)",
)

# Subscription health, kept apart from subscriptions: a re-subscribe deletes that row.
_V2: Final = (
    """
    CREATE TABLE {p}subscription_health (
        practice text NOT NULL,
        trigger_key text NOT NULL,
        last_test_delivery_at {time},
        resubscribes integer NOT NULL DEFAULT 0,
        PRIMARY KEY (practice, trigger_key)
    )
    """,
)

# What started a run (its trigger event), kept on the run itself.
_V3: Final = ("ALTER TABLE {p}runs ADD COLUMN origin {json}",)

# A run's starts that did not end (RunRecord.starts): a crash loop is seen across processes.
_V4: Final = ("ALTER TABLE {p}runs ADD COLUMN starts integer NOT NULL DEFAULT 0",)

# Writes an assistant previewed (pending_writes.py).
_V5: Final = (
    """
    CREATE TABLE {p}pending_writes (
        practice text NOT NULL,
        write_id text NOT NULL,
        tool text NOT NULL,
        sealed {json} NOT NULL,
        digest text NOT NULL,
        created_at {time} NOT NULL,
        expires_at {time} NOT NULL,
        code_misses integer NOT NULL DEFAULT 0,
        claimed_by text,
        claimed_at {time},
        PRIMARY KEY (practice, write_id)
    )
    """,
    "CREATE INDEX {p}pending_writes_expires ON {p}pending_writes (expires_at)",
)

#: The attention table's columns after ``kind`` (versions 6 and 10 create the table).
_ATTENTION_COLUMNS: Final = """
        practice text NOT NULL,
        trigger_key text NOT NULL,
        dedupe text NOT NULL,
        window_start {time},
        window_end {time},
        reason text NOT NULL,
        evidence {json},
        status text NOT NULL CHECK (status IN ('checking', 'open', 'closed')),
        created_at {time} NOT NULL,
        updated_at {time} NOT NULL,
        settled_by text,
        settled_at {time},
        note text,
        UNIQUE (practice, kind, dedupe)
    )
    """

# What needs a person, as rows (state/attention_rows.py): the pseudo-runs that held it before
# ("gap: ", "subscription in doubt: ", "unrecognised:") move here, under their run ids.
_ATTENTION_RUNS: Final = (
    "(substr(recipe, 1, 5) = 'gap: ' OR substr(recipe, 1, 23) = 'subscription in doubt: '"
    " OR substr(recipe, 1, 13) = 'unrecognised:')"
)
_V6: Final = (
    """
    CREATE TABLE {p}attention (
        attention_id text PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN
            ('gap', 'subscription_in_doubt', 'unrecognised', 'silent_subscription')),"""
    + _ATTENTION_COLUMNS,
    "CREATE INDEX {p}attention_open ON {p}attention (practice, status)",
    """
    INSERT INTO {p}attention (attention_id, kind, practice, trigger_key, dedupe, reason,
        evidence, status, created_at, updated_at, settled_by, settled_at, note)
    SELECT run_id,
        CASE WHEN substr(recipe, 1, 5) = 'gap: ' THEN 'gap'
             WHEN substr(recipe, 1, 13) = 'unrecognised:' THEN 'unrecognised'
             ELSE 'subscription_in_doubt' END,
        practice,
        CASE WHEN substr(recipe, 1, 5) = 'gap: ' THEN substr(recipe, 6)
             WHEN substr(recipe, 1, 13) = 'unrecognised:' THEN substr(recipe, 14)
             ELSE substr(recipe, 24) END,
        event_id,
        'listed before the attention table as ' || recipe || ' (' || event_id || ')',
        error,
        CASE WHEN status = 'in_doubt' THEN 'open' ELSE 'closed' END,
        created_at, updated_at,
        CASE WHEN status = 'in_doubt' THEN NULL ELSE 'practiceflow' END,
        CASE WHEN status = 'in_doubt' THEN NULL ELSE updated_at END,
        CASE WHEN status = 'in_doubt' THEN NULL ELSE 'settled as a run (' || status || ')' END
    FROM {p}runs WHERE """
    + _ATTENTION_RUNS,
    "DELETE FROM {p}step_journal WHERE run_id IN (SELECT run_id FROM {p}runs WHERE "
    + _ATTENTION_RUNS
    + ")",
    "DELETE FROM {p}steps WHERE run_id IN (SELECT run_id FROM {p}runs WHERE "
    + _ATTENTION_RUNS
    + ")",
    "DELETE FROM {p}runs WHERE " + _ATTENTION_RUNS,
)

# Which live process drives a run (run_leases.py): one driver per run across processes.
_V7: Final = (
    """
    CREATE TABLE {p}run_leases (
        run_id text PRIMARY KEY REFERENCES {p}runs (run_id) ON DELETE CASCADE,
        owner text NOT NULL,
        host text NOT NULL,
        pid integer NOT NULL,
        process text NOT NULL,
        taken_at {time} NOT NULL,
        expires_at {time} NOT NULL
    )
    """,
)

# Recipe versions, content-addressed (practiceflow.versions): each stored once, by digest;
# a run names the version it started on.
_V8: Final = (
    """
    CREATE TABLE {p}versions (
        digest text PRIMARY KEY,
        kind text NOT NULL,
        name text NOT NULL,
        content {json} NOT NULL,
        created_at {time} NOT NULL
    )
    """,
    "ALTER TABLE {p}runs ADD COLUMN version text",
    "CREATE INDEX {p}runs_by_version ON {p}runs (version)",
)

# Who listens since when (heartbeats.py); the cursor rows that held it move there.
_V9: Final = (
    """
    CREATE TABLE {p}heartbeats (
        kind text NOT NULL CHECK (kind IN ('serve', 'fleet')),
        practice text NOT NULL,
        holder text,
        since {time} NOT NULL,
        beat_at {time} NOT NULL,
        stopped_at {time},
        PRIMARY KEY (kind, practice)
    )
    """,
    """
    INSERT INTO {p}heartbeats (kind, practice, holder, since, beat_at, stopped_at)
    SELECT CASE WHEN trigger_key = 'serve#alive' THEN 'serve' ELSE 'fleet' END,
        CASE WHEN trigger_key = 'serve#alive' THEN practice ELSE '*' END,
        NULL, CAST(value AS {time}), CAST(value AS {time}), NULL
    FROM {p}cursors WHERE trigger_key IN ('serve#alive', 'fleet#alive')
    """,
    # An asked test delivery is a fact of the subscription (its health row), not a cursor.
    "ALTER TABLE {p}subscription_health ADD COLUMN test_asked_at {time}",
    "ALTER TABLE {p}subscription_health ADD COLUMN test_event_id text",
    """
    INSERT INTO {p}subscription_health AS h (practice, trigger_key, test_asked_at,
        test_event_id)
    SELECT c.practice, substr(c.trigger_key, 1, length(c.trigger_key) - 11),
        CAST(c.value AS {time}),
        (SELECT min(k.dedupe_key) FROM {p}cursor_keys k
            WHERE k.practice = c.practice AND k.trigger_key = c.trigger_key)
    FROM {p}cursors c WHERE c.value <> 'done'
        AND substr(c.trigger_key, length(c.trigger_key) - 10) = '#test-asked'
    ON CONFLICT (practice, trigger_key) DO UPDATE SET
        test_asked_at = excluded.test_asked_at, test_event_id = excluded.test_event_id
    """,
    """
    DELETE FROM {p}cursor_keys WHERE trigger_key IN ('serve#alive', 'fleet#alive')
        OR substr(trigger_key, length(trigger_key) - 10) = '#test-asked'
    """,
    """
    DELETE FROM {p}cursors WHERE trigger_key IN ('serve#alive', 'fleet#alive')
        OR substr(trigger_key, length(trigger_key) - 10) = '#test-asked'
    """,
)

# A recipe's retry policy (run_retries.py), and the attention kind retries_exhausted.
_V10: Final = (
    """
    CREATE TABLE {p}run_retries (
        run_id text PRIMARY KEY REFERENCES {p}runs (run_id) ON DELETE CASCADE,
        practice text NOT NULL,
        recipe text NOT NULL,
        attempts integer NOT NULL,
        next_at {time},
        cause {json},
        updated_at {time} NOT NULL
    )
    """,
    "CREATE INDEX {p}run_retries_due ON {p}run_retries (practice, recipe, next_at)",
    """
    CREATE TABLE {p}attention_v10 (
        attention_id text PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('gap', 'subscription_in_doubt', 'unrecognised',
            'silent_subscription', 'retries_exhausted')),"""
    + _ATTENTION_COLUMNS,
    """
    INSERT INTO {p}attention_v10 (attention_id, kind, practice, trigger_key, dedupe,
        window_start, window_end, reason, evidence, status, created_at, updated_at,
        settled_by, settled_at, note)
    SELECT attention_id, kind, practice, trigger_key, dedupe, window_start, window_end,
        reason, evidence, status, created_at, updated_at, settled_by, settled_at, note
    FROM {p}attention
    """,
    "DROP TABLE {p}attention",
    "ALTER TABLE {p}attention_v10 RENAME TO {p}attention",
    "CREATE INDEX {p}attention_open ON {p}attention (practice, status)",
)


#: Statements of each schema version; all pending ones are applied in one transaction.
MIGRATIONS: Mapping[int, Sequence[str]] = dict(
    enumerate((_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10), start=1)
)

#: The schema version this practiceflow writes.
LATEST_VERSION: int = max(MIGRATIONS)


@dataclass(frozen=True)
class Migration:
    """What a migration did: the schema version found (0: an empty database), and now."""

    before: int
    after: int

    @property
    def changed(self) -> bool:
        """Whether any migration was applied."""
        return self.before != self.after


def refuse_newer(where: str, current: int) -> None:
    """Raise :class:`ConfigError` for a database written by a newer practiceflow."""
    if current > LATEST_VERSION:
        message = (
            f"state database {where} has schema version {current}, newer than the "
            f"{LATEST_VERSION} this practiceflow knows; upgrade practiceflow, or use another "
            "state database"
        )
        raise ConfigError(message)


def apply_migrations(db: SQLConnection, current: int) -> Migration:
    """Apply every migration after ``current`` (0: none yet) in ``db``'s write transaction."""
    db.execute("CREATE TABLE IF NOT EXISTS {p}schema_version (version integer)")
    for version in range(current + 1, LATEST_VERSION + 1):
        for statement in MIGRATIONS[version]:
            db.execute(statement)
    db.execute("DELETE FROM {p}schema_version")
    db.execute("INSERT INTO {p}schema_version VALUES (?)", (LATEST_VERSION,))
    return Migration(current, LATEST_VERSION)
