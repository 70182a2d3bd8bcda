"""Runs, their step journals, leases, retries and recipe versions in SQL, mixed into the store.

Every step journal method (``step_pending`` ... ``resolve_step``) is one
:meth:`SQLRuns.change_step`, so that every move obeys the same transition rules.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from practiceflow.errors import BugError, ConfigError
from practiceflow.state._dialect import SQLConnection, select
from practiceflow.state._sql import StoreBase, decode
from practiceflow.state.rows import (
    RESOLUTIONS,
    RUN_STATUSES,
    STEP_FIELDS,
    STEP_STATUSES,
    Json,
    Resolution,
    RunLease,
    RunRecord,
    RunRetry,
    RunStatus,
    StepChange,
    StepRecord,
    StepStatus,
    StepTransition,
    VersionRecord,
    check_run_transition,
    check_value,
    like_prefix,
)
from practiceflow.state.sealing import json_or_null

_JOURNAL: Final = (
    "INSERT INTO {p}step_journal (run_id, step_id, from_status, to_status, at, who, note,"
    " detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
#: A run started (again): counted, so that one started too often without ending is seen.
_COUNT_START: Final = (
    "UPDATE {p}runs SET status = 'running', error = NULL, updated_at = ?,"
    " starts = starts + 1 WHERE run_id = ? RETURNING starts"
)

#: The key a purged event payload carries (with its ``source``, kept in clear).
_PURGED: Final = "$purged"

#: Runs finished before the cutoff that still hold a payload.
_TO_PURGE: Final = (
    "SELECT run_id FROM {p}runs r WHERE r.status IN ('succeeded', 'failed', 'cancelled')"
    " AND r.updated_at < ? AND (r.origin IS NOT NULL OR EXISTS (SELECT 1 FROM {p}steps s"
    " WHERE s.run_id = r.run_id AND (s.request IS NOT NULL OR s.output IS NOT NULL)))"
)
#: Events handled before the cutoff, with a run, and no run of them unfinished or recent.
_EVENTS: Final = (
    "SELECT e.seq, e.payload FROM {p}events e WHERE e.handled_at IS NOT NULL"
    " AND e.received_at < ? AND EXISTS (SELECT 1 FROM {p}runs r WHERE"
    " r.practice = e.practice AND r.event_id = e.event_id) AND NOT EXISTS (SELECT 1"
    " FROM {p}runs r WHERE r.practice = e.practice AND r.event_id = e.event_id AND"
    " (r.status NOT IN ('succeeded', 'failed', 'cancelled') OR r.updated_at >= ?))"
)


def _read_lease(db: SQLConnection, run_id: str) -> RunLease | None:
    sql = select(RunLease, "run_leases") + " WHERE run_id = ?"
    row = db.execute(sql, (run_id,)).fetchone()
    return None if row is None else decode(db.dialect, RunLease, row)


class SQLRuns(StoreBase):
    """The runs' part of :class:`~practiceflow.state.StateStore`."""

    def start_run(
        self,
        practice: str,
        recipe: str,
        event_id: str,
        *,
        origin: Json = None,
        run_id: str | None = None,
        created_at: datetime | None = None,
        version: str | None = None,
    ) -> tuple[str, bool]:
        """Start the one run of ``recipe`` for an event, or find it: ``(run_id, created)``.

        One per (practice, recipe, event_id), by the database, so that processes agree on
        it. ``origin`` (what started it), ``run_id``, ``created_at`` and ``version`` (a
        :meth:`save_version` digest) are kept with a new run only.
        """
        key = (practice, recipe, event_id)
        stamp = self._stamp(created_at, "created_at")
        run_id = run_id or uuid.uuid4().hex
        encoded = json_or_null(self.sealer.seal(origin, f"origin of run {run_id}"), run_id)
        with self._writes_alone() as db:
            # A racing insert of the same key waits for the winner's commit, then does
            # nothing; the SELECT after it sees the winner's row.
            created = db.execute(
                "INSERT INTO {p}runs (run_id, practice, recipe, event_id, status, origin,"
                " created_at, updated_at, version) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)"
                " ON CONFLICT (practice, recipe, event_id) DO NOTHING RETURNING run_id",
                (run_id, *key, encoded, stamp, stamp, version),
            ).fetchone()
            if created is not None:
                return run_id, True
            sql = "SELECT run_id FROM {p}runs WHERE practice = ? AND recipe = ? AND event_id = ?"
            row = db.execute(sql, key).fetchone()
        return str(row[0]), False

    def get_run(self, run_id: str) -> RunRecord | None:
        """One run, or ``None``."""
        return self._record(RunRecord, "runs", " WHERE run_id = ?", (run_id,))

    def list_runs(
        self,
        *,
        practice: str | None = None,
        recipe: str | None = None,
        status: RunStatus | None = None,
        event_id: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
        run_id_prefix: str | None = None,
        version: str | None = None,
    ) -> list[RunRecord]:
        """Runs matching every filter given, newest first (``since``: started at or
        after; ``run_id_prefix`` and ``version``: the id or digest starts with it)."""
        if status is not None:
            check_value("run status", status, RUN_STATUSES)
        filters: dict[str, object] = {
            "practice = ?": practice,
            "recipe = ?": recipe,
            "status = ?": status,
            "event_id = ?": event_id,
            "run_id LIKE ? ESCAPE '\\'": like_prefix(run_id_prefix),
            "version LIKE ? ESCAPE '\\'": like_prefix(version),
            "created_at >= ?": None if since is None else self.dialect.dump_time(since, "since"),
        }
        given = {clause: value for clause, value in filters.items() if value is not None}
        where = " WHERE " + (" AND ".join(given) or "TRUE")
        where += " ORDER BY created_at DESC, run_id LIMIT ?"
        return self._records(RunRecord, "runs", where, (*given.values(), limit))

    def set_run_status(self, run_id: str, status: RunStatus, error: Json = None) -> None:
        """Change a run's status (``error``: why it failed or is in doubt); any but
        ``running`` sets ``starts`` back to 0. BugError: unknown run or status, or a change
        :data:`~practiceflow.state.rows.RUN_TRANSITIONS` forbids."""
        check_value("run status", status, RUN_STATUSES)
        stamp = self._stamp(None, "updated_at")
        encoded = json_or_null(self.sealer.seal(error, f"error of run {run_id}"), run_id)
        with self._write() as db:
            check_run_transition(run_id, self._locked_run(db, run_id), status)
            reset = "" if status == "running" else ", starts = 0"
            sql = "UPDATE {p}runs SET status = ?, error = ?, updated_at = ?" + reset
            db.execute(sql + " WHERE run_id = ?", (status, encoded, stamp, run_id))

    def _locked_run(self, db: SQLConnection, run_id: str) -> RunStatus:
        """The run's status, its row locked for this write (every move of a run or its steps)."""
        sql = "SELECT status FROM {p}runs WHERE run_id = ?" + self.dialect.lock_row
        row = db.execute(sql, (run_id,)).fetchone()
        if row is None:
            raise BugError(f"run {run_id} does not exist; start_run first")
        status: RunStatus = row[0]
        return status

    def count_start(self, run_id: str) -> int:
        """A runner starts driving a run: ``running`` (error cleared), ``starts`` + 1
        (returned), committed before its first step so that a start the process does not
        survive stays counted. BugError: unknown run, or one that may not run again."""
        stamp = self._stamp(None, "updated_at")
        with self._write() as db:
            check_run_transition(run_id, self._locked_run(db, run_id), "running")
            counted = db.execute(_COUNT_START, (stamp, run_id)).fetchone()
        return int(counted[0])

    def uncount_start(self, run_id: str) -> None:
        """Take back one start of a run (never below 0): a graceful shutdown stopped it,
        which is no sign of a crash loop."""
        with self._write() as db:
            self._locked_run(db, run_id)
            db.execute(
                "UPDATE {p}runs SET starts = starts - 1 WHERE run_id = ? AND starts > 0", (run_id,)
            )

    def purge_payloads(self, before: datetime) -> int:
        """Remove what may hold personal data from runs finished before ``before``: origins,
        step requests and outputs, and the payloads of events whose runs all finished (rows,
        statuses and masked errors stay); returns how many runs had payloads removed."""
        cutoff = self.dialect.dump_time(before, "before")
        with self._write(durable=True) as db:
            purged = [row[0] for row in db.execute(_TO_PURGE, (cutoff,)).fetchall()]
            for run_id in purged:
                db.execute("UPDATE {p}runs SET origin = NULL WHERE run_id = ?", (run_id,))
                sql = "UPDATE {p}steps SET request = NULL, output = NULL WHERE run_id = ?"
                db.execute(sql, (run_id,))
            emptied = []
            for seq, stored in db.execute(_EVENTS, (cutoff, cutoff)).fetchall():
                payload = db.dialect.load_json(stored)
                if isinstance(payload, dict) and _PURGED in payload:
                    continue
                kept: dict[str, Any] = {_PURGED: True}
                if isinstance(payload, dict) and isinstance(payload.get("source"), str):
                    kept["source"] = payload["source"]
                emptied.append((json.dumps(kept, sort_keys=True), seq))
            db.executemany("UPDATE {p}events SET payload = ? WHERE seq = ?", emptied)
        return len(purged)

    def get_step(self, run_id: str, step_id: str) -> StepRecord | None:
        """One step's journal entry, or ``None``."""
        where = " WHERE run_id = ? AND step_id = ?"
        return self._record(StepRecord, "steps", where, (run_id, step_id))

    def get_steps(self, run_id: str) -> list[StepRecord]:
        """The journal of a run, steps in the order they were first written."""
        return self._records(StepRecord, "steps", " WHERE run_id = ? ORDER BY seq", (run_id,))

    def step_history(self, run_id: str, step_id: str | None = None) -> list[StepTransition]:
        """Every move of a run's steps (or of one step), oldest first."""
        where, params = ("", ()) if step_id is None else (" AND step_id = ?", (step_id,))
        where = " WHERE run_id = ?" + where + " ORDER BY seq"
        return self._records(StepTransition, "step_journal", where, (run_id, *params))

    def change_step(self, run_id: str, step_id: str, *changes: StepChange) -> None:
        """Apply several moves of a step (each ``step_*`` method makes one) in one commit:
        the journal reads as after one call per move; an illegal move writes nothing
        (BugError). The runner journals an answered read so: pending, sent, succeeded."""
        where = f"run {run_id} step {step_id!r}"
        if not changes:
            raise BugError(f"change_step of {where}: got no moves")
        now = self._stamp(None, "updated_at")
        moves = []  # each move checked, its fields sealed as JSON text, and its time
        for change in changes:
            check_value("step status", change.target, STEP_STATUSES)
            for name in change.fields:
                check_value("step field", name, STEP_FIELDS)
            fields = {
                name: json_or_null(self.sealer.seal(value, f"{name} of {where}"), where)
                for name, value in change.fields.items()
            }
            moves.append(
                (change, fields, now if change.at is None else self._stamp(change.at, "at"))
            )
        with self._write(durable=any(change.durable for change in changes)) as db:
            self._locked_run(db, run_id)  # serializes every move of the run's steps
            sql = "SELECT status FROM {p}steps WHERE run_id = ? AND step_id = ?"
            row = db.execute(sql, (run_id, step_id)).fetchone()
            current: StepStatus | None = None if row is None else row[0]
            new, sends, journal = current is None, 0, []
            columns: dict[str, Any] = {"status": changes[-1].target, "updated_at": moves[-1][2]}
            for change, fields, stamp in moves:  # each from where the ones before left it
                change.check(run_id, step_id, current)
                columns.update(fields)
                if change.sent:
                    sends += 1
                    columns["sent_at"] = stamp
                if change.resolving:
                    columns.update(
                        resolved_by=change.who, resolved_at=stamp, resolution_note=change.note
                    )
                move = (run_id, step_id, current, change.target, stamp, change.who, change.note)
                journal.append((*move, fields.get("error")))
                current = change.target
            # Column names are fixed or checked above; values are parameters.
            if new:
                columns.update(
                    run_id=run_id, step_id=step_id, attempts=sends, created_at=moves[0][2]
                )
                marks = ", ".join("?" * len(columns))
                sql = f"INSERT INTO {{p}}steps ({', '.join(columns)}) VALUES ({marks})"
                params: tuple[Any, ...] = tuple(columns.values())
            else:
                sets = [f"{name} = ?" for name in columns]
                if sends:
                    sets.append(f"attempts = attempts + {sends:d}")
                sql = f"UPDATE {{p}}steps SET {', '.join(sets)} WHERE run_id = ? AND step_id = ?"
                params = (*columns.values(), run_id, step_id)
            db.execute(sql, params)
            db.executemany(_JOURNAL, journal)

    def step_pending(self, run_id: str, step_id: str, rendered_request: Json) -> None:
        """Record the rendered request of a step about to be sent (keep secrets out of it:
        the journal is run history)."""
        self.change_step(run_id, step_id, StepChange.to_pending(rendered_request))

    def step_sent(self, run_id: str, step_id: str) -> None:
        """Record that the request is about to leave; call, and let it commit, *before*
        sending, so that a crash mid-request leaves ``sent`` (the outcome in doubt),
        never ``pending`` (which would send it twice)."""
        self.change_step(run_id, step_id, StepChange.to_sent())

    def step_succeeded(self, run_id: str, step_id: str, output: Json) -> None:
        """Record the step's output; it will never be sent again."""
        self.change_step(run_id, step_id, StepChange.to_succeeded(output))

    def step_failed(self, run_id: str, step_id: str, error: Json) -> None:
        """Record that the step certainly failed (the API refused it, or it never left)."""
        self.change_step(run_id, step_id, StepChange.to_failed(error))

    def step_skipped(self, run_id: str, step_id: str, reason: Json = None) -> None:
        """Record that the step was not run (its ``if`` was false, say)."""
        self.change_step(run_id, step_id, StepChange.to_skipped(reason))

    def step_in_doubt(self, run_id: str, step_id: str, error: Json) -> None:
        """Record that the request left and its outcome is unknown (timeout, 5xx)."""
        self.change_step(run_id, step_id, StepChange.to_in_doubt(error))

    def resolve_step(
        self,
        run_id: str,
        step_id: str,
        as_: Resolution,
        who: str,
        note: str = "",
        *,
        output: Json = None,
    ) -> None:
        """Settle an ``in_doubt`` or ``failed`` step by a person's decision: ``as_="done"``
        (it did happen: it becomes ``succeeded``, ``output`` given to later steps) or
        ``"retry"`` (it did not: back to ``pending``, sent again). ``who`` decided and
        ``note`` says why, both journaled with the time.

        Raises:
            ConfigError: ``who`` is empty.
            BugError: ``as_`` is not valid, or the step is not in doubt or failed.
        """
        check_value("resolve_step as_", as_, RESOLUTIONS)
        if not who.strip():
            message = f"resolve_step of run {run_id} step {step_id!r}: got an empty 'who'; "
            message += "say who decided, it is recorded in the journal"
            raise ConfigError(message)
        fields: dict[str, Any] = {"output": output} if as_ == "done" else {}
        target: StepStatus = "succeeded" if as_ == "done" else "pending"
        change = StepChange(
            target, fields, resolving=True, who=who.strip(), note=note or None, durable=True
        )
        self.change_step(run_id, step_id, change)

    def take_run_lease(self, wanted: RunLease, dead: Callable[[RunLease], bool]) -> RunLease:
        """Take a run's lease unless a live process holds it (not expired, and not
        ``dead``: its process gone); returns ``wanted`` when taken, else the holder's."""
        with self._write() as db:
            self._locked_run(db, wanted.run_id)
            current = _read_lease(db, wanted.run_id)
            if (
                current is not None
                and current.owner != wanted.owner
                and current.expires_at > self.now()
                and not dead(current)
            ):
                return current
            dump = db.dialect.dump_time
            db.execute(
                "INSERT INTO {p}run_leases (run_id, owner, host, pid, process, taken_at,"
                " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET"
                " owner = excluded.owner, host = excluded.host, pid = excluded.pid,"
                " process = excluded.process, taken_at = excluded.taken_at,"
                " expires_at = excluded.expires_at",
                (
                    wanted.run_id, wanted.owner, wanted.host, wanted.pid, wanted.process,
                    dump(wanted.taken_at, "taken_at"), dump(wanted.expires_at, "expires_at"),
                ),
            )  # fmt: skip
            return wanted

    def renew_run_lease(self, run_id: str, owner: str, expires_at: datetime) -> bool:
        """Push a held lease's expiry on; False when ``owner`` no longer holds it."""
        stamp = self._stamp(expires_at, "expires_at")
        sql = "UPDATE {p}run_leases SET expires_at = ? WHERE run_id = ? AND owner = ?"
        with self._write() as db:
            return db.execute(sql, (stamp, run_id, owner)).rowcount == 1

    def release_run_lease(self, run_id: str, owner: str) -> None:
        """Give a lease back (nothing happens when ``owner`` no longer holds it)."""
        sql = "DELETE FROM {p}run_leases WHERE run_id = ? AND owner = ?"
        with self._writes_alone() as db:
            db.execute(sql, (run_id, owner))

    def run_lease(self, run_id: str) -> RunLease | None:
        """A run's lease; inside ``atomic()``, read with the run's row locked, so that no
        other process takes it before the block commits."""
        locked = getattr(self._local, "atomic", None) is not None
        with self._write() if locked else self._join(self._statement) as db:
            if locked:
                self._locked_run(db, run_id)
            return _read_lease(db, run_id)

    def save_version(self, digest: str, kind: str, name: str, content: Json) -> bool:
        """Store a version under its digest unless stored already; ``True`` when new."""
        encoded = json_or_null(self.sealer.seal(content, f"version {digest}"), digest)
        sql = "INSERT INTO {p}versions VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1"
        with self._write() as db:
            params = (digest, kind, name, encoded, self._stamp(None, "created_at"))
            return db.execute(sql, params).fetchone() is not None

    def get_version(self, digest: str) -> VersionRecord | None:
        """One stored version, or ``None``."""
        return self._record(VersionRecord, "versions", " WHERE digest = ?", (digest,))

    def move_run_version(self, run_id: str, from_digest: str | None, to_digest: str) -> bool:
        """Move a run to another stored version if still on ``from_digest``; whether it
        moved (an explicit migration, :mod:`practiceflow.versions`)."""
        was = "version IS NULL" if from_digest is None else "version = ?"
        sql = "UPDATE {p}runs SET version = ? WHERE run_id = ? AND " + was + " RETURNING 1"
        params = (to_digest, run_id) + (() if from_digest is None else (from_digest,))
        with self._write(durable=True) as db:
            return db.execute(sql, params).fetchone() is not None

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
