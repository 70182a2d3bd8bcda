"""What needs a person, as rows of the state store's ``attention`` table.

An entry is what no recipe run can settle: a window of possibly missed events (``gap``), a
subscription that may exist (``subscription_in_doubt``), a delivery held (``unrecognised``),
a silent webhook (``silent_subscription``), a run the retry policy gave up on
(``retries_exhausted``). It is ``checking`` while the service may still settle it by
evidence, ``open`` while it waits for a person, ``closed`` once settled (by whom, when,
how). The one writer is :mod:`practiceflow.service.needs_person`; the store's methods are
in ``_attention_sql.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from practiceflow.state.rows import Json

AttentionKind = Literal[
    "gap", "subscription_in_doubt", "unrecognised", "silent_subscription", "retries_exhausted"
]
AttentionStatus = Literal["checking", "open", "closed"]
#: Every kind of entry.
ATTENTION_KINDS: Final[tuple[AttentionKind, ...]] = (
    "gap",
    "subscription_in_doubt",
    "unrecognised",
    "silent_subscription",
    "retries_exhausted",
)
#: Every status of an entry.
ATTENTION_STATUSES: Final[tuple[AttentionStatus, ...]] = ("checking", "open", "closed")


@dataclass(frozen=True)
class AttentionRecord:
    """One entry of the attention table.

    Attributes:
        attention_id: its id (32 hex digits).
        kind: what it is (:data:`ATTENTION_KINDS`).
        practice: the practice key.
        trigger: the trigger it is about.
        dedupe: what makes it one entry (a gap's window, a delivery's event key...).
        window_start: a gap's first instant (None for other kinds, and for gaps listed
            before this table existed).
        window_end: a gap's last instant.
        reason: why it is listed and what to do, for people.
        evidence: what was checked (lists read, over which window, what was found).
        status: ``checking``, ``open`` or ``closed``.
        created_at: when it was listed.
        updated_at: when it last changed.
        settled_by: who closed it (a person's name, or ``sweep``).
        settled_at: when it was closed.
        note: how it was settled.
    """

    attention_id: str
    kind: str
    practice: str
    trigger: str
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
