"""``serve`` as a library: :func:`serve` returns a :class:`~.loop.Service` whose receiver
already listens (deliveries stored from now); :meth:`Service.run` then starts the rest in
the order that loses nothing: :class:`GapWatch`, the intake (subscribe, catch up, poll),
the loop. The state file's lease, console, ``/metrics`` and reloading stay the CLI's.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from practiceflow.runner.execute import Runner, RunOutcome
from practiceflow.runner.validate import ValidRecipe
from practiceflow.service.heartbeat import Heartbeat, last_alive
from practiceflow.service.intake import CATCH_UP_EVERY, TriggerIntake
from practiceflow.service.loop import Service
from practiceflow.service.needs_person import list_gap
from practiceflow.service.netaddr import LOOPBACK
from practiceflow.service.silence import DEFAULT_GRACE, SilenceWatch, healer
from practiceflow.service.sweep import GapSweep, SweepResult, can_sweep
from practiceflow.state import StateStore
from practiceflow.triggers.definition import TriggerDefinition


def note_downtime(
    store: StateStore,
    practice: str,
    triggers: Sequence[tuple[str, TriggerDefinition, bool]],
    *,
    now: datetime | None = None,
) -> list[str]:
    """List the window since the last heartbeat for each trigger not caught up by polling:
    ``checking`` where a sweep can prove it complete, else ``open``; returns the ids."""
    start = last_alive(store, practice)
    if start is None:
        return []
    end = now or store.now()
    listed: list[str] = []
    for name, definition, polled in triggers:
        if polled:
            continue
        if can_sweep(definition):
            why = "a sweep of its list endpoints checks the window"
            entry = list_gap(store, practice, name, start, end, why, checking=True)
        else:
            why = "it has no list endpoint to sweep, so they depend on the sender's retries"
            entry = list_gap(store, practice, name, start, end, why)
        listed.append(entry.attention_id)
    return listed


@dataclass(frozen=True)
class ServeOptions:
    """How :func:`serve` receives, polls and watches (the defaults suit a test or a demo).

    Attributes:
        public_url: where the API delivers webhooks; ``"local"`` for the receiver's own
            URL (the sandbox); None: triggers poll where their recipe's mode allows.
        listen: the receiver's host and port (port 0: any free port).
        listen_socket: a socket already listening on ``listen`` (bound early, see
            :func:`practiceflow.service.netaddr.claim`); closed if no trigger needs it.
        since: where a trigger without a cursor starts polling (ISO 8601).
        poll_interval: seconds between polls (stretched as the budget runs low).
        catch_up_every: seconds between polls of a webhook trigger's catch-up poller.
        unsubscribe: remove the webhook subscriptions on a clean stop (kept by default).
        idle: seconds the loop waits for a wake-up before looking at the store anyway.
        settle_every: seconds between looks for runs a person settled elsewhere.
        watch_gaps: note downtime, beat and sweep (:class:`GapWatch`); off for a
            process that is not the practice's service (a one-off demo step).
        silence_every: seconds between silence checks of webhook triggers (0: off).
        silence_grace: seconds an event may take to be delivered before its absence
            counts.
        on_started: called with the intake once it has subscribed and caught up.
        on_outcome: called with every run outcome.
        on_swept: called with what each gap sweep found.
        on_poll_started: called with the Unix time a background poll was due, as it starts.
    """

    public_url: str | None = None
    listen: tuple[str, int] = (LOOPBACK, 0)
    listen_socket: socket.socket | None = None
    since: str | None = None
    poll_interval: float = 60.0
    catch_up_every: float = CATCH_UP_EVERY
    unsubscribe: bool = False
    idle: float = 5.0
    settle_every: float = 1.0
    watch_gaps: bool = True
    silence_every: float = 0.0
    silence_grace: float = DEFAULT_GRACE
    on_started: Callable[[TriggerIntake], None] | None = None
    on_outcome: Callable[[RunOutcome], None] | None = None
    on_swept: Callable[[SweepResult], None] | None = None
    on_poll_started: Callable[[float], None] | None = None


@dataclass(eq=False)
class GapWatch:
    """No silent gaps while serving: downtime noted, heartbeat, sweeps, silence checks.

    Args:
        store: the state store.
        practice: the practice key.
        client: the API client (sweeps read lists with it).
        intake: the service's intake, receiving (its triggers are built).
        options: the sweep and silence settings.
        wake: set when a sweep recovered an event (the runner takes it at once).
    """

    store: StateStore
    practice: str
    client: Any
    intake: TriggerIntake
    options: ServeOptions
    wake: threading.Event
    sweep: GapSweep | None = field(default=None, init=False)
    silence: SilenceWatch | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.heartbeat = Heartbeat(self.store, self.practice)

    def start(self) -> GapWatch:
        """Note the downtime (before the first heartbeat), beat, sweep, watch."""
        back = self.store.now()
        coverage = self.intake.coverage()
        note_downtime(self.store, self.practice, coverage, now=back)
        self.heartbeat.start()
        unpolled = {name: found for name, found, polled in coverage if not polled}
        self.sweep = GapSweep(
            self.store, self.practice, self.client, unpolled,
            on_stored=self.wake.set, on_done=self.options.on_swept,
        ).start()  # fmt: skip
        self.silence = SilenceWatch(
            self.store, self.practice, self.client, unpolled, healer(self.intake.triggers),
            every=self.options.silence_every, grace=self.options.silence_grace, since=back,
            on_stored=self.wake.set,
        ).start()  # fmt: skip
        return self

    def stop(self) -> None:
        """Stop the sweeps at their next read, then the heartbeat (its last beat is now)."""
        if self.silence is not None:
            self.silence.join(30.0)
        if self.sweep is not None:
            self.sweep.join(30.0)
        self.heartbeat.stop()


def serve(
    recipes: Sequence[ValidRecipe],
    store: StateStore,
    client: Any,
    practice: str,
    options: ServeOptions | None = None,
    *,
    stop: threading.Event | None = None,
) -> Service:
    """Build the service of a practice and start its receiver (module docstring).

    Args:
        recipes: the checked recipes (:func:`~practiceflow.runner.validate_recipe`).
        store: the open state store.
        client: the API client (its rate budget is shared by pollers, sweeps and runs).
        practice: the practice key its cursors, events and runs are filed under.
        options: how to receive, poll and watch.
        stop: set to stop gracefully (for example from a signal handler installed before
            the service existed); a new event when None.

    Returns:
        The service, receiving; :meth:`~practiceflow.service.loop.Service.run` serves
        until ``service.stop`` is set, or :meth:`~practiceflow.service.loop.Service.start`
        and :meth:`~practiceflow.service.loop.Service.run_until` serve a task and
        :meth:`~practiceflow.service.loop.Service.close` ends it.

    Raises:
        ConfigError: the receiver cannot listen where ``options.listen`` says.
    """
    options = options or ServeOptions()
    wake = threading.Event()
    intake = TriggerIntake(
        recipes, store, client, practice,
        public_url=options.public_url, listen=options.listen, sock=options.listen_socket,
        poll_interval=options.poll_interval, catch_up_every=options.catch_up_every,
        unsubscribe=options.unsubscribe, since=options.since,
        on_started=options.on_started, on_stored=wake.set, poll_started=options.on_poll_started,
    )  # fmt: skip
    runners = [Runner(recipe, store, client, practice=practice) for recipe in recipes]
    service = Service(
        runners, store, intake, stop=stop or threading.Event(), idle=options.idle, wake=wake,
        on_outcome=options.on_outcome, settle_every=options.settle_every,
    )  # fmt: skip
    try:
        intake.start_receiving()  # deliveries are stored from here on
    except BaseException:
        intake.stop()
        raise
    if options.watch_gaps:
        service.parts.append(GapWatch(store, practice, client, intake, options, wake))
    return service
