"""Where a command's state store is, and the rate budget of its practice beside it.

The store is ``--state`` / ``PRACTICEFLOW_STATE``, else the SQLite file
``.practiceflow/state.db`` in the working directory. The **rate budget** of a practice is
found beside its store (:func:`practice_budget`), so that ``serve``, ``run`` and ``mcp`` on
one store count their requests together: a SQLite store's budget is ``budget.db`` in the
state file's folder, a PostgreSQL store's is a table in its database; either way one table
per Client ID. The command line (:mod:`practiceflow.cli.state`) and the MCP server read it
here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Final

from practiceflow.api.rate_budget import RateBudget, RateLimits
from practiceflow.api.sqlite_budget import budget_file, open_bucket
from practiceflow.errors import ConfigError
from practiceflow.runner.priorities import PriorityBudget

__all__ = ["DEFAULT_STATE", "practice_budget", "sqlite_file", "state_target"]

#: Where the state store is when neither ``--state`` nor ``PRACTICEFLOW_STATE`` says.
DEFAULT_STATE: Final = Path(".practiceflow") / "state.db"


def state_target(state: str | None) -> str:
    """The store a command uses: ``state`` (``--state``/``PRACTICEFLOW_STATE``) or the default.

    Args:
        state: what the command line or the environment said, or None.

    Returns:
        A SQLite path or a URL.
    """
    return state or str(DEFAULT_STATE)


def sqlite_file(state: str | None) -> Path | None:
    """The SQLite file a command's store is, or None for a PostgreSQL store."""
    target = state_target(state)
    if _is_postgres(target):
        return None
    from practiceflow.state import sqlite_path

    return sqlite_path(target)


def _is_postgres(target: str) -> bool:
    return target.lower().startswith(("postgresql://", "postgres://"))


def practice_budget(
    state: str | None, client_id: str, limits: RateLimits | None = None
) -> RateBudget:
    """The rate budget of a practice, shared by every process on the same store.

    Requests wait by priority (:class:`~practiceflow.runner.PriorityBudget`) and count in
    the store's shared bucket: ``budget.db`` beside a SQLite state file (see
    :mod:`practiceflow.api.sqlite_budget`), the store's own database for PostgreSQL (see
    :mod:`practiceflow.fleet.postgres_budget`). A store with no file of its own (another
    scheme, or ``:memory:``, which the SQLite store refuses) gets a budget in memory.

    Args:
        state: ``--state`` / ``PRACTICEFLOW_STATE``, or None for the default store.
        client_id: the practice's Client ID (its table in the shared bucket).
        limits: this process's windows: the spec's 60/min, 1000/h, 10000/day if None; an
            assistant passes smaller ones to be admitted only while the practice as a
            whole has used less than those.

    Returns:
        The budget to give the client; close it when the command ends.
    """
    limits = limits or RateLimits()
    target = state_target(state)
    if _is_postgres(target):
        from practiceflow.fleet.postgres_budget import shared_budget  # psycopg only here

        return shared_budget(target, client_id, limits, pool_size=2, budget_type=PriorityBudget)
    try:
        path = sqlite_file(state)
    except ConfigError:  # not a SQLite file: opening the store says what is wrong
        path = None
    if path is None:
        return PriorityBudget(limits)
    bucket = open_bucket(budget_file(path), client_id, limits)
    return PriorityBudget(limits, bucket=bucket, clock=time.time)
