"""When a failed run is tried again: one row per run the retry policy
(:mod:`practiceflow.runner.run_retry`) has seen fail."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from practiceflow.state._sql import StoreBase
from practiceflow.state.rows import Json
from practiceflow.state.sealing import json_or_null


@dataclass(frozen=True)
class RunRetry:
    """What the retry policy knows of one run.

    Attributes:
        attempts: attempts that ended failed on a transient cause.
        next_at: when the next attempt is due (None: none is scheduled).
        cause: the last such failure (``type``, ``status``, ``step``: never a message,
            which may quote the data).
    """

    run_id: str
    practice: str
    recipe: str
    attempts: int
    next_at: datetime | None
    cause: Json
    updated_at: datetime


class SQLRunRetries(StoreBase):
    """The run retries' part of :class:`~practiceflow.state.StateStore`."""

    def run_retry(self, run_id: str) -> RunRetry | None:
        """The retry row of a run, or None when the policy never saw it fail."""
        return self._record(RunRetry, "run_retries", " WHERE run_id = ?", (run_id,))

    def save_run_retry(
        self,
        run_id: str,
        practice: str,
        recipe: str,
        attempts: int,
        next_at: datetime | None,
        cause: Json,
    ) -> None:
        """Record a run's failed attempts and its next one (None: none scheduled)."""
        stamp = self._stamp(None, "updated_at")
        due = None if next_at is None else self._stamp(next_at, "next_at")
        with self._write() as db:
            db.execute(
                "INSERT INTO {p}run_retries (run_id, practice, recipe, attempts, next_at, cause,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET"
                " attempts = excluded.attempts, next_at = excluded.next_at,"
                " cause = excluded.cause, updated_at = excluded.updated_at",
                (run_id, practice, recipe, attempts, due, json_or_null(cause, run_id), stamp),
            )

    def due_run_retries(self, practice: str, recipe: str) -> list[RunRetry]:
        """The runs of a recipe whose next attempt is due now, the longest due first."""
        now = self._stamp(None, "now")
        where = " WHERE practice = ? AND recipe = ? AND next_at <= ? ORDER BY next_at"
        return self._records(RunRetry, "run_retries", where, (practice, recipe, now))

    def practices_to_sweep(self) -> set[str]:
        """The practices with an event pending or a run retry due: what a sweep of many
        practices looks at, in one query instead of a few per practice."""
        now = self._stamp(None, "now")
        rows = self._all(
            "SELECT DISTINCT practice FROM {p}events WHERE handled_at IS NULL"
            " UNION SELECT DISTINCT practice FROM {p}run_retries WHERE next_at <= ?",
            (now,),
        )
        return {str(row[0]) for row in rows}

    def practices_with_events_since(self, since: datetime) -> set[str]:
        """The practices that received an event after ``since`` (polled or delivered)."""
        rows = self._all(
            "SELECT DISTINCT practice FROM {p}events WHERE received_at > ?",
            (self._stamp(since, "since"),),
        )
        return {str(row[0]) for row in rows}

    def claim_run_retry(self, run_id: str, until: datetime) -> bool:
        """Take a due attempt (whether this call took it): its ``next_at`` moves to
        ``until``, so that one process makes it, and one dying during it leaves it due."""
        now = self._stamp(None, "now")
        with self._write() as db:
            cursor = db.execute(
                "UPDATE {p}run_retries SET next_at = ?, updated_at = ?"
                " WHERE run_id = ? AND next_at IS NOT NULL AND next_at <= ?",
                (self._stamp(until, "until"), now, run_id, now),
            )
            return bool(cursor.rowcount == 1)

    def forgive_starts(self, run_id: str) -> None:
        """Set a run's ``starts`` back to 1: it made progress, so the process deaths of its
        earlier starts were not its doing (:mod:`practiceflow.runner.quarantine`)."""
        with self._write() as db:
            db.execute("UPDATE {p}runs SET starts = 1 WHERE run_id = ? AND starts > 1", (run_id,))
