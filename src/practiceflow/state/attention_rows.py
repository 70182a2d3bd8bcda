"""What needs a person, as rows of the ``attention`` table: what no recipe run can settle (a
window of possibly missed events, ``gap``; a subscription that may exist; a delivery held; a
silent webhook; a run whose retries ran out). An entry is ``checking`` while evidence may
settle it, ``open`` while it waits for a person, ``closed`` once settled (by whom, when,
how). The one writer is :mod:`practiceflow.service.needs_person`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, get_args

from practiceflow.state._dialect import select
from practiceflow.state._sql import StoreBase, decode
from practiceflow.state.rows import EventRecord, Json, check_value, like_prefix
from practiceflow.state.sealing import json_or_null

AttentionKind = Literal[
    "gap", "subscription_in_doubt", "unrecognised", "silent_subscription", "retries_exhausted"
]
AttentionStatus = Literal["checking", "open", "closed"]
ATTENTION_KINDS: Final[tuple[AttentionKind, ...]] = get_args(AttentionKind)
ATTENTION_STATUSES: Final[tuple[AttentionStatus, ...]] = get_args(AttentionStatus)


@dataclass(frozen=True)
class AttentionRecord:
    """One entry of the attention table.

    Attributes:
        attention_id: its id (32 hex digits).
        dedupe: what makes it one entry (a gap's window, a delivery's event key...).
        window_start: a gap's first instant (None for other kinds, and for old gaps);
            ``window_end`` its last.
        reason: why it is listed and what to do, for people.
        evidence: what was checked (lists read, over which window, what was found).
        settled_by: who closed it (a person's name, or ``sweep``); ``settled_at`` when,
            ``note`` how.
    """

    attention_id: str
    kind: str
    practice: str
    trigger: str = field(metadata={"column": "trigger_key"})
    dedupe: str
    window_start: datetime | None
    window_end: datetime | None
    reason: str
    evidence: Json
    status: str
    created_at: datetime
    updated_at: datetime
    settled_by: str | None
    settled_at: datetime | None
    note: str | None

    @property
    def needs_person(self) -> bool:
        """Whether it waits for a person (open)."""
        return self.status == "open"


class SQLAttention(StoreBase):
    """The attention table's part of :class:`~practiceflow.state.StateStore`."""

    def _evidence(self, evidence: Json, attention_id: str) -> str | None:
        what = f"evidence of attention entry {attention_id}"
        return json_or_null(self.sealer.seal(evidence, what), attention_id)

    def add_attention(
        self,
        kind: AttentionKind,
        practice: str,
        trigger: str,
        dedupe: str,
        reason: str,
        *,
        window: tuple[datetime, datetime] | None = None,
        evidence: Json = None,
        status: AttentionStatus = "open",
    ) -> tuple[AttentionRecord, bool]:
        """List an entry once per ``(practice, kind, dedupe)``: the entry (the earlier one
        when it was listed before) and whether it is new."""
        check_value("attention kind", kind, ATTENTION_KINDS)
        check_value("attention status", status, ATTENTION_STATUSES)
        attention_id = uuid.uuid4().hex
        stamp = self._stamp(None, "created_at")
        start, end = (
            (None, None)
            if window is None
            else (self._stamp(window[0], "window start"), self._stamp(window[1], "window end"))
        )
        with self._write() as db:
            inserted = db.execute(
                "INSERT INTO {p}attention (attention_id, kind, practice, trigger_key, dedupe,"
                " window_start, window_end, reason, evidence, status, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (practice, kind, dedupe) DO NOTHING RETURNING attention_id",
                (
                    attention_id, kind, practice, trigger, dedupe, start, end, reason,
                    self._evidence(evidence, attention_id), status, stamp, stamp,
                ),
            ).fetchone()  # fmt: skip
            sql = (
                select(AttentionRecord, "attention")
                + " WHERE practice = ? AND kind = ? AND dedupe = ?"
            )
            row = db.execute(sql, (practice, kind, dedupe)).fetchone()
        return decode(self._load, AttentionRecord, row), inserted is not None

    def get_attention(self, attention_id: str) -> AttentionRecord | None:
        """One entry by its full id."""
        return self._record(
            AttentionRecord, "attention", " WHERE attention_id = ?", (attention_id,)
        )

    def list_attention(
        self,
        *,
        practice: str | None = None,
        kind: AttentionKind | None = None,
        trigger: str | None = None,
        statuses: Sequence[AttentionStatus] | None = None,
        id_prefix: str | None = None,
        limit: int = 500,
    ) -> list[AttentionRecord]:
        """Entries, newest first, filtered by what is given."""
        filters: dict[str, object] = {
            "practice = ?": practice,
            "kind = ?": kind,
            "trigger_key = ?": trigger,
            "attention_id LIKE ? ESCAPE '\\'": like_prefix(id_prefix),
        }
        given = {clause: value for clause, value in filters.items() if value is not None}
        clauses, params = list(given), list(given.values())
        if statuses is not None:
            for status in statuses:
                check_value("attention status", status, ATTENTION_STATUSES)
            clauses.append("status IN (" + ", ".join("?" * len(statuses)) + ")")
            params.extend(statuses)
        where = " WHERE " + (" AND ".join(clauses) or "TRUE")
        where += " ORDER BY created_at DESC, attention_id LIMIT ?"
        return self._records(AttentionRecord, "attention", where, (*params, limit))

    def update_attention(
        self,
        attention_id: str,
        status: AttentionStatus,
        *,
        reason: str | None = None,
        evidence: Json = None,
        settled_by: str | None = None,
        note: str | None = None,
    ) -> bool:
        """Move an entry that is not closed; whether it moved (a closed one stays as
        settled). ``reason`` and ``evidence`` replace the entry's when given; moving to
        ``closed`` records ``settled_by``, ``note`` and now."""
        check_value("attention status", status, ATTENTION_STATUSES)
        stamp = self._stamp(None, "updated_at")
        sets: dict[str, Any] = {"status": status, "updated_at": stamp, "reason": reason}
        if evidence is not None:
            sets["evidence"] = self._evidence(evidence, attention_id)
        if reason is None:
            del sets["reason"]
        if status == "closed":
            sets.update(settled_by=settled_by, settled_at=stamp, note=note)
        # Only the fixed column names above are joined; every value is a parameter.
        sql = "UPDATE {p}attention SET " + ", ".join(f"{name} = ?" for name in sets)  # noqa: S608
        with self._write() as db:
            where = " WHERE attention_id = ? AND status <> 'closed'"
            cursor = db.execute(sql + where, (*sets.values(), attention_id))
            return cursor.rowcount > 0

    def count_attention(self) -> dict[tuple[str, str, str], int]:
        """How many entries there are by ``(practice, kind, status)``."""
        rows = self._all(
            "SELECT practice, kind, status, count(*) FROM {p}attention"
            " GROUP BY practice, kind, status"
        )
        return {(str(row[0]), str(row[1]), str(row[2])): int(row[3]) for row in rows}

    def ledger_events(
        self, since: datetime, *, practice: str | None = None, limit: int = 100_000
    ) -> list[EventRecord]:
        """The events received since ``since``, oldest first (``audit completeness``)."""
        where, params = "received_at >= ?", [self._stamp(since, "since")]
        if practice is not None:
            where, params = where + " AND practice = ?", [*params, practice]
        where = " WHERE " + where + " ORDER BY received_at, seq LIMIT ?"
        return self._records(EventRecord, "events", where, (*params, limit))
