"""A replica polls the practices it owns, in-process: no queue job per poll.

:class:`PracticeOwner` runs beside the replica's queue worker, in threads of its own: a
keeper renews the leases (:mod:`.leases`) and flushes the owned budgets' ledger every
second; a scheduler keeps each owned practice's next poll in a heap at a fixed phase of
its period and hands what is due to a pool of threads, at most one poll in flight per
practice. A practice paused by a 429 waits in the heap, holding no thread. One sweep for all
owned practices asks the store which have an event pending or a retry due, and sweeps only
those. Only durable work goes through the queue: events to run (``run_events``) and runs to
resume.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from typing import Protocol

from practiceflow.fleet.leases import LeaseChange, PracticeLeases
from practiceflow.fleet.schedule import phase_of

__all__ = ["OwnedFleet", "PracticeOwner"]

logger = logging.getLogger("practiceflow.fleet")

#: Seconds between two writes of the owned budgets' admissions.
_LEDGER_EVERY = 1.0


class OwnedFleet(Protocol):
    """What the owner asks of the replica's fleet (:class:`.runtime.Fleet`)."""

    def poll_period(self, practice: str) -> float: ...

    def gained(self, practice: str) -> float: ...

    def paused_for(self, practice: str) -> float: ...

    def poll_practice(self, practice: str, *, scheduled_at: float | None = None) -> int: ...

    def sweep(self, practice: str) -> int: ...

    def to_sweep(self) -> set[str]: ...

    def active_practices(self) -> set[str]: ...

    def activity(self, practice: str) -> None: ...

    def own(self, practice: str) -> None: ...

    def disown(self, practice: str) -> None: ...

    def flush_ledger(self) -> int: ...

    hurry: Callable[[str], None] | None


class PracticeOwner:
    """Polls and sweeps the practices this replica holds a lease on (module docstring).

    Args:
        fleet: the replica's fleet.
        leases: the replica's leases.
        threads: polls (and sweeps) running at once.
        sweep_every: seconds between two sweeps of a practice's pending events.
        clock: Unix time (tests may pass their own).
    """

    def __init__(
        self,
        fleet: OwnedFleet,
        leases: PracticeLeases,
        *,
        threads: int = 16,
        sweep_every: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.fleet = fleet
        self.leases = leases
        self.sweep_every = max(1.0, sweep_every)
        self.clock = clock
        self.owned: set[str] = set()
        self.polls = 0
        self._pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="pf-poll")
        self._heap: list[tuple[float, int, str, str, float]] = []
        self._order = itertools.count()
        self._busy: set[tuple[str, str]] = set()
        #: practice -> when its next poll is due; a heap entry due at another time is stale.
        self._due: dict[str, float] = {}
        #: Practices taken since the last sweep: events from before they came here do not
        #: speed their polls up (they start quiet: ``OwnedFleet.gained``).
        self._taken: set[str] = set()
        self._running: set[Future[None]] = set()
        self._seeded: set[str] = set()
        # Re-entrant: a future already done calls _done at once, in _dispatch's thread.
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- life -------------------------------------------------------------------------

    def start(self) -> PracticeOwner:
        """Take leases once (in this thread), then run the keeper and the scheduler."""
        self._renew()
        self.fleet.hurry = self.hurry
        with self._wake:
            self._push(self.clock() + 1.0, "sweeps", "")  # what a dead replica left pending
        for target, name in ((self._keep, "pf-leases"), (self._schedule, "pf-schedule")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, *, release: bool = True, patience: float = 20.0) -> None:
        """Stop scheduling, let the polls under way end, write the ledger, and give the
        leases back (``release``) so that the other replicas take them at once.

        Bounded by about ``patience`` seconds: with the database away (a replica giving
        up), what is left undone is what the lease timeout undoes.
        """
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        deadline = time.monotonic() + patience
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            running = list(self._running)
        wait(running, timeout=max(0.0, deadline - time.monotonic()))

        def goodbye() -> None:
            self.fleet.flush_ledger()
            if release:
                self.leases.release()
            self.leases.close()

        last = threading.Thread(target=goodbye, name="pf-leases-release", daemon=True)
        last.start()
        last.join(timeout=max(1.0, deadline - time.monotonic()))
        self.owned.clear()

    # --- leases -----------------------------------------------------------------------

    def _keep(self) -> None:
        while not self._stop.wait(_LEDGER_EVERY):
            self.fleet.flush_ledger()
            if time.monotonic() >= self.leases.due():
                self._renew()

    def _renew(self) -> None:
        try:
            change = self.leases.renew()
        except Exception as exc:  # the database away: keep polling while the leases hold
            logger.warning("leases: renewal failed: %s", exc)
            if time.monotonic() >= self.leases.valid_until() and self.owned:
                logger.warning("leases: may have expired; polling none until renewed")
                self._apply(LeaseChange(frozenset(), frozenset(self.owned), frozenset(), 0))
            return
        self._apply(change)

    def _apply(self, change: LeaseChange) -> None:
        for practice in sorted(change.lost):
            self.owned.discard(practice)
            self._seeded.discard(practice)
            self.fleet.disown(practice)
        if change.lost:
            logger.info("leases: %d practice(s) no longer owned here", len(change.lost))
        now = self.clock()
        with self._wake:
            for practice in change.lost:
                self._due.pop(practice, None)
            taken = sorted(change.gained - self.owned)
            for practice in taken:
                self.owned.add(practice)
                period = self.fleet.gained(practice)
                self._push_poll(practice, self._next_slot(f"poll:{practice}", period, now))
            if taken:  # what a dead owner stored but did not queue, or left to retry
                self._taken.update(taken)
                self._submit("sweeps", "", now)
            self._wake.notify_all()

    # --- schedule ---------------------------------------------------------------------

    @staticmethod
    def _next_slot(name: str, period: float, after: float) -> float:
        """The first time at or after ``after`` at ``name``'s phase of ``period``."""
        whole = max(1, int(period))
        phase = phase_of(name, whole)
        base = math.floor(after / whole) * whole + phase
        return base if base >= after else base + whole

    def _push(self, due: float, kind: str, practice: str, scheduled: float | None = None) -> None:
        entry = (due, next(self._order), kind, practice, due if scheduled is None else scheduled)
        heapq.heappush(self._heap, entry)

    def _push_poll(self, practice: str, due: float, scheduled: float | None = None) -> None:
        self._due[practice] = due
        self._push(due, "poll", practice, scheduled)

    def hurry(self, practice: str) -> None:
        """Bring the practice's next poll to its cadence's interval from now, when it was
        due later (the fleet calls this once its polls sped up: something changed)."""
        with self._wake:
            due = self._due.get(practice)
            if due is None:
                return  # not owned here
            period = self.fleet.poll_period(practice)
            sooner = self._next_slot(f"poll:{practice}", period, self.clock())
            if sooner < due:
                self._push_poll(practice, sooner)
                self._wake.notify_all()

    def _schedule(self) -> None:
        while not self._stop.is_set():
            with self._wake:
                if not self._heap:
                    self._wake.wait(1.0)
                    continue
                due, _, kind, practice, scheduled = self._heap[0]
                wait = due - self.clock()
                if wait > 0:
                    self._wake.wait(min(wait, 1.0))
                    continue
                heapq.heappop(self._heap)
                if kind == "sweeps":
                    self._push(max(due + self.sweep_every, self.clock()), kind, practice)
                    self._submit(kind, practice, scheduled)
                elif practice in self.owned and self._due.get(practice) == due:
                    self._dispatch(practice, scheduled)  # else lost, or moved by hurry()

    def _dispatch(self, practice: str, scheduled: float) -> None:
        """Poll what is due (the lock held), and schedule its next turn."""
        paused = self.fleet.paused_for(practice)
        if paused > 0:  # a 429's pause: wait in the heap, holding no thread
            self._push_poll(practice, self.clock() + paused, scheduled)
            return
        period = self.fleet.poll_period(practice)
        following = self._next_slot(f"poll:{practice}", period, max(scheduled + 1, self.clock()))
        self._push_poll(practice, following)
        self._submit("poll", practice, scheduled)

    def _submit(self, kind: str, practice: str, scheduled: float) -> None:
        """Hand ``kind`` of ``practice`` to a thread unless one is under way (the lock held)."""
        key = (kind, practice)
        if key in self._busy:
            return  # the one under way takes this turn too
        self._busy.add(key)
        try:
            future = self._pool.submit(self._run, kind, practice, scheduled)
        except RuntimeError:  # the pool shut down: the replica stops
            self._busy.discard(key)
            return
        self._running.add(future)
        future.add_done_callback(partial(self._done, key=key))

    def _run(self, kind: str, practice: str, scheduled: float) -> None:
        if kind == "sweeps":
            found = self.fleet.to_sweep()
            active = self.fleet.active_practices()
            with self._lock:
                for each in sorted(found & self.owned):
                    self._submit("sweep", each, scheduled)
                active = (active & self.owned) - self._taken
                self._taken = set()
            for each in active:
                self.fleet.activity(each)  # delivered to any replica: poll it faster here
            return
        if practice not in self.owned:
            return
        if practice not in self._seeded:  # its budget, from the ledger, before it sends
            self.fleet.own(practice)
            self._seeded.add(practice)
        if kind == "sweep":
            self.fleet.sweep(practice)
            return
        self.fleet.poll_practice(practice, scheduled_at=scheduled)
        self.polls += 1

    def _done(self, future: Future[None], *, key: tuple[str, str]) -> None:
        with self._lock:
            self._busy.discard(key)
            self._running.discard(future)
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            logger.warning("%s of %s failed: %s", key[0], key[1], error)
