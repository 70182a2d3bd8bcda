"""What needs a person, as rows of one table: the ``attention`` table of the state store.

An entry is a thing nobody can settle by running a recipe: a window in which a trigger's
events may have been missed (``gap``), a webhook subscription that may exist on the
server (``subscription_in_doubt``), a delivery held without running (``unrecognised``), a
webhook found silent by a sweep while serving (``silent_subscription``).
Runs hold recipe runs only; a run held in doubt is read from the runs.

An entry is ``checking`` while something the service runs may still settle it by
evidence (a sweep of a list endpoint over a gap's window), ``open`` while it waits for a
person, and ``closed`` once settled, with who settled it (a person, or ``sweep`` when
evidence did), when, and how. The one writer of entries is
:mod:`practiceflow.service.attention`; this module is the table's interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from practiceflow.state.rows import EventRecord, Json

__all__ = [
    "ATTENTION_KINDS",
    "ATTENTION_STATUSES",
    "AttentionKind",
    "AttentionRecord",
    "AttentionRows",
    "AttentionStatus",
]

AttentionKind = Literal["gap", "subscription_in_doubt", "unrecognised", "silent_subscription"]
AttentionStatus = Literal["checking", "open", "closed"]
#: Every kind of entry.
ATTENTION_KINDS: Final[tuple[AttentionKind, ...]] = (
    "gap",
    "subscription_in_doubt",
    "unrecognised",
    "silent_subscription",
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


class AttentionRows(ABC):
    """The attention table's part of the :class:`~practiceflow.state.StateStore` interface."""

    @abstractmethod
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
        """List an entry, once per ``(practice, kind, dedupe)``.

        Returns:
            The entry (the earlier one when it was listed before) and whether it is new.
        """

    @abstractmethod
    def get_attention(self, attention_id: str) -> AttentionRecord | None:
        """One entry by its full id."""

    @abstractmethod
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

    @abstractmethod
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
        """Move an entry that is not closed (a closed one stays as it was settled).

        ``reason`` and ``evidence`` replace the entry's when given; moving to ``closed``
        records ``settled_by``, ``note`` and now.

        Returns:
            Whether it moved (False: no such entry, or it was closed already).
        """

    @abstractmethod
    def count_attention(self) -> dict[tuple[str, str, str], int]:
        """How many entries there are by ``(practice, kind, status)``."""

    @abstractmethod
    def ledger_events(
        self, since: datetime, *, practice: str | None = None, limit: int = 100_000
    ) -> list[EventRecord]:
        """The events received since ``since``, oldest first: what the completeness
        ledger (``practiceflow audit completeness``) counts beside the gaps."""
