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

from pathlib import Path
from typing import Final

from practiceflow.budget import RateBudget, RateLimits, store_budget
from practiceflow.errors import ConfigError

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
    """The rate budget of a practice, shared by every process on the same store
    (:func:`practiceflow.budget.store_budget`).

    Args:
        state: ``--state`` / ``PRACTICEFLOW_STATE``, or None for the default store.
        client_id: the practice's Client ID (its table in the shared bucket).
        limits: this process's windows (the spec's if None).

    Returns:
        The budget to give the client; close it when the command ends.
    """
    try:
        path = sqlite_file(state)
    except ConfigError:  # not a SQLite file: opening the store says what is wrong
        path = None
    return store_budget(state_target(state), path, client_id, limits)
