"""Where a command's state store is (``--state`` / ``PRACTICEFLOW_STATE``, else
``.practiceflow/state.db``), and the practice's rate budget beside it, so that every process
on one store counts its requests together (docs/architecture.md, "The rate budget").
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from practiceflow.budget import RateBudget, RateLimits, store_budget
from practiceflow.errors import ConfigError

#: Where the state store is when neither ``--state`` nor ``PRACTICEFLOW_STATE`` says.
DEFAULT_STATE: Final = Path(".practiceflow") / "state.db"


def state_target(state: str | None) -> str:
    """The store a command uses: ``state`` (``--state``/``PRACTICEFLOW_STATE``) or the default."""
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
    """The practice's rate budget, shared by every process on the store (close it at the end)."""
    try:
        path = sqlite_file(state)
    except ConfigError:  # not a SQLite file: opening the store says what is wrong
        path = None
    return store_budget(state_target(state), path, client_id, limits)
