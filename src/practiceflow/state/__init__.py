"""The state store: everything practiceflow must remember between events and restarts.

This folder owns the durable state of triggers and runs, keyed by practice:

* seen event ids and signatures (webhook and poll dedupe) and pending events;
* polling cursors with the dedupe keys seen at the cursor boundary;
* webhook subscriptions (secrets included, never shown);
* runs (one per recipe and event) and their step journals;
* the count of requests sent, for rate-budget reports.

One interface, :class:`StateStore` (``base.py``), behind a scheme registry
(:func:`open_store`): SQLite in WAL mode (``sqlite.py``) is the embedded default;
PostgreSQL joins the registry for fleets.
"""

from __future__ import annotations

from practiceflow.state.base import DEFAULT_KEEP_SEEN, Clock, StateStore, StepChange
from practiceflow.state.registry import open_store, register_store, registered_schemes
from practiceflow.state.rows import (
    RESOLUTIONS,
    RUN_STATUSES,
    RUN_TRANSITIONS,
    STEP_STATUSES,
    STEP_TRANSITIONS,
    SUBSCRIPTION_STATUSES,
    CursorState,
    EventRecord,
    Json,
    NewEvent,
    Resolution,
    RunRecord,
    RunStatus,
    StepRecord,
    StepStatus,
    StepTransition,
    SubscriptionHealth,
    SubscriptionRecord,
    SubscriptionStatus,
)
from practiceflow.state.sqlite import SQLiteStore

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
    "NewEvent",
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
    "open_store",
    "register_store",
    "registered_schemes",
]
