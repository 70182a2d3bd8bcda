"""The one interface of every state store: :class:`StateStore`.

Everything is keyed by ``practice`` (a string naming the practice / credentials) so that
two practices sharing a store never see each other's events, cursors or runs. Each method
that changes something is one committed transaction: when it returns, the change survives
a crash.

The step journal methods (``step_pending`` ... ``resolve_step``) are implemented here once,
on top of a single abstract :meth:`StateStore._change_step`, so that every store applies
the same transition rules (:data:`~practiceflow.state.rows.STEP_TRANSITIONS`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, ClassVar, Self

from practiceflow.errors import BugError, ConfigError
from practiceflow.state.attention import AttentionRows
from practiceflow.state.heartbeats import HeartbeatRows
from practiceflow.state.rows import (
    RESOLUTIONS,
    CursorState,
    EventRecord,
    Json,
    NewEvent,
    PracticeCounts,
    Resolution,
    RunRecord,
    RunStatus,
    StepRecord,
    StepStatus,
    StepTransition,
    SubscriptionHealth,
    SubscriptionRecord,
    SubscriptionStatus,
    VersionRecord,
    check_value,
)
from practiceflow.state.run_leases import RunLease
from practiceflow.state.steps import (
    StepChange,
    StepWrite,
    check_step_changes,
    fold_step_changes,
)

__all__ = [
    "DEFAULT_KEEP_SEEN",
    "Clock",
    "StateStore",
    "StepChange",
    "StepWrite",
    "check_step_changes",
    "fold_step_changes",
]

#: How long ids of handled events are kept for deduplication by default.
DEFAULT_KEEP_SEEN = timedelta(days=7)

#: A function returning the current time, timezone-aware; injected by tests.
Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class StateStore(AttentionRows, HeartbeatRows, ABC):
    """Durable state of triggers and runs; see the package docstring for what it holds.

    Stores are opened with :func:`practiceflow.state.open_store` and closed with
    :meth:`close` (or used as a context manager). They are safe to share between threads.

    Attributes:
        scheme: the URL scheme the store is registered under (``sqlite``).
        local_reads: whether reads are local and quick, never waiting on a network (the
            webhook receiver then looks subscriptions up on its event loop, not in a
            thread).
    """

    scheme: ClassVar[str]
    local_reads: ClassVar[bool] = False

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock: Clock = clock or _utc_now

    def now(self) -> datetime:
        """The store's current time (UTC), from the injected clock when there is one."""
        return self._clock().astimezone(UTC)

    @classmethod
    @abstractmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> Self:
        """Open the store a URL names (already known to use this store's scheme).

        Raises:
            ConfigError: the URL is unusable, or the store was written by a newer
                practiceflow.
        """

    @abstractmethod
    def close(self) -> None:
        """Release connections; the store cannot be used afterwards."""

    @contextmanager
    def atomic(self, *, durable: bool = False) -> Iterator[None]:
        """Make the calls inside one transaction, where the store can: one commit, all or none.

        Only an optimisation: every call keeps its own meaning, so a caller must be
        correct when they commit one by one (as this default does). Inside, a call that
        raises aborts the whole transaction: let the error out of the block rather than go
        on. The transaction belongs to the thread that opened it; a nested block joins it.

        Args:
            durable: fsync the commit. Say so when a call inside needs it (a write step's
                ``sent``, an event before its delivery is acknowledged): a store that
                fixes durability when the transaction begins, as SQLite does, raises
                :class:`BugError` for a durable call inside a block opened without it.
        """
        yield

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- events ---------------------------------------------------------------------------

    def record_event(
        self,
        practice: str,
        source: str,
        event_key: str,
        event_id: str,
        payload: Json,
        signature: str | None = None,
        received_at: datetime | None = None,
    ) -> bool:
        """Record an incoming event unless it was already seen.

        Args:
            practice: the practice it belongs to.
            source: where it came in (trigger or subscription key); dedupe is per source.
            event_key: the event type, such as ``proposal.accepted``.
            event_id: the event's id (``X-Svc-Event-Id``, or a poll's dedupe key).
            payload: the body, as JSON.
            signature: the webhook signature, when signed: a replay under a new event id
                carries the same signature and is caught by it.
            received_at: when it arrived; now when omitted.

        Returns:
            ``True`` when recorded, ``False`` when the id or the signature was seen.
        """
        event = NewEvent(practice, source, event_key, event_id, payload, signature, received_at)
        return self.record_events([event])[0]

    @abstractmethod
    def record_events(self, events: Sequence[NewEvent]) -> list[bool]:
        """Record several incoming events in **one** durable commit, each unless seen.

        The same dedupe as :meth:`record_event`, applied in order: an event that repeats
        an id or a signature earlier in ``events`` is a duplicate too. Either all are
        committed or, on an error, none: callers acknowledge none of them then. The
        receiver uses it to commit concurrent deliveries together (group commit), paying
        one fsync for the batch instead of one per delivery.

        Returns:
            For each event, in order, ``True`` when recorded, ``False`` when seen.
        """

    @abstractmethod
    def seen_event(
        self, practice: str, source: str, event_id: str, signature: str | None = None
    ) -> bool:
        """Whether an event with this id (or, when given, this signature) was recorded."""

    @abstractmethod
    def get_event(self, practice: str, source: str, event_id: str) -> EventRecord | None:
        """One recorded event, or ``None``."""

    @abstractmethod
    def pending_events(
        self, practice: str, limit: int = 100, *, source: str | None = None
    ) -> list[EventRecord]:
        """Events not yet handled, oldest first.

        Args:
            practice: whose events.
            limit: at most this many.
            source: only those from this source, when given.
        """

    @abstractmethod
    def mark_event_handled(
        self, practice: str, source: str, event_id: str, handled_at: datetime | None = None
    ) -> None:
        """Mark an event handled (idempotent: the first time is kept).

        Raises:
            BugError: no such event was recorded.
        """

    @abstractmethod
    def purge_seen(self, older_than: timedelta = DEFAULT_KEEP_SEEN) -> int:
        """Forget handled events received more than ``older_than`` ago.

        Unhandled events are never purged. Ids stay deduplicated for at least
        ``older_than``; a redelivery after that would be taken as new.

        Returns:
            How many events were forgotten.
        """

    # --- polling cursors ------------------------------------------------------------------

    @abstractmethod
    def get_cursor_state(self, practice: str, trigger_key: str) -> CursorState | None:
        """The cursor with its boundary keys, or ``None`` before the first poll."""

    def get_cursor(self, practice: str, trigger_key: str) -> str | None:
        """The cursor value, or ``None`` before the first poll."""
        state = self.get_cursor_state(practice, trigger_key)
        return None if state is None else state.value

    @abstractmethod
    def set_cursor(
        self, practice: str, trigger_key: str, value: str, boundary_keys: Iterable[str] = ()
    ) -> None:
        """Move the cursor, in one transaction with its boundary keys.

        When ``value`` is the stored one, ``boundary_keys`` are added to those already
        kept (more records handled at the same ``lastUpdated``); when it differs, they
        replace them. Call it only after the events up to ``value`` are handled.
        """

    # --- webhook subscriptions -------------------------------------------------------------

    @abstractmethod
    def save_subscription(
        self,
        practice: str,
        trigger_key: str,
        subscription_id: str | None,
        event: str,
        url: str,
        secret: str,
        path_token: str,
        status: SubscriptionStatus,
    ) -> SubscriptionRecord:
        """Create or replace the subscription of (practice, trigger_key).

        Save it as ``pending`` before subscribing (so a delivery racing the answer finds
        it), then ``active`` with the id and secret, or ``in_doubt`` if the answer was lost.

        Raises:
            BugError: ``status`` is not valid, or ``path_token`` belongs to another
                subscription.
        """

    @abstractmethod
    def get_subscription(self, practice: str, trigger_key: str) -> SubscriptionRecord | None:
        """The subscription of a trigger, or ``None``."""

    @abstractmethod
    def find_subscription_by_path(self, path_token: str) -> SubscriptionRecord | None:
        """The subscription a delivery's URL path token routes to, or ``None``."""

    @abstractmethod
    def list_subscriptions(self, practice: str | None = None) -> list[SubscriptionRecord]:
        """Subscriptions of one practice, or of all when ``practice`` is ``None``."""

    @abstractmethod
    def delete_subscription(self, practice: str, trigger_key: str) -> bool:
        """Forget a subscription; ``True`` when there was one."""

    @abstractmethod
    def record_test_delivery(
        self, practice: str, trigger_key: str, at: datetime | None = None
    ) -> None:
        """Note that a verified test delivery reached a trigger (``at``: now if omitted)."""

    @abstractmethod
    def count_resubscribe(self, practice: str, trigger_key: str) -> int:
        """Count one re-subscribe of a trigger's lost subscription; returns the new count."""

    @abstractmethod
    def set_test_asked(
        self, practice: str, trigger_key: str, asked_at: datetime | None, event_id: str | None
    ) -> None:
        """Note a test delivery asked for at ``asked_at`` (with the event id its answer
        gave, when known), or none awaited any more (``asked_at`` None)."""

    @abstractmethod
    def subscription_health(self, practice: str, trigger_key: str) -> SubscriptionHealth:
        """Last delivery (newest webhook event kept), last test delivery and re-subscribes.

        Nothing recorded yet gives ``None`` times and ``0`` re-subscribes.
        """

    # --- runs -------------------------------------------------------------------------------

    @abstractmethod
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
        """Start the one run of ``recipe`` for an event, or find it.

        Exactly one run exists per (practice, recipe, event_id), enforced by the
        database, so concurrent callers (threads or processes) agree on it.

        Args:
            practice: the practice.
            recipe: the recipe's name.
            event_id: the event.
            origin: what started the run (JSON; the runner's record of its event),
                stored with a new run and left as it is when the run already existed.
            run_id: the new run's id (a fresh one when omitted).
            created_at: the new run's creation time (now when omitted).
            version: the digest of the recipe version it runs on (stored with
                :meth:`save_version` first), kept with a new run.

        Returns:
            ``(run_id, created)``; ``created`` is ``False`` when the run already existed.
        """

    @abstractmethod
    def get_run(self, run_id: str) -> RunRecord | None:
        """One run, or ``None``."""

    @abstractmethod
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
        """Runs matching every filter given, newest first.

        Args:
            practice: only this practice's.
            recipe: only this recipe's.
            status: only runs in this status.
            event_id: only runs of this event.
            since: only runs started at or after this time.
            limit: at most this many.
            run_id_prefix: only runs whose id starts with this (a short id).
            version: only runs whose version digest starts with this.
        """

    @abstractmethod
    def save_version(self, digest: str, kind: str, name: str, content: Json) -> bool:
        """Store a version under its digest unless it is stored already (content-addressed:
        the same content is stored once). Returns ``True`` when it was new."""

    @abstractmethod
    def get_version(self, digest: str) -> VersionRecord | None:
        """One stored version, or ``None``."""

    @abstractmethod
    def move_run_version(self, run_id: str, from_digest: str | None, to_digest: str) -> bool:
        """Move a run to another stored version, only if it is still on ``from_digest``
        (an explicit migration; :mod:`practiceflow.versions`). Returns whether it moved."""

    @abstractmethod
    def set_run_status(self, run_id: str, status: RunStatus, error: Json = None) -> None:
        """Change a run's status; ``error`` says why it failed or is in doubt.

        Any status but ``running`` (the run ended, is held or cancelled) sets its
        ``starts`` back to 0; ``running`` leaves them as they are.

        Raises:
            BugError: unknown run, unknown status, or an illegal change
                (see :data:`~practiceflow.state.rows.RUN_TRANSITIONS`).
        """

    @abstractmethod
    def count_start(self, run_id: str) -> int:
        """Record that a runner starts driving a run: it becomes ``running`` (its error
        cleared) and its ``starts`` grow by one, in one commit. Call it before the run's
        first step, so that a start the process does not survive stays counted.

        Returns:
            The run's starts, this one included.

        Raises:
            BugError: unknown run, or one that may not run again (succeeded, cancelled).
        """

    @abstractmethod
    def uncount_start(self, run_id: str) -> None:
        """Take back one start of a run (never below 0): the runner stopped it in order
        (a graceful shutdown), which is no sign of a crash loop.

        Raises:
            BugError: unknown run.
        """

    @abstractmethod
    def purge_payloads(self, before: datetime) -> int:
        """Remove the payloads of runs finished (succeeded, failed, cancelled) before
        ``before``: run origins, step requests and outputs, and the payloads of events
        whose runs have all finished. Runs and steps stay listed with status, ids and
        times. Returns how many runs had payloads removed.
        """

    # --- run leases (one driver per run) ---------------------------------------------------

    @abstractmethod
    def take_run_lease(self, wanted: RunLease, dead: Callable[[RunLease], bool]) -> RunLease:
        """Take a run's lease unless a live process holds it (``state/run_leases.py``).

        Args:
            wanted: the lease to take (holder and times set).
            dead: whether another holder is known dead (its process gone).

        Returns:
            The run's lease now: ``wanted`` when taken, else the live holder's.

        Raises:
            BugError: unknown run.
        """

    @abstractmethod
    def renew_run_lease(self, run_id: str, owner: str, expires_at: datetime) -> bool:
        """Push a held lease's expiry on; False when ``owner`` no longer holds it."""

    @abstractmethod
    def release_run_lease(self, run_id: str, owner: str) -> None:
        """Give a lease back (nothing happens when ``owner`` no longer holds it)."""

    @abstractmethod
    def run_lease(self, run_id: str) -> RunLease | None:
        """A run's lease; inside :meth:`atomic`, read with the run's row locked, so that
        no other process takes it before the block commits."""

    # --- step journal -----------------------------------------------------------------------

    @abstractmethod
    def _change_step(self, run_id: str, step_id: str, *changes: StepChange) -> None:
        """Apply one or more moves of a step in one transaction (store implementers only).

        Read the step's current status (``None`` when it has no row), check the moves with
        :func:`check_step_changes`, write the step as the last move leaves it and one
        :class:`StepTransition` per move (the same rows as applying the moves one call
        each), commit; durably when any move is ``durable``. Nothing is written when a
        move is illegal.

        Raises:
            BugError: unknown run, or a move is illegal.
        """

    @abstractmethod
    def get_step(self, run_id: str, step_id: str) -> StepRecord | None:
        """One step's journal entry, or ``None``."""

    @abstractmethod
    def get_steps(self, run_id: str) -> list[StepRecord]:
        """The journal of a run, steps in the order they were first written."""

    @abstractmethod
    def step_history(self, run_id: str, step_id: str | None = None) -> list[StepTransition]:
        """Every move of a run's steps (or of one step), oldest first."""

    def change_step(self, run_id: str, step_id: str, *changes: StepChange) -> None:
        """Apply several moves of a step in one transaction (the ``step_*`` methods make one).

        The journal and its history read exactly as after one call per move; nothing is
        written when a move is illegal. The runner journals a read this way once it has
        answered: ``pending``, ``sent`` and ``succeeded`` in one commit (a read needs no
        ``sent`` before it leaves: sending it again is harmless).

        Raises:
            BugError: unknown run, or a move is illegal from where the moves before it
                left the step.
        """
        if not changes:
            message = f"change_step of run {run_id} step {step_id!r}: got no moves"
            raise BugError(message)
        self._change_step(run_id, step_id, *changes)

    def step_pending(self, run_id: str, step_id: str, rendered_request: Json) -> None:
        """Record the rendered request of a step about to be sent (or re-rendered).

        Keep secrets out of ``rendered_request``: the journal is run history.
        """
        self._change_step(run_id, step_id, StepChange.to_pending(rendered_request))

    def step_sent(self, run_id: str, step_id: str) -> None:
        """Record that the request is about to leave; call, and let it commit, *before*
        sending, so that a crash mid-request leaves ``sent`` (the outcome in doubt),
        never ``pending`` (which would send it twice)."""
        self._change_step(run_id, step_id, StepChange.to_sent())

    def step_succeeded(self, run_id: str, step_id: str, output: Json) -> None:
        """Record the step's output; it will never be sent again."""
        self._change_step(run_id, step_id, StepChange.to_succeeded(output))

    def step_failed(self, run_id: str, step_id: str, error: Json) -> None:
        """Record that the step certainly failed (the API refused it, or it never left)."""
        self._change_step(run_id, step_id, StepChange.to_failed(error))

    def step_skipped(self, run_id: str, step_id: str, reason: Json = None) -> None:
        """Record that the step was not run (its ``if`` was false, say)."""
        self._change_step(run_id, step_id, StepChange.to_skipped(reason))

    def step_in_doubt(self, run_id: str, step_id: str, error: Json) -> None:
        """Record that the request left and its outcome is unknown (timeout, 5xx)."""
        self._change_step(run_id, step_id, StepChange.to_in_doubt(error))

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
        """Settle an ``in_doubt`` or ``failed`` step by a person's decision.

        Args:
            run_id: the run.
            step_id: the step.
            as_: ``done`` (it did happen: the step becomes ``succeeded``) or ``retry``
                (it did not: the step goes back to ``pending`` and will be sent again).
            who: who decided; recorded in the journal with the time.
            note: why, in their words.
            output: with ``done``, the output to give later steps (read back by hand).

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
        self._change_step(run_id, step_id, change)

    # --- rate budget bookkeeping ------------------------------------------------------------

    def record_request(self, practice: str, at: datetime | None = None) -> None:
        """Count one request sent with a practice's credentials (for reports)."""
        self.record_requests(practice, [self.now() if at is None else at])

    @abstractmethod
    def record_requests(self, practice: str, times: Sequence[datetime]) -> None:
        """Count several requests, sent at ``times``, in one commit (see ``RequestLog``)."""

    @abstractmethod
    def request_counts(self, practice: str, since: datetime) -> int:
        """How many requests were recorded for a practice at or after ``since``."""

    @abstractmethod
    def purge_requests(self, older_than: timedelta = timedelta(days=2)) -> int:
        """Forget request records older than ``older_than``; returns how many."""

    # --- operations -------------------------------------------------------------------------

    @abstractmethod
    def practice_counts(self) -> dict[str, PracticeCounts]:
        """Runs by status, steps in doubt and events waiting, for every practice at once.

        What ``/metrics`` reads at each scrape: a few grouped counts, not a walk of the
        runs. A practice with no run and no event is absent.

        Returns:
            Practice -> its counts.
        """
