"""A step's moves: :class:`StepChange` (what the runner and the operator ask of the
journal) and their checks, applied by :meth:`StateStore.change_step`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from practiceflow.errors import BugError
from practiceflow.state.rows import RESOLVABLE, STEP_TRANSITIONS, Json, StepStatus

#: The JSON fields of a step a move may set.
STEP_FIELDS: Final = ("request", "output", "error")


@dataclass(frozen=True)
class StepChange:
    """One move of a step, as :meth:`StateStore.change_step` takes it; the class methods
    build the runner's moves, ``resolve_step`` the operator's.

    Attributes:
        fields: columns to set among ``request``, ``output`` and ``error``.
        sent: count an attempt and stamp ``sent_at``.
        resolving: an operator's decision: allowed only from
            :data:`~practiceflow.state.rows.RESOLVABLE` statuses; records ``who`` and
            ``note``.
        durable: the commit must survive an OS crash, not only a kill (SQLite fsyncs it).
        at: when the move happened, for one journaled after the fact (a read's ``pending``
            and ``sent``, with its answer); the commit's time when ``None``.
    """

    target: StepStatus
    fields: Mapping[str, Json] = field(default_factory=dict)
    sent: bool = False
    resolving: bool = False
    who: str | None = None
    note: str | None = None
    durable: bool = False
    at: datetime | None = None

    @classmethod
    def to_pending(cls, rendered_request: Json, *, at: datetime | None = None) -> StepChange:
        """The move of :meth:`StateStore.step_pending` (``at``: see the class)."""
        return cls("pending", {"request": rendered_request, "error": None}, at=at)

    @classmethod
    def to_sent(cls, *, durable: bool = True, at: datetime | None = None) -> StepChange:
        """The move of :meth:`StateStore.step_sent`; only a request safe to send again (a
        read) may pass ``durable=False``: an OS crash losing the mark sends it again."""
        return cls("sent", sent=True, durable=durable, at=at)

    @classmethod
    def to_succeeded(cls, output: Json) -> StepChange:
        """The move of :meth:`StateStore.step_succeeded`."""
        return cls("succeeded", {"output": output, "error": None})

    @classmethod
    def to_failed(cls, error: Json) -> StepChange:
        """The move of :meth:`StateStore.step_failed`."""
        return cls("failed", {"error": error})

    @classmethod
    def to_skipped(cls, reason: Json = None) -> StepChange:
        """The move of :meth:`StateStore.step_skipped`."""
        return cls("skipped", {"error": reason})

    @classmethod
    def to_in_doubt(cls, error: Json) -> StepChange:
        """The move of :meth:`StateStore.step_in_doubt`."""
        return cls("in_doubt", {"error": error})

    def check(self, run_id: str, step_id: str, current: StepStatus | None) -> None:
        """Raise :class:`BugError` when this move is illegal from ``current`` (``None``:
        no row yet), such as ``succeeded -> sent``."""
        where = "(new)" if current is None else current
        if self.resolving and current not in RESOLVABLE:
            message = (
                f"run {run_id} step {step_id!r}: only a step that is {sorted(RESOLVABLE)} "
                f"can be resolved; it is {where}"
            )
            raise BugError(message)
        allowed = STEP_TRANSITIONS[current]
        if not self.resolving and self.target not in allowed:
            hint = "; settle it with resolve_step (who and why are recorded)"
            message = (
                f"run {run_id} step {step_id!r}: cannot go from {where} to {self.target}; "
                f"valid next states are {sorted(allowed)}{hint if current in RESOLVABLE else ''}"
            )
            raise BugError(message)
