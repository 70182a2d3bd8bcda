"""Writing a step's moves to PostgreSQL, inside the caller's transaction: the SQL half of
:meth:`~practiceflow.state.StateStore.change_step` (what is written is decided by
:func:`~practiceflow.state.base.fold_step_changes`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg

from practiceflow.state.rows import StepStatus
from practiceflow.state.steps import STEP_FIELDS, StepChange, fold_step_changes

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
    # Column names are fixed or checked by the encoder (see StepWrite); values are parameters.
    columns = write.columns
    if current is None:
        columns.update(run_id=run_id, step_id=step_id, attempts=write.sends, created_at=stamps[0])
        names = ", ".join(columns)
        marks = ", ".join(_placeholder(name) for name in columns)
        db.execute(f"INSERT INTO pf_steps ({names}) VALUES ({marks})", tuple(columns.values()))  # noqa: S608
    else:
        sets = [f"{name} = {_placeholder(name)}" for name in columns]
        if write.sends:
            sets.append(f"attempts = attempts + {write.sends:d}")
        db.execute(
            f"UPDATE pf_steps SET {', '.join(sets)} WHERE run_id = %s AND step_id = %s",  # noqa: S608
            (*columns.values(), run_id, step_id),
        )
    with db.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO pf_step_journal (run_id, step_id, from_status, to_status, at, who,"
            " note, detail) VALUES (%s, %s, %s, %s, %s, %s, %s, %s::json)",
            write.journal,
        )


def _placeholder(column: str) -> str:
    return "%s::json" if column in STEP_FIELDS else "%s"
