"""The journal of one run: the one rule by which the runner records what it does.

The rule, for every step of a run:

1. **A write's intent is durable before it leaves.** Its rendered request (personal data
   masked) is journaled ``pending`` then ``sent``, in one commit made once the rate
   budget has admitted the request and immediately before it leaves, and fsynced: it
   survives an OS crash, not only the process being killed. A wait for the budget is
   never journaled ``sent``: a write found ``sent`` on restart may have reached the API,
   and is read back (``in_doubt``) before anything is sent again.
2. **A read is journaled with its outcome.** A read (or a local step) is safe to send
   again, so its ``pending`` and ``sent`` (with the time it left) are committed together
   with its outcome; a crash before that commit sends it again.
3. **Every outcome is committed before the next step starts.** ``succeeded`` (with the
   output later steps read), ``failed``, ``skipped`` and ``in_doubt`` are committed
   before the runner moves on, so a step journaled ``succeeded`` is never sent again and
   a process killed after any successful write resumes without a person. The store
   applies commits in order, so the next write's fsynced intent makes this outcome
   survive an OS crash too: after a power loss at most a run's last write may be found
   ``sent``, and it is read back, never sent again on a guess.

The run itself ends in one commit: its status and, when asked, its event marked handled.
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

__all__ = ["RunJournal", "StepTaken"]


class StepTaken(Exception):
    """Another runner moved this step since the run was loaded (two drove the same run);
    nothing of this attempt was journaled or sent. The runner drives the run again as
    the store now holds it."""


class RunJournal:
    """The journal of one run, as the step executor writes it (see the module docstring).

    Args:
        store: the state store holding the run.
        run_id: the run.
        steps: the run's journaled steps when it was loaded (step id -> record).
        lease: the owner token of the run's lease this runner holds
            (:mod:`.run_lease`): a write's ``sent`` is journaled only while it is held.
    """

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
        """Rule 1: journal a write ``pending`` (with its masked request) and ``sent``,
        fsynced, before it leaves.

        Args:
            step_id: the step.
            entry: ``{"use", "input", "request"}``, personal data masked.
            status: the step's status as this runner knows it.

        Raises:
            StepTaken: the store holds another status, or another process took the run's
                lease: another runner drives the step.
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
        """Rule 1 after a 429: the API refused the write without acting on it, so it goes
        back to ``pending`` while it waits to be admitted again. Not fsynced: if an OS
        crash loses this commit, the step is found ``sent`` and read back, as before."""
        self.outcome(step_id, StepChange.to_pending(entry))

    def read_outcome(
        self,
        step_id: str,
        entry: Any,
        sent_at: Sequence[datetime],
        outcome: StepChange,
        status: StepStatus | None,
    ) -> None:
        """Rules 2 and 3: journal a read's ``pending``, ``sent`` (when it left) and its
        outcome in one commit.

        Args:
            step_id: the step.
            entry: ``{"use", "input", "request"}``, personal data masked.
            sent_at: each time the request left (none: it never did, only its outcome).
            outcome: the outcome's move.
            status: the step's status before this attempt.
        """
        moves: list[StepChange] = []
        if status == "failed" or sent_at:
            moves.append(StepChange.to_pending(entry, at=sent_at[0] if sent_at else None))
        moves.extend(StepChange.to_sent(durable=False, at=at) for at in sent_at)
        moves.append(outcome)
        self.outcome(step_id, *moves)

    def outcome(self, step_id: str, *moves: StepChange) -> None:
        """Rule 3: journal a step's outcome (after the moves that lead to it) before the
        next step starts."""
        with self.store.atomic():
            self.store.change_step(self.run_id, step_id, *moves)

    def end(
        self,
        practice: str,
        status: RunStatus,
        error: Any = None,
        handled: EventRecord | None = None,
    ) -> None:
        """End the run: its status and, with ``handled``, its event marked handled, in
        one commit.

        Args:
            practice: the practice the event is stored under.
            status: the run's final status.
            error: why it failed or is held.
            handled: the event to mark handled (None: left as it is).
        """
        with self.store.atomic():
            self.store.set_run_status(self.run_id, status, error)
            if handled is not None:
                self.store.mark_event_handled(practice, handled.source, handled.event_id)
