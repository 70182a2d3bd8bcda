"""The journal of one run: the one rule by which the runner records each step.

1. **A write's intent is durable before it leaves**: journaled ``pending`` then ``sent``
   (request masked) in one fsynced commit, once the rate budget admitted it and just before
   it leaves. A write waiting for the budget is never ``sent``; one found ``sent`` on restart
   may have reached the API and is read back (``in_doubt``), never sent again on a guess.
2. **A read is journaled with its outcome**: safe to send again, so its ``pending`` and
   ``sent`` are committed with its outcome; a crash before that commit sends it again.
3. **Every outcome is committed before the next step starts**, so a ``succeeded`` step is
   never sent again. Commits apply in order, so the next write's fsynced intent makes an
   outcome survive an OS crash too: after a power loss at most the last write is ``sent``.

The run ends in one commit: its status and, when asked, its event marked handled.
Users' view: docs/architecture.md ("A run, step by step").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from practiceflow.state import (
    EventRecord,
    RunStatus,
    StateStore,
    StepChange,
    StepRecord,
    StepStatus,
)


class StepTaken(Exception):
    """Another runner moved this step since the run was loaded; nothing was journaled or sent."""


class RunJournal:
    """The journal of one run (``lease``: the run-lease owner token ``sent`` is checked against)."""

    def __init__(
        self,
        store: StateStore,
        run_id: str,
        steps: dict[str, StepRecord],
        lease: str | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self._loaded = steps
        self._lease = lease

    def loaded(self, step_id: str) -> StepRecord | None:
        """The step as journaled when the run was loaded (None: not journaled then)."""
        return self._loaded.get(step_id)

    def now(self) -> datetime:
        """The store's clock (the time a move happened)."""
        return self.store.now()

    def write_intent(self, step_id: str, entry: Any, status: StepStatus | None) -> None:
        """Rule 1: journal a write ``pending`` and ``sent``, fsynced, before it leaves; raises
        :class:`StepTaken` when another runner holds the step or the run's lease.
        """
        moves = (StepChange.to_pending(entry), StepChange.to_sent(durable=True))
        with self.store.atomic(durable=True):
            if self._lease is not None:
                held = self.store.run_lease(self.run_id)  # locked until this commit
                if held is None or held.owner != self._lease:
                    raise StepTaken(f"run {self.run_id}: its lease was taken by another process")
            current = self.store.get_step(self.run_id, step_id)
            if (current.status if current else None) != status:
                raise StepTaken(f"run {self.run_id} step {step_id!r}")
            self.store.change_step(self.run_id, step_id, *moves)

    def refused(self, step_id: str, entry: Any) -> None:
        """Rule 1 after a 429: back to ``pending`` (not fsynced: if lost, ``sent`` is read back)."""
        self.outcome(step_id, StepChange.to_pending(entry))

    def read_outcome(
        self,
        step_id: str,
        entry: Any,
        sent_at: Sequence[datetime],
        outcome: StepChange,
        status: StepStatus | None,
    ) -> None:
        """Rules 2 and 3: a read's ``pending``, ``sent`` (each time) and outcome, one commit."""
        moves: list[StepChange] = []
        if status == "failed" or sent_at:
            moves.append(StepChange.to_pending(entry, at=sent_at[0] if sent_at else None))
        moves.extend(StepChange.to_sent(durable=False, at=at) for at in sent_at)
        moves.append(outcome)
        self.outcome(step_id, *moves)

    def outcome(self, step_id: str, *moves: StepChange) -> None:
        """Rule 3: journal a step's outcome (and the moves before it) before the next step."""
        with self.store.atomic():
            self.store.change_step(self.run_id, step_id, *moves)

    def end(
        self,
        practice: str,
        status: RunStatus,
        error: Any = None,
        handled: EventRecord | None = None,
    ) -> None:
        """End the run: its status and, with ``handled``, its event handled, in one commit."""
        with self.store.atomic():
            self.store.set_run_status(self.run_id, status, error)
            if handled is not None:
                self.store.mark_event_handled(practice, handled.source, handled.event_id)
