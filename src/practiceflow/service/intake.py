"""The triggers' side of ``serve`` and ``run --once``: receiver, subscriptions and pollers.

The receiver listens with every webhook trigger bound before any request is sent; then
subscriptions are made sure of and every trigger with a poll source catches up from its
cursor. Polls run one thread per list read. A subscription in doubt is not repeated: it is
listed for a person, and its catch-up poller polls at ``poll_interval`` meanwhile.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from practiceflow.budget import Priority, priority
from practiceflow.errors import InDoubtError, PracticeflowError
from practiceflow.runner.validate import ValidRecipe
from practiceflow.service.needs_person import (
    close_subscription_doubt,
    list_gap,
    record_subscription_doubt,
)
from practiceflow.service.netaddr import LOOPBACK, bind_listen, parse_listen
from practiceflow.state import StateStore
from practiceflow.templating import render_tree, utcnow
from practiceflow.triggers import (
    BothTrigger,
    Poller,
    PollingTrigger,
    Receiver,
    ReceiverServer,
    SubscriptionInDoubt,
    Trigger,
    WebhookTrigger,
    build_trigger,
    definition,
    resolve_mode,
)
from practiceflow.triggers.cadence import SWEEP_EVERY, PollNeed
from practiceflow.triggers.definition import TriggerDefinition
from practiceflow.triggers.downtime import has_poll_source
from practiceflow.triggers.practice_polls import PollTarget, PracticePolls, ScheduledPoll

logger = logging.getLogger("practiceflow.runner")

#: The public base URL the API delivers webhooks to (``local``: the receiver's own URL).
PUBLIC_URL_ENV = "PRACTICEFLOW_PUBLIC_URL"
#: Where the receiver listens, ``host:port`` or ``port`` (default ``127.0.0.1:0``).
LISTEN_ENV = "PRACTICEFLOW_LISTEN"
#: Seconds between polls of a webhook trigger's catch-up poller (its cursor stays fresh).
CATCH_UP_EVERY = SWEEP_EVERY


@dataclass(eq=False, repr=False)
class TriggerIntake:
    """Receiver, subscriptions and pollers for a set of recipes.

    Args:
        recipes: the checked recipes.
        store: the state store events go into.
        client: the API client (its budget is shared with the runner).
        practice: the practice key.
        public_url: where the API delivers webhooks; ``local`` uses the receiver's URL;
            None polls where the recipe's mode allows.
        listen: host and port of the receiver (port 0: any free port).
        poll_interval: seconds between polls (stretched as the budget runs low).
        unsubscribe: remove subscriptions on a clean stop (kept by default: deliveries
            made while we are down are retried to the restarted receiver).
        catch_up_every: seconds between polls of a webhook trigger's catch-up poller.
        since: where a trigger without a cursor starts polling (ISO 8601).
        on_started: called once :meth:`start` has subscribed and started polling.
        on_stored: called (without blocking) whenever new events were stored.
        sock: a socket already listening on ``listen`` (:func:`.netaddr.claim`), closed
            when no webhook trigger needs it.
        poll_started: called with the Unix time a poll was due, as it starts.

    Attributes:
        baselines: the triggers whose last :meth:`poll_once` only set a baseline.
        in_doubt: the triggers whose subscription was found in doubt (-> polled meanwhile).
    """

    recipes: Sequence[ValidRecipe]
    store: StateStore
    client: Any
    practice: str
    _: KW_ONLY
    public_url: str | None = None
    listen: tuple[str, int] = (LOOPBACK, 0)
    poll_interval: float = 60.0
    unsubscribe: bool = False
    catch_up_every: float = CATCH_UP_EVERY
    since: str | None = None
    on_started: Callable[[TriggerIntake], None] | None = None
    on_stored: Callable[[], None] | None = None
    sock: socket.socket | None = None
    poll_started: Callable[[float], None] | None = None
    baselines: list[str] = field(default_factory=list, init=False)
    in_doubt: dict[str, bool] = field(default_factory=dict, init=False)
    triggers: dict[str, Trigger] = field(default_factory=dict, init=False)
    #: Catch-up pollers of webhook triggers that have a poll source (by trigger key).
    catch_up: dict[str, Poller] = field(default_factory=dict, init=False)
    server: ReceiverServer | None = field(default=None, init=False)
    #: The practice's polls, grouped by list (once started or polled).
    polls: PracticePolls | None = field(default=None, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _stopped: bool = field(default=False, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)
    _next_poll: dict[str, datetime] = field(default_factory=dict, init=False)

    def _needs_webhook(self) -> bool:
        for recipe in self.recipes:
            found = definition(recipe.trigger)
            try:
                mode = resolve_mode(found, recipe.recipe.mode, self.public_url)
            except PracticeflowError:
                continue
            if mode in ("webhook", "both"):
                return True
        return False

    def _build(self, *, webhooks: bool) -> None:
        receiver = None
        url = None
        sock = None
        if webhooks and self.public_url is not None and self._needs_webhook():
            receiver = Receiver(
                self.store, on_stored=self._stored, on_refused_window=self._refused_window
            )
            # The socket first (bound early by the CLI, or bound now): its port makes the
            # local URL, and the server starts on it only once every trigger is bound, so
            # that no delivery is stored unmapped (a queued one is served at once).
            sock, self.sock = self.sock or bind_listen(*self.listen), None
            port = int(sock.getsockname()[1])
            local = f"http://{self.listen[0]}:{port}"
            url = local if self.public_url == "local" else self.public_url
        for recipe in self.recipes:
            key = recipe.trigger.key
            if key in self.triggers:
                continue
            options = render_tree(recipe.recipe.trigger_with, {"now": utcnow()})
            self.triggers[key] = build_trigger(
                definition(recipe.trigger),
                mode=recipe.recipe.mode,
                options=options,
                practice=self.practice,
                store=self.store,
                client=self.client,
                receiver=receiver,
                public_url=url,
                since=self.since,
            )
        for trigger in self.triggers.values():
            hooked = trigger.webhook if isinstance(trigger, BothTrigger) else trigger
            if isinstance(hooked, WebhookTrigger):
                hooked.receiver.bind(hooked.practice, hooked.name, hooked.spec, hooked.options)
        if receiver is not None and sock is not None:
            self.server = ReceiverServer(receiver, *self.listen, sock=sock).start()

    def start_receiving(self) -> None:
        """Build the triggers and listen with every webhook trigger bound (no request sent yet)."""
        if self.triggers:
            return
        self._build(webhooks=True)
        if self.sock is not None:  # bound early, and no webhook trigger took it
            self.sock.close()
            self.sock = None
        for recipe in self.recipes:
            key = recipe.trigger.key
            found = definition(recipe.trigger)
            options = render_tree(recipe.recipe.trigger_with, {"now": utcnow()})
            if isinstance(self.triggers[key], WebhookTrigger) and has_poll_source(found, options):
                self.catch_up[key] = Poller(
                    self.client,
                    self.store,
                    self.practice,
                    found,
                    options,
                    name=key,
                    since=self.since,
                )

    def coverage(self) -> list[tuple[str, TriggerDefinition, bool]]:
        """``(name, definition, caught up by polling)`` of each trigger (after receiving)."""
        rows: list[tuple[str, TriggerDefinition, bool]] = []
        for recipe in self.recipes:
            key = recipe.trigger.key
            if key in (row[0] for row in rows):
                continue
            trigger = self.triggers.get(key)
            polled = isinstance(trigger, PollingTrigger | BothTrigger) or key in self.catch_up
            rows.append((key, definition(recipe.trigger), polled))
        return rows

    @property
    def receiver_url(self) -> str | None:
        """The local URL the receiver listens on, once listening."""
        return None if self.server is None else self.server.url

    def start(self) -> None:
        """Listen, make sure of the subscriptions, catch up, and poll in the background."""
        self.start_receiving()
        for trigger in self.triggers.values():
            self._start_trigger(trigger)
        self.polls = self._practice_polls(catch_up=True)
        for group in self.polls.groups:  # catch up before the runner takes events
            self._poll(group.name, group)
        for group in self.polls.groups:
            thread = threading.Thread(
                target=self._poll_loop, args=(group.name, group), name=f"pf-poll-{group.name}"
            )
            thread.daemon = True
            thread.start()
            self._threads.append(thread)
        if self.on_started is not None:
            self.on_started(self)

    def _start_trigger(self, trigger: Trigger) -> None:
        """Start one trigger; a subscription in doubt is listed, and the others go on."""
        try:
            trigger.start()
        except (SubscriptionInDoubt, InDoubtError) as exc:
            polled = isinstance(trigger, BothTrigger) or trigger.name in self.catch_up
            self.in_doubt[trigger.name] = polled
            entry_id = record_subscription_doubt(
                self.store, self.practice, trigger.name, polled=polled
            )
            logger.error(
                "trigger %s: %s. Not repeated; listed as needing attention (entry %s), and %s",
                trigger.name,
                exc,
                entry_id[:8],
                "polled meanwhile" if polled else "its events are NOT received meanwhile",
            )
            return
        if trigger.mode in ("webhook", "both"):
            closed = close_subscription_doubt(
                self.store, self.practice, trigger.name, "practiceflow serve", "subscribed again"
            )
            for entry_id in closed:
                logger.info("trigger %s: subscribed again; closed entry %s", trigger.name, entry_id)
        logger.info("trigger %s: receiving by %s", trigger.name, trigger.mode)

    def _practice_polls(self, *, catch_up: bool) -> PracticePolls:
        """The polled triggers (with ``catch_up``, the webhook triggers' too), grouped by list."""
        targets: list[PollTarget] = []
        for key, trigger in self.triggers.items():
            if isinstance(trigger, PollingTrigger | BothTrigger):
                polling = trigger.polling if isinstance(trigger, BothTrigger) else trigger
                delays = [r.recipe.max_delay for r in self.recipes if r.trigger.key == key]
                given = [delay for delay in delays if delay is not None]
                need = PollNeed.polled(self.poll_interval, min(given, default=None))
                after = trigger.note_poll if isinstance(trigger, BothTrigger) else None
                targets.append(PollTarget(polling.poller.member, need, after))
        for key, poller in self.catch_up.items() if catch_up else ():
            # A webhook trigger's list is read for completeness only, unless its
            # subscription is in doubt: then it is polled like any other.
            in_doubt = key in self.in_doubt
            need = (
                PollNeed.polled(self.poll_interval, None)
                if in_doubt
                else PollNeed.sweep(self.catch_up_every)
            )
            targets.append(PollTarget(poller.member, need))
        return PracticePolls(self.client, targets)

    def _poll(self, key: str, target: Any) -> None:
        try:
            with priority(Priority.POLL):
                found = target.poll_once()
        except PracticeflowError as exc:
            logger.warning("poll of %s failed: %s", key, exc)
        else:
            if found.events:
                logger.info("poll of %s: %d new event(s)", key, len(found.events))
                self._stored()

    def _stored(self) -> None:
        """New events are stored: tell the listener (read at call time) and speed up the polls."""
        if self.polls is not None:
            self.polls.cadence.activity()
        if self.on_stored is not None:
            self.on_stored()

    def _refused_window(self, practice: str, trigger: str, start: datetime, end: datetime) -> None:
        """List the window in which the store refused a trigger's deliveries (503)."""
        why = "its deliveries were refused with 503 while the store could not record them"
        list_gap(self.store, practice, trigger, start, end, why, who="the state store")

    def next_poll(self, trigger_key: str) -> datetime | None:
        """When the running poll loop of a trigger polls next (UTC), or ``None``."""
        return self._next_poll.get(trigger_key)

    def _poll_loop(self, key: str, target: ScheduledPoll) -> None:
        """Wait until due, poll, repeat (the first poll was the catch-up in :meth:`start`)."""
        while not self._stop.is_set():
            due = datetime.now(UTC) + timedelta(seconds=target.cadence.wait())
            for name in target.names:
                self._next_poll[name] = due
            if not target.wait_due(self._stop):
                break
            if self.poll_started is not None:
                self.poll_started(time.time() - target.lateness())
            self._poll(key, target)
        for name in target.names:
            self._next_poll.pop(name, None)

    def poll_once(self) -> int:
        """Poll every trigger that can be polled, once (``run --once``); returns events stored."""
        if not self.triggers:
            self._build(webhooks=False)
        if self.polls is None:
            self.polls = self._practice_polls(catch_up=False)
        stored = 0
        self.baselines = []
        for group in self.polls.groups:
            with priority(Priority.POLL):
                found = group.poll_once()
            stored += len(found.events)
            self.baselines += [name for name, one in found.results.items() if one.baseline]
        return stored

    def stop(self) -> None:
        """Stop polling and the receiver; unsubscribe when configured to (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        if self.polls is not None:
            self.polls.wake_all()
        for thread in self._threads:
            thread.join(timeout=30)
        for trigger in self.triggers.values():
            try:
                trigger.stop(unsubscribe=self.unsubscribe)
            except PracticeflowError as exc:
                logger.warning("trigger %s did not stop cleanly: %s", trigger.name, exc)
        if self.server is not None:
            self.server.stop()


def listen_address(text: str | None) -> tuple[str, int]:
    """The receiver's ``(host, port)`` from ``PRACTICEFLOW_LISTEN`` (ConfigError if malformed)."""
    if not text:
        return (LOOPBACK, 0)
    return parse_listen(text, option=LISTEN_ENV, example="127.0.0.1:8080")


def build_intake(
    recipes: Sequence[ValidRecipe],
    store: StateStore,
    client: Any,
    practice: str,
    *,
    since: str | None = None,
    on_started: Callable[[TriggerIntake], None] | None = None,
) -> TriggerIntake:
    """The intake ``run`` uses (not started), receiving as ``PRACTICEFLOW_PUBLIC_URL`` and
    ``PRACTICEFLOW_LISTEN`` say."""
    return TriggerIntake(
        recipes,
        store,
        client,
        practice,
        public_url=os.environ.get(PUBLIC_URL_ENV) or None,
        listen=listen_address(os.environ.get(LISTEN_ENV)),
        since=since,
        on_started=on_started,
    )
