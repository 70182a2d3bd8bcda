"""The rate budget: how many requests a practice's credentials may send, and who goes first.

:class:`RateBudget` (``rate_budget.py``) counts one Client ID's windows, shared by the
processes of a host (``sqlite_bucket.py``) or the replicas of a fleet (``postgres_bucket.py``,
imported on first use); :func:`store_budget` finds the one beside a state store.
"""

from __future__ import annotations

from practiceflow.budget.practice_budget import store_budget
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
