"""What the state store holds, as typed rows, and the transition rules every store shares
(a step's moves: :class:`StepChange`). A row's fields are its table's columns in order
(``decode`` in ``_sql.py``); a field that may carry a secret or personal data is kept out of
``repr``, so that logging a row cannot leak it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal, TypeAlias, get_args

from practiceflow.errors import BugError, ConfigError

#: How long ids of handled events are kept for deduplication by default.
DEFAULT_KEEP_SEEN: Final = timedelta(days=7)

#: A function returning the current time, timezone-aware; injected by tests.
Clock: TypeAlias = Callable[[], datetime]

#: A value that survives ``json.dumps``: payloads, rendered requests, outputs, errors.
Json: TypeAlias = Any

StepStatus: TypeAlias = Literal["pending", "sent", "succeeded", "failed", "skipped", "in_doubt"]
RunStatus: TypeAlias = Literal["pending", "running", "succeeded", "failed", "in_doubt", "cancelled"]
#: ``pending``: saved before subscribing; ``in_doubt``: the subscribe's answer was lost.
SubscriptionStatus: TypeAlias = Literal["pending", "active", "in_doubt", "failed"]
#: How an operator settles a step: ``done`` (it happened) or ``retry`` (send it again).
Resolution: TypeAlias = Literal["done", "retry"]

STEP_STATUSES: Final[tuple[StepStatus, ...]] = get_args(StepStatus)
RUN_STATUSES: Final[tuple[RunStatus, ...]] = get_args(RunStatus)
SUBSCRIPTION_STATUSES: Final[tuple[SubscriptionStatus, ...]] = get_args(SubscriptionStatus)
RESOLUTIONS: Final[tuple[Resolution, ...]] = get_args(Resolution)

#: Where a step may go next by the runner's own moves (``None``: no row yet). ``sent`` is
#: committed before the request leaves; ``in_doubt`` leaves only by ``resolve_step`` (who
#: decided is recorded). ``sent -> sent``: a read sent again; ``sent -> pending``: a write
#: refused unacted (429); ``failed -> pending``: a retry.
STEP_TRANSITIONS: Final[Mapping[StepStatus | None, frozenset[StepStatus]]] = {
    None: frozenset({"pending", "skipped", "failed"}),
    "pending": frozenset({"pending", "sent", "skipped", "failed"}),
    "sent": frozenset({"pending", "sent", "succeeded", "failed", "in_doubt"}),
    "failed": frozenset({"pending"}),
    "in_doubt": frozenset(),
    "succeeded": frozenset(),
    "skipped": frozenset(),
}

#: The run statuses that end a run: nothing of it runs or is held for a person any more.
FINISHED: Final = ("succeeded", "failed", "cancelled")

#: Step statuses an operator may settle with ``resolve_step``.
RESOLVABLE: Final[frozenset[StepStatus]] = frozenset({"in_doubt", "failed"})

#: Where a run may go next; staying in the same status is always allowed (idempotent).
RUN_TRANSITIONS: Final[Mapping[RunStatus, frozenset[RunStatus]]] = {
    "pending": frozenset({"running", "succeeded", "failed", "in_doubt", "cancelled"}),
    "running": frozenset({"succeeded", "failed", "in_doubt", "cancelled"}),
    "failed": frozenset({"running", "cancelled"}),
    "in_doubt": frozenset({"running", "succeeded", "failed", "cancelled"}),
    "succeeded": frozenset(),
    "cancelled": frozenset(),
}


@dataclass(frozen=True)
class EventRecord:
    """One event received from a webhook or found by a poll (fields: :class:`NewEvent`).

    Attributes:
        handled_at: when the runner finished with it, or ``None`` while pending.
    """

    practice: str
    source: str
    event_key: str
    event_id: str
    payload: Json = field(repr=False)
    signature: str | None
    received_at: datetime
    handled_at: datetime | None


@dataclass(frozen=True)
class NewEvent:
    """An event to record (see :meth:`~practiceflow.state.StateStore.record_events`).

    Attributes:
        source: where it came in (trigger or subscription key); dedupe is per source.
        event_key: the event type, such as ``proposal.accepted``.
        event_id: the event's id (``X-Svc-Event-Id``, or a poll's dedupe key).
        signature: the webhook signature, when signed (replay dedupe).
        received_at: when it arrived; the store's now when ``None``.
    """

    practice: str
    source: str
    event_key: str
    event_id: str
    payload: Json = field(repr=False)
    signature: str | None = None
    received_at: datetime | None = None


@dataclass(frozen=True)
class CursorState:
    """A polling trigger's position.

    Attributes:
        value: the cursor, typically the ``lastUpdated`` of the newest handled record.
        boundary_keys: dedupe keys already handled *at* ``value``: a ``lastUpdated >=``
            query returns them again, and they must be skipped, not repeated.
    """

    practice: str
    trigger_key: str
    value: str
    boundary_keys: frozenset[str]
    updated_at: datetime


@dataclass(frozen=True)
class SubscriptionRecord:
    """A webhook subscription made for a trigger.

    Attributes:
        subscription_id: the API's ``id``; ``None`` while unknown (``pending``,
            ``in_doubt``).
        url: the ``targetUrl`` given to the API.
        secret: the ``webhookSecret``; never shown in ``repr``.
        path_token: the unguessable part of ``url`` that routes a delivery here.
    """

    practice: str
    trigger_key: str
    subscription_id: str | None
    event: str
    url: str
    secret: str = field(repr=False)
    path_token: str
    status: SubscriptionStatus
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SubscriptionHealth:
    """How a trigger's webhook subscription has been faring (it outlives the subscription
    row, which a re-subscribe deletes and saves anew).

    Attributes:
        last_delivery_at: newest event received by webhook (from the events, so it
            goes when they are purged); ``None`` when there is none.
        resubscribes: how many times the subscription was re-made after being lost.
        test_asked_at: when a test delivery was asked for and is still awaited, or None.
        test_event_id: the event id the ``/test`` answer gave it, when it gave one.
    """

    practice: str
    trigger_key: str
    last_delivery_at: datetime | None
    last_test_delivery_at: datetime | None
    resubscribes: int
    test_asked_at: datetime | None = None
    test_event_id: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """One run of a recipe for one event.

    Attributes:
        event_id: the event that started it; one run per (practice, recipe, event_id).
        error: why it failed or is in doubt (JSON), if it did.
        origin: what started it (JSON): the runner's record of its trigger event
            (payload, source, recipe file), personal data and all; shown masked.
        starts: starts since it last left ``running``, less those stopped in order: a
            start cut short by a crash stays counted (:mod:`practiceflow.runner.quarantine`).
        version: the digest of the recipe version it runs on, or None.
    """

    run_id: str
    practice: str
    recipe: str
    event_id: str
    status: RunStatus
    error: Json
    created_at: datetime
    updated_at: datetime
    origin: Json = None
    starts: int = 0
    version: str | None = None


@dataclass(frozen=True)
class VersionRecord:
    """One stored version of a recipe or a module, content-addressed.

    Attributes:
        digest: the sha256 of its content (hex), its key.
        kind: ``recipe``, ``action`` or ``trigger``.
        content: what was stored (JSON; :mod:`practiceflow.versions` says its shape).
    """

    digest: str
    kind: str
    name: str
    content: Json = field(repr=False)
    created_at: datetime | None = None


@dataclass(frozen=True)
class StepRecord:
    """The journal entry of one step of one run.

    Attributes:
        request: the rendered request (JSON), once known.
        error: why it failed, was skipped or is in doubt (JSON).
        attempts: how many times it was marked ``sent``.
        resolved_by: who settled it by hand, if someone did (``resolved_at``,
            ``resolution_note``: when, and what they said).
    """

    run_id: str
    step_id: str
    status: StepStatus
    request: Json = field(repr=False)
    output: Json = field(repr=False)
    error: Json
    attempts: int
    created_at: datetime
    updated_at: datetime
    sent_at: datetime | None
    resolved_by: str | None
    resolved_at: datetime | None
    resolution_note: str | None


@dataclass(frozen=True)
class StepTransition:
    """One line of a step's history: who moved it from where to where, and when.

    Attributes:
        from_status: where it was (``None`` for the first entry).
        who: the person who resolved it, or ``None`` for the runner's own moves.
        detail: the error or reason recorded with a move to ``failed``, ``in_doubt``
            or ``skipped``, kept here even after a retry clears it from the step.
    """

    run_id: str
    step_id: str
    from_status: StepStatus | None
    to_status: StepStatus
    at: datetime
    who: str | None
    note: str | None
    detail: Json


#: The JSON fields of a step a move may set.
STEP_FIELDS: Final = ("request", "output", "error")


@dataclass(frozen=True)
class StepChange:
    """One move of a step, as :meth:`StateStore.change_step` takes it; the class methods
    build the runner's moves, ``resolve_step`` the operator's.

    Attributes:
        fields: columns to set among ``request``, ``output`` and ``error``.
        sent: count an attempt and stamp ``sent_at``.
        resolving: an operator's decision (only from :data:`RESOLVABLE` statuses); records
            ``who`` and ``note``.
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


@dataclass(frozen=True)
class RunRetry:
    """What the retry policy knows of one run.

    Attributes:
        attempts: attempts that ended failed on a transient cause.
        next_at: when the next attempt is due (None: none is scheduled).
        cause: the last such failure (``type``, ``status``, ``step``: never a message,
            which may quote the data).
    """

    run_id: str
    practice: str
    recipe: str
    attempts: int
    next_at: datetime | None
    cause: Json
    updated_at: datetime


@dataclass(frozen=True)
class RunLease:
    """Who drives a run, and until when.

    Attributes:
        owner: a token unique to one driving of the run (one process may drive several
            runs, and one run twice in a row).
        process: what tells the holder from a later process with the same pid on the same
            host (its pid namespace and start time), empty when the system does not say.
        expires_at: when it lapses unless renewed.
    """

    run_id: str
    owner: str
    host: str
    pid: int
    process: str
    taken_at: datetime
    expires_at: datetime

    def describe(self) -> str:
        """Who holds it, for a person: ``pid 1234 on host web-1 since 2026-...``."""
        since = self.taken_at.isoformat(timespec="seconds")
        return f"pid {self.pid} on host {self.host}, since {since}"


def like_prefix(prefix: str | None) -> str | None:
    """A ``LIKE ... ESCAPE '\\'`` pattern matching the strings that start with ``prefix``."""
    if prefix is None:
        return None
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def check_value(what: str, value: str, valid: tuple[str, ...]) -> None:
    """Raise :class:`BugError` for a status or option that is not one of ``valid``."""
    if value not in valid:
        message = f"{what}: got {value!r}; valid values are {list(valid)}"
        raise BugError(message)


def check_run_transition(run_id: str, current: RunStatus, target: RunStatus) -> None:
    """Raise :class:`BugError` for a run status change the rules forbid (staying is fine)."""
    if target != current and target not in RUN_TRANSITIONS[current]:
        allowed = sorted(RUN_TRANSITIONS[current] | {current})
        message = (
            f"run {run_id}: cannot go from {current} to {target}; valid next states are {allowed}"
        )
        raise BugError(message)


def to_utc(value: datetime, what: str = "datetime") -> str:
    """An aware datetime as UTC ISO 8601 text of one shape (microseconds, ``+00:00``), so
    that text order is time order; a naive one raises :class:`ConfigError`."""
    if value.tzinfo is None or value.utcoffset() is None:
        message = f"{what}: got naive datetime {value.isoformat()}; expected a timezone-aware one"
        raise ConfigError(message)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def from_utc(text: str) -> datetime:
    """Decode a time written by :func:`to_utc`."""
    return datetime.fromisoformat(text).astimezone(UTC)


@dataclass(frozen=True)
class PracticeCounts:
    """What an operator watches of one practice, counted in one look at the store.

    Attributes:
        runs: run status -> how many runs are in it.
        steps_in_doubt: steps held for a person (a write that may or may not have acted).
    """

    runs: Mapping[str, int]
    steps_in_doubt: int
    events_waiting: int
