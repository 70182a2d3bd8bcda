"""Writing a step's moves to PostgreSQL, inside the caller's transaction: the SQL half of
:meth:`~practiceflow.state.StateStore.change_step` (what is written is decided by
:func:`~practiceflow.state.base.fold_step_changes`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import psycopg

from practiceflow.state.rows import StepStatus
from practiceflow.state.steps import (
    STEP_FIELDS,
    StepChange,
    fold_step_changes,
    journal_sql,
    step_row_sql,
)

__all__ = ["apply_step_changes"]


def apply_step_changes(
    db: psycopg.Connection[Any],
    run_id: str,
    step_id: str,
    current: StepStatus | None,
    changes: Sequence[StepChange],
    encoded: Sequence[Mapping[str, str | None]],
    stamps: Sequence[datetime],
) -> None:
    """Check and write moves of a step from ``current``, inside the caller's transaction.

    Args:
        db: the connection, in a transaction holding the run's row lock.
        run_id: the run.
        step_id: the step.
        current: the step's status before the first move (``None``: no row yet).
        changes: the moves, in order.
        encoded: each move's fields, as JSON text.
        stamps: when each move happened.

    Raises:
        BugError: a move is illegal.
    """
    write = fold_step_changes(run_id, step_id, current, changes, encoded, stamps)
    sql, params = step_row_sql(
        write, run_id, step_id, current, stamps[0], table="pf_steps", mark=_placeholder
    )
    db.execute(sql, params)
    with db.cursor() as cursor:
        cursor.executemany(_JOURNAL_INSERT, write.journal)


_JOURNAL_INSERT: Final = journal_sql("pf_step_journal", "%s", "%s::json")


def _placeholder(column: str) -> str:
    return "%s::json" if column in STEP_FIELDS else "%s"
