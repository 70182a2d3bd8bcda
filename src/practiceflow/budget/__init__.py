"""The rate budget: how many requests a practice's credentials may send, and who goes first.

:class:`RateBudget` counts one Client ID's windows, shared by a host's processes
(``sqlite_bucket.py``) or a fleet's replicas (``postgres_bucket.py``); :func:`store_budget`
finds the one beside a state store (docs/architecture.md, "The rate budget").
"""

from __future__ import annotations

import time
from pathlib import Path

from practiceflow.budget.rate_budget import (
    Priority,
    RateBudget,
    RateLimits,
    RateLimitStatus,
    budget_table,
    current_priority,
    parse_retry_after,
    priority,
)
from practiceflow.budget.sqlite_bucket import budget_file, open_bucket

__all__ = [
    "Priority",
    "RateBudget",
    "RateLimitStatus",
    "RateLimits",
    "budget_table",
    "current_priority",
    "parse_retry_after",
    "priority",
    "store_budget",
]


def store_budget(
    target: str, state_file: Path | None, client_id: str, limits: RateLimits | None = None
) -> RateBudget:
    """The rate budget of a practice, shared by every process on the store ``target``
    (in memory when ``state_file``, the SQLite file, is None and the store no PostgreSQL).

    ``limits``: this process's windows (the spec's if None); an assistant passes smaller
    ones, to be admitted only while the practice as a whole has used less than those.
    Close the budget when the command ends.
    """
    limits = limits or RateLimits()
    if target.lower().startswith(("postgresql://", "postgres://")):
        from practiceflow.budget.postgres_bucket import shared_budget  # psycopg only here

        return shared_budget(target, client_id, limits, pool_size=2)
    if state_file is None:
        return RateBudget(limits)
    bucket = open_bucket(budget_file(state_file), client_id, limits)
    return RateBudget(limits, bucket=bucket, clock=time.time)
