"""The state store: everything practiceflow must remember between events and restarts.

This folder owns the durable state of triggers and runs, keyed by practice: seen events
and their dedupe, polling cursors, webhook subscriptions, runs and their step journals,
request counts, previewed writes, what needs a person. One :class:`StateStore`, written
once in SQL and opened by URL (:func:`open_store`): SQLite is the embedded default,
PostgreSQL serves a fleet (its names imported on first use: psycopg costs nothing else).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from practiceflow.state._schema import Migration
from practiceflow.state._sqlite import SQLiteStore, sqlite_path
from practiceflow.state._store import StateStore, open_store, register_store, registered_schemes
from practiceflow.state.pending_writes import PendingWrite, PendingWriteStore
from practiceflow.state.rows import (
    DEFAULT_KEEP_SEEN,
    RESOLUTIONS,
    RUN_STATUSES,
    RUN_TRANSITIONS,
    STEP_STATUSES,
    STEP_TRANSITIONS,
    SUBSCRIPTION_STATUSES,
    Clock,
    CursorState,
    EventRecord,
    Json,
    NewEvent,
    PracticeCounts,
    Resolution,
    RunRecord,
    RunStatus,
    StepChange,
    StepRecord,
    StepStatus,
    StepTransition,
    SubscriptionHealth,
    SubscriptionRecord,
    SubscriptionStatus,
)

if TYPE_CHECKING:
    from practiceflow.state._postgres import PostgresStore, describe_url, migrate, schema_version

__all__ = [
    "DEFAULT_KEEP_SEEN",
    "RESOLUTIONS",
    "RUN_STATUSES",
    "RUN_TRANSITIONS",
    "STEP_STATUSES",
    "STEP_TRANSITIONS",
    "SUBSCRIPTION_STATUSES",
    "Clock",
    "CursorState",
    "EventRecord",
    "Json",
    "Migration",
    "NewEvent",
    "PendingWrite",
    "PendingWriteStore",
    "PostgresStore",
    "PracticeCounts",
    "Resolution",
    "RunRecord",
    "RunStatus",
    "SQLiteStore",
    "StateStore",
    "StepChange",
    "StepRecord",
    "StepStatus",
    "StepTransition",
    "SubscriptionHealth",
    "SubscriptionRecord",
    "SubscriptionStatus",
    "describe_url",
    "migrate",
    "open_store",
    "register_store",
    "registered_schemes",
    "schema_version",
    "sqlite_path",
]

#: The PostgreSQL store's names, imported on first use (with psycopg and its pool).
_POSTGRES_NAMES = frozenset({"PostgresStore", "describe_url", "migrate", "schema_version"})


def __getattr__(name: str) -> object:
    if name in _POSTGRES_NAMES:
        from practiceflow.state import _postgres

        return getattr(_postgres, name)
    message = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(message)
