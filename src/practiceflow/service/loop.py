"""``serve``'s loop: resume unfinished and settled runs, then take pending events to every
recipe of their trigger, waiting on :attr:`Service.wake` (or ``idle`` seconds) when idle.
SIGTERM or SIGINT sets ``stop``: the step being sent finishes and is journaled, the intake
stops (subscriptions kept), and :meth:`Service.run` returns.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Protocol

from practiceflow.errors import PracticeflowError
from practiceflow.runner.execute import Runner, RunOutcome, run_shared
from practiceflow.runner.quarantine import is_quarantined
from practiceflow.runner.run_retry import take_due
from practiceflow.service.event_guard import EventGuard
from practiceflow.service.intake import TriggerIntake
from practiceflow.state import RunRecord, StateStore
from practiceflow.versions.pinned import orphan_runs, settle_orphan_event

logger = logging.getLogger("practiceflow.runner")


class Background(Protocol):
    """Something served alongside the loop (the console): started first, stopped last."""

    def start(self) -> object:
        """Start serving in the background."""

    def stop(self) -> None:
        """Stop serving."""


@dataclass
class Service:
    """The runner loop of ``practiceflow serve``.

    Attributes:
        runners: one per recipe, all with the same store and practice.
        store: the state store.
        intake: the triggers' side, or None to run only events already stored.
        stop: set to stop gracefully (the signal handlers set it).
        idle: seconds to wait for a wake-up before looking at the store anyway.
        wake: set to make the loop look for events now.
        on_outcome: called with every run outcome.
        console: the run console, started and stopped with the service, or None.
        settled: set when a person resolved a step (or the guard recorded a resumed run's
            failure): runs are resumed on the next loop.
        settle_every: seconds between looks for runs settled elsewhere (``runs resolve``).
        guard: the per-event boundary (:mod:`.event_guard`).
        reload: builds the runners again from the recipe files (SIGHUP), or None; runs in
            flight keep their versions.
        reload_wanted: set (by SIGHUP) to reload at the top of the next loop.
        parts: what runs beside the loop (:class:`~.compose.GapWatch`), started before the
            intake and stopped after it.
    """

    runners: list[Runner]
    store: StateStore
    intake: TriggerIntake | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    idle: float = 5.0
    wake: threading.Event = field(default_factory=threading.Event)
    on_outcome: Callable[[RunOutcome], None] | None = None
    console: Background | None = None
    settled: threading.Event = field(default_factory=threading.Event)
    settle_every: float = 1.0
    guard: EventGuard = field(init=False)
    reload: Callable[[], list[Runner]] | None = None
    reload_wanted: threading.Event = field(default_factory=threading.Event)
    parts: list[Background] = field(default_factory=list)
    _started: list[Background] = field(default_factory=list, init=False, repr=False)
    _intake_started: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        self.guard = EventGuard(self.store)
        for runner in self.runners:
            runner.stop = self.stop

    def install_signal_handlers(self) -> None:
        """Stop gracefully on SIGTERM and SIGINT (call from the main thread)."""

        def handle(signum: int, frame: FrameType | None) -> None:
            del frame
            logger.warning("signal %d: finishing the current step, then stopping", signum)
            self.stop.set()
            self.wake.set()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)
        if self.reload is not None:

            def hang_up(signum: int, frame: FrameType | None) -> None:
                del signum, frame
                self.reload_wanted.set()
                self.wake.set()

            signal.signal(signal.SIGHUP, hang_up)

    def reload_recipes(self) -> None:
        """Build the runners again (:attr:`reload`); a recipe not loading changes nothing."""
        self.reload_wanted.clear()
        if self.reload is None:
            return
        try:
            runners = self.reload()
        except PracticeflowError as exc:
            logger.error("reload refused, the recipes served are unchanged: %s", exc)
            return
        for runner in runners:
            runner.stop = self.stop
        self.runners = runners
        logger.info("reloaded: %s", ", ".join(runner.recipe.name for runner in runners))

    def _emit(self, outcome: RunOutcome | None) -> None:
        if outcome is not None and self.on_outcome is not None:
            self.on_outcome(outcome)

    def resume_due_retries(self) -> int:
        """Resume the failed runs whose retry is due (:mod:`practiceflow.runner.run_retry`)."""
        count = 0
        for runner in self.runners:
            for run_id in take_due(self.store, runner.practice, runner.recipe.name):
                if self.stop.is_set():
                    return count
                if self.guard.skips(run_id):
                    continue
                try:
                    outcome: RunOutcome | None = runner.resume_run(run_id, retry_failed=True)
                except Exception as exc:  # recorded on the run by the guard (a StoreError goes up)
                    outcome = self.guard.run_failed(run_id, exc)
                self._emit(outcome)
                count += 1
        return count

    def resume_unfinished(self, *, settled_only: bool = False) -> int:
        """Resume runs left ``running`` (unless ``settled_only``) and ``in_doubt`` runs a
        person settled, anywhere; returns how many."""
        count = self.resume_due_retries()
        for runner in self.runners:
            practice, name = runner.practice, runner.recipe.name
            runs = (
                []
                if settled_only
                else self.store.list_runs(practice=practice, recipe=name, status="running")
            )
            held = self.store.list_runs(practice=practice, recipe=name, status="in_doubt")
            settled = [
                run
                for run in held
                if not is_quarantined(run)  # waits for a person's 'runs retry'
                and not any(step.status == "in_doubt" for step in self.store.get_steps(run.run_id))
            ]
            for run in [*runs, *settled]:
                if self.stop.is_set():
                    return count
                self._resume_one(runner, run)
                count += 1
        # Runs of recipes no longer served finish on their own versions (versions package).
        served = {runner.recipe.name for runner in self.runners}
        sources = {runner.source for runner in self.runners}
        for practice in {runner.practice for runner in self.runners}:
            for run in orphan_runs(self.store, practice, served, settled_only=settled_only):
                if self.stop.is_set():
                    return count
                outcome = self._resume_one(self.runners[0], run)
                if outcome is not None and outcome.status != "running":
                    settle_orphan_event(self.store, run, sources)
                count += 1
        return count

    def _resume_one(self, runner: Runner, run: RunRecord) -> RunOutcome | None:
        if self.guard.skips(run.run_id):
            return None
        try:
            outcome: RunOutcome | None = runner.resume_run(run.run_id)
        except Exception as exc:  # recorded on the run by the guard (a StoreError goes up)
            outcome = self.guard.run_failed(run.run_id, exc)
        if outcome is not None and outcome.status == "running" and outcome.error:
            # Its failure was recorded: started again (or quarantined) next loop,
            # even when its event is handled and no drain brings it back.
            self.settled.set()
        self._emit(outcome)
        return outcome

    def drain(self, limit: int = 100) -> int:
        """Run the pending events of every recipe's trigger once (at most ``limit`` per trigger);
        returns how many events were worked on.
        """
        by_source: dict[str, list[Runner]] = {}
        for runner in self.runners:
            by_source.setdefault(runner.source, []).append(runner)
        count = 0
        for source, runners in by_source.items():
            practice = runners[0].practice
            for event in self.store.pending_events(practice, limit, source=source):
                if self.stop.is_set():
                    return count
                if self.guard.skips(f"{event.source}/{event.event_id}"):
                    continue  # skipped: not counted, so the loop waits when idle
                try:
                    outcomes = run_shared(self.store, practice, runners, event)
                except Exception as exc:  # recorded by the guard (a StoreError goes up)
                    outcomes = self.guard.event_failed(practice, runners, event, exc)
                for outcome in outcomes:
                    self._emit(outcome)
                # An event whose runs another process drives is its to end: not counted,
                # so that the loop waits (and run --once ends) instead of spinning on it.
                if not outcomes or not all(o and o.driven_elsewhere for o in outcomes):
                    count += 1
        return count

    def run_once(self) -> int:
        """Poll once, resume unfinished runs, and process what arrived (``run --once``); returns
        how many events were worked on.
        """
        if self.intake is not None:
            try:
                self.intake.poll_once()
            except PracticeflowError as exc:
                logger.warning("polling skipped: %s; running the events already stored", exc)
        self.resume_unfinished()
        total = 0
        while not self.stop.is_set():
            done = self.drain()
            total += done
            if not done:
                break
        return total

    def start(self) -> None:
        """Start what runs beside the loop, the console, then the intake (subscribe, catch
        up, poll); :meth:`close` stops them. Idempotent."""
        if self._intake_started:
            return
        for runner in self.runners:  # the versions runs will name, stored once, up front
            runner.stored_version()
        for part in [*self.parts, *([self.console] if self.console is not None else [])]:
            part.start()
            self._started.append(part)
        self._intake_started = True
        if self.intake is not None:
            self.intake.start()

    def close(self) -> None:
        """Stop the intake (subscriptions kept unless configured otherwise), the console
        and the parts, in that order (idempotent)."""
        try:
            if self.intake is not None:
                self.intake.stop()
        finally:
            while self._started:
                self._started.pop().stop()

    def run_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Run the loop (started first) until ``done()`` holds, a stop, or ``timeout`` seconds;
        the service stays started (:meth:`close` stops it). Returns whether ``done()`` held.
        """
        self.start()
        deadline = time.monotonic() + timeout
        while not self.stop.is_set() and time.monotonic() < deadline:
            if done():
                return True
            self.wake.clear()
            if not self.drain() and not done():
                self.wake.wait(max(0.0, min(self.idle, 0.05, deadline - time.monotonic())))
        return done()

    def run(self, *, max_loops: int | None = None) -> None:
        """Serve until stopped (``max_loops``: stop after this many loops, for tests)."""
        try:
            self.start()
            if self.reload_wanted.is_set():  # a SIGHUP during start-up
                self.reload_recipes()
            self.resume_unfinished()
            loops = 0
            look = time.monotonic() + self.settle_every
            while not self.stop.is_set():
                if self.reload_wanted.is_set():
                    self.reload_recipes()
                # A person's decisions reach the loop however they were made: the console
                # sets ``settled``; the CLI and Python are found by looking.
                if self.settled.is_set():
                    self.settled.clear()
                    self.resume_unfinished()
                elif time.monotonic() >= look:
                    look = time.monotonic() + self.settle_every
                    self.resume_unfinished(settled_only=True)
                # Cleared before draining: an event stored meanwhile wakes the next wait.
                self.wake.clear()
                if not self.drain() and not self.settled.is_set():
                    self.wake.wait(max(0.0, min(self.idle, look - time.monotonic())))
                loops += 1
                if max_loops is not None and loops >= max_loops:
                    break
        finally:
            self.close()
            logger.info("serve: stopped; unfinished runs resume on the next start")
