"""The rate budget: how many requests a practice's credentials may send, and who goes first.

This folder owns the budget of one Client ID (60/min, 1000/h, 10000/day by default):

* :mod:`.rate_budget`: :class:`RateBudget`, the windows counted by pyrate-limiter, the
  ``Retry-After`` pause after a 429, waiters admitted by priority (:class:`Priority`,
  set for a block with :func:`priority`);
* :mod:`.sqlite_bucket`: one budget shared by the processes of a host (``budget.db``
  beside a SQLite state file);
* :mod:`.postgres_bucket`: one budget shared by every replica of a fleet (PostgreSQL;
  imported on first use, with psycopg);
* :mod:`.practice_budget`: :func:`store_budget`, the budget found beside a state store.
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
