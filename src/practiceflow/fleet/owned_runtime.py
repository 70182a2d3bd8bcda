"""The fleet's side of owning practices: what :class:`.owner.PracticeOwner` calls.

:class:`OwnedPractices` is mixed into :class:`.runtime.Fleet`. With ``owned=True`` a fleet
counts each practice's budget in a :class:`.owned_budget.LeasedBucket` (in memory while
owned, the shared table its ledger) and gives its pollers a
:class:`.cursor_cache.CursorCache` (cursors read once, written in batches).
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import procrastinate

from practiceflow.api import Client
from practiceflow.budget.postgres_bucket import WaitingPostgresBucket
from practiceflow.budget.rate_budget import RateBudget, RateLimits, budget_table
from practiceflow.errors import PracticeflowError, RateLimitError
from practiceflow.fleet.cursor_cache import CursorCache
from practiceflow.fleet.owned_budget import BudgetLedger, LeasedBucket
from practiceflow.fleet.queue import defer_events
from practiceflow.triggers.cadence import Cadence, PollNeed, group_cadence
from practiceflow.triggers.shared_poll import SharedPoll, group_members

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from practiceflow.fleet.runtime import PracticeRuntime
    from practiceflow.ops import OpsMetrics
    from practiceflow.state import StateStore

__all__ = ["POLL_MAX_WAIT", "OwnedPractices", "leased_budget", "poll_client"]

logger = logging.getLogger("practiceflow.fleet")


#: Budget tables created per transaction at a replica's start.
_TABLES_PER_TRANSACTION: Final = 500
#: Longest a poll waits for its practice's budget or a 429's pause, seconds; past it the
#: poll is skipped (its cursor unmoved) and the practice waits in the schedule instead,
#: holding no thread.
POLL_MAX_WAIT: Final = 5.0


def poll_client(client: Client) -> Client:
    """The practice's client as its polls use it: the same session, credentials and
    budget, but waiting at most :data:`POLL_MAX_WAIT` (a shallow copy)."""
    polling = copy.copy(client)
    polling.limits = replace(client.limits, max_wait=min(client.limits.max_wait, POLL_MAX_WAIT))
    return polling


def shared_polls(runtime: PracticeRuntime) -> list[SharedPoll]:
    """The practice's polls, one per list its triggers read (triggers.shared_poll).

    Built again only when the practice's pollers change (a reload, a standby taking over),
    so a shared poll keeps what it learned (page size, the previous page) between polls.
    """
    names = tuple(runtime.pollers)
    if runtime.shared_polls is None or runtime.shared_polls[0] != names:
        members = [poller.member for poller in runtime.pollers.values()]
        client = next(iter(runtime.pollers.values())).client if names else None
        groups = [SharedPoll(client, group) for group in group_members(members)]
        runtime.shared_polls = (names, groups)
    return runtime.shared_polls[1]


def practice_cadence(runtime: PracticeRuntime) -> Cadence:
    """How often the owner polls the practice (triggers.cadence): ``poll_every`` while its
    lists change, doubling after each quiet poll up to the shortest ``max_delay`` its
    polled triggers' recipes give (none given: always ``poll_every``). Built again only
    when its pollers change."""
    names = tuple(runtime.pollers)
    if runtime.cadence is None or runtime.cadence[0] != names:
        every = float(runtime.config.poll_every)
        recipes = [runner.recipe for runner in runtime.runners]
        needs = []
        for key in names:
            delays = [r.recipe.max_delay for r in recipes if r.trigger.key == key]
            given = [delay for delay in delays if delay is not None]
            needs.append(PollNeed.polled(every, min(given, default=None)))
        cadence = group_cadence(needs or [PollNeed.polled(every, None)], clock=time.time)
        runtime.cadence = (names, cadence)
    return runtime.cadence[1]


def create_budget_tables(pool: ConnectionPool[Any], budgets: list[RateBudget]) -> int:
    """Create the missing tables of ``leased_budget``'s budgets, 500 a transaction (a
    round trip of its own per practice made a fleet of thousands take minutes to start).

    Returns:
        How many were missing.
    """
    with pool.connection() as connection:
        rows = connection.execute(
            "SELECT tablename FROM pg_tables"
            " WHERE schemaname = current_schema() AND tablename LIKE 'ratelimit%'"
        ).fetchall()
        known = {str(row[0]) for row in rows}
        missing = [
            bucket.shared
            for budget in budgets
            if isinstance(bucket := budget.bucket, LeasedBucket)
            and bucket.shared.full_table not in known
        ]
        connection.commit()  # else each batch below is a savepoint of the read's transaction
        ordered = sorted(missing, key=lambda shared: shared.full_table)
        # A transaction holds a lock per table and index it creates: PostgreSQL's lock table
        # (max_locks_per_transaction x connections) ran out at 10,000 tables in one.
        for start in range(0, len(ordered), _TABLES_PER_TRANSACTION):
            with connection.transaction():
                for shared in ordered[start : start + _TABLES_PER_TRANSACTION]:
                    shared.create_table(connection)
    return len(missing)


def leased_budget(pool: ConnectionPool[Any], client_id: str, limits: RateLimits) -> RateBudget:
    """A practice's budget that its owner counts in memory (:class:`LeasedBucket`); its
    table is made by :func:`create_budget_tables`."""
    rates = limits.rates()
    shared = WaitingPostgresBucket(
        pool, budget_table(client_id), rates, owns_pool=False, exists=True
    )
    return RateBudget(limits, bucket=LeasedBucket(shared, rates), clock=time.time)


class OwnedPractices:
    """Polls of one practice at a time, for the practices this replica owns."""

    practices: dict[str, PracticeRuntime]
    store: StateStore
    metrics: OpsMetrics | None
    app: procrastinate.App
    #: Set by the owner: cursors kept in memory and written in batches.
    cursors: CursorCache | None
    #: Set by the owner: where owned budgets' admissions are written.
    ledger: BudgetLedger | None
    #: An app to queue events from the owner's threads (a synchronous one).
    defer_app: procrastinate.App | None
    #: Set by the owner: brings a practice's next poll sooner (its cadence sped up).
    hurry: Callable[[str], None] | None = None
    #: Since when :meth:`active_practices` looks for events received.
    _active_since: datetime | None = None

    def _runtime(self, practice: str) -> PracticeRuntime:
        return self.practices[practice]

    def poll_period(self, practice: str) -> float:
        """Seconds until the practice's next poll, as its cadence stands now."""
        return practice_cadence(self._runtime(practice)).interval

    def gained(self, practice: str) -> float:
        """This replica has just taken the practice (at its start, or from a replica that
        died or left): its pace lived where it was polled, so it starts as a quiet one,
        polled within its slowest period (the ``max_delay`` asked for), and at
        ``poll_every`` again once a poll finds a change or a delivery comes. Returns that
        period (docs/deploy.md says why)."""
        cadence = practice_cadence(self._runtime(practice))
        cadence.interval = cadence.slowest
        return cadence.interval

    def activity(self, practice: str) -> None:
        """Something arrived for the practice (a delivery, events another replica found):
        its polls go back to ``poll_every`` at once."""
        runtime = self.practices.get(practice)
        if runtime is None:
            return
        cadence = practice_cadence(runtime)
        slower = cadence.interval > cadence.fastest
        cadence.activity()
        if slower and self.hurry is not None:
            self.hurry(practice)

    def active_practices(self) -> set[str]:
        """The practices that received events since the last call (any replica's): the
        owner speeds their polls up, wherever the delivery landed."""
        now = self.store.now()
        since, self._active_since = self._active_since or now, now
        return self.store.practices_with_events_since(since)

    def paused_for(self, practice: str) -> float:
        """Seconds left of the practice's 429 pause (0: it may send)."""
        budget = self._runtime(practice).budget
        until = budget.paused_until
        return 0.0 if until is None else max(0.0, until - budget.clock())

    def poll_practice(self, practice: str, *, scheduled_at: float | None = None) -> int:
        """Poll every trigger of one practice once (due at Unix time ``scheduled_at``, for
        the lag); queue the new events; returns how many were found.

        The cursor moves are written in one transaction, and only then are the events
        queued: a job never exists for an event whose cursor could go back. When that
        write fails, the events stay pending (stored) and the sweep queues them.
        """
        runtime = self._runtime(practice)
        if scheduled_at is not None and self.metrics is not None:
            self.metrics.poll_started(practice, scheduled_at)
        found: list[tuple[str, str]] = []
        for shared in shared_polls(runtime):
            names = ", ".join(shared.names)
            try:
                done = shared.poll_once()
            except RateLimitError as exc:
                # The server's Retry-After (or the spent budget's wait), past what a poll
                # waits: the practice waits in the schedule (paused_for), not in a thread.
                runtime.budget.pause_for(exc.retry_after or 0.0)
                logger.warning("poll of %s / %s: paused: %s", practice, names, exc)
                break
            except PracticeflowError as exc:
                logger.warning("poll of %s / %s: skipped: %s", practice, names, exc)
                continue
            found += [
                (name, event.id) for name, result in done.results.items() for event in result.events
            ]
        if self.cursors is not None:
            self.cursors.flush(practice)
        cadence = practice_cadence(runtime)
        slower = cadence.interval > cadence.fastest
        cadence.polled(changed=bool(found))
        if found:
            defer_events(self.defer_app or self.app, practice)
            logger.info("poll of %s: %d new event(s)", practice, len(found))
            if slower and self.hurry is not None:
                self.hurry(practice)
        return len(found)

    def to_sweep(self) -> set[str]:
        """The practices with an event pending or a run retry due (one query for all)."""
        return self.store.practices_to_sweep()

    def own(self, practice: str) -> None:
        """This replica now owns the practice: count its budget in memory, and read its
        cursors afresh (another replica may have moved them since this one started)."""
        if self.cursors is not None:
            self.cursors.forget(practice)
        bucket = self._runtime(practice).budget.bucket
        if self.ledger is not None and isinstance(bucket, LeasedBucket) and not bucket.owned:
            self.ledger.seed(bucket, int(time.time() * 1000))

    def disown(self, practice: str) -> None:
        """This replica no longer owns the practice: write what it counted, forget its
        cursors, count through the shared table again."""
        bucket = self._runtime(practice).budget.bucket
        if isinstance(bucket, LeasedBucket) and bucket.owned:
            pending = bucket.disown()
            if pending and self.ledger is not None:
                bucket._pending[:0] = pending
                self.ledger.flush([bucket], int(time.time() * 1000))
        if self.cursors is not None:
            self.cursors.forget(practice)

    def flush_ledger(self) -> int:
        """Write every owned budget's admissions to its table (the keeper, each second)."""
        if self.ledger is None:
            return 0
        return self.ledger.flush(self.ledger.take_dirty(), int(time.time() * 1000))
