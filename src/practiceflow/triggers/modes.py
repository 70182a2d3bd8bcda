"""How a trigger receives (``auto``, ``webhook``, ``poll``, ``both``) and the
:class:`~practiceflow.triggers.base.Trigger` classes that do it.

In ``both``, one change fires once because the module declares the same cross-source dedupe
key twice (``webhook.id`` over the body, ``poll.dedupe`` over the row): the second arrival
is a duplicate in the store. A body without the key falls back to the delivery id and may
fire once more by polling (documented, never lost).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeAlias

from practiceflow.api import Client
from practiceflow.errors import ConfigError, PracticeflowError
from practiceflow.state import StateStore
from practiceflow.triggers.base import Trigger
from practiceflow.triggers.definition import TriggerDefinition
from practiceflow.triggers.poll_member import PollResult
from practiceflow.triggers.shared_poll import Poller
from practiceflow.triggers.subscriptions import (
    CheckResult,
    SubscriptionManager,
    supported_events,
)
from practiceflow.triggers.webhook_receiver import Receiver

logger = logging.getLogger("practiceflow.triggers")

Mode: TypeAlias = Literal["auto", "webhook", "poll", "both"]
MODES: Final[tuple[Mode, ...]] = ("auto", "webhook", "poll", "both")


def resolve_mode(
    definition: TriggerDefinition, mode: str, public_url: str | None
) -> Literal["webhook", "poll", "both"]:
    """Decide how a trigger receives, given the receiver's public URL (if any); a
    ConfigError says why a mode cannot be (for example, no list endpoint to poll)."""
    key = definition.key
    can_hook, can_poll = definition.webhook is not None, definition.poll is not None
    if mode not in MODES:
        message = f"trigger {key!r} mode: got {mode!r}; valid values are {list(MODES)}"
        raise ConfigError(message)
    if mode == "auto":
        if can_hook and public_url:
            return "webhook"
        if can_poll:
            return "poll"
        reason = "no public URL is configured" if can_hook else "it has no way to receive"
        message = (
            f"trigger {key!r} can only be received by webhook and {reason}; give a public "
            f"URL the API can reach. {definition.module.description.strip()}"
        )
        raise ConfigError(message)
    needs_hook = mode in ("webhook", "both")
    needs_poll = mode in ("poll", "both")
    if needs_hook and not can_hook:
        message = f"trigger {key!r} has no webhook event; valid modes are ['poll', 'auto']"
        raise ConfigError(message)
    if needs_poll and not can_poll:
        message = (
            f"trigger {key!r} cannot be polled; valid modes are ['webhook', 'auto']. "
            f"{definition.module.description.strip()}"
        )
        raise ConfigError(message)
    if needs_hook and not public_url:
        message = f"trigger {key!r} mode {mode}: a public URL for the webhook receiver is needed"
        raise ConfigError(message)
    return "both" if mode == "both" else ("webhook" if needs_hook else "poll")


class WebhookTrigger(Trigger):
    """Receives a trigger by webhook: subscribes on start, unsubscribes on stop;
    ``check_events`` checks the event key against ``GET /api/v1/webhooks/events``."""

    mode = "webhook"

    def __init__(
        self,
        definition: TriggerDefinition,
        options: Mapping[str, Any],
        *,
        practice: str,
        store: StateStore,
        client: Client,
        receiver: Receiver,
        public_url: str,
        name: str | None = None,
        check_events: bool = True,
    ) -> None:
        if definition.webhook is None:
            raise ConfigError(f"trigger {definition.key!r} has no webhook section")
        super().__init__(name or definition.key, definition.key, practice, store)
        self.definition = definition
        self.spec = definition.webhook
        self.options = dict(options)
        self.receiver = receiver
        self.manager = SubscriptionManager(client, store, practice, public_url)
        self.event_key = self.spec.event_key(self.options)
        self._check_events = check_events

    def start(self) -> None:
        """Bind the receiver and make sure the subscription exists (ConfigError: the API
        does not offer the event, or a subscribe is in doubt)."""
        if self._check_events:
            offered = supported_events(self.manager.client)
            if offered and self.event_key not in offered:
                message = (
                    f"trigger {self.name!r}: the API does not offer event "
                    f"{self.event_key!r}; valid values are {offered}"
                )
                raise ConfigError(message)
        self.receiver.bind(self.practice, self.name, self.spec, self.options)
        self.manager.ensure(self.name, self.event_key)

    def stop(self, *, unsubscribe: bool = True) -> None:
        """Unsubscribe (on a clean shutdown) so that nothing is left delivering."""
        if unsubscribe:
            self.manager.remove(self.name)

    def _arrival(self) -> Callable[[], bool]:
        before = self.receiver.last_delivery(self.practice, self.name)
        return lambda: self.receiver.last_delivery(self.practice, self.name) != before

    def check(self, wait: float = 5.0) -> CheckResult:
        """Send a test delivery and wait until the receiver stores it."""
        return self.manager.check(self.name, self._arrival(), wait=wait)

    def heal(self) -> str:
        """Check the subscription; re-subscribe when the API lost it."""
        return self.manager.heal(self.name, self.event_key, self._arrival())


class PollingTrigger(Trigger):
    """Receives a trigger by polling: :meth:`poll_once`, or its poller's member in a
    practice's shared polls (:mod:`.practice_polls`), which schedule it."""

    mode = "poll"

    def __init__(self, poller: Poller) -> None:
        member = poller.member
        super().__init__(poller.name, member.definition.key, member.practice, member.store)
        self.poller = poller

    def poll_once(self) -> PollResult:
        """One poll (see :meth:`Poller.poll_once`)."""
        return self.poller.poll_once()


class BothTrigger(Trigger):
    """Webhook and polling together, deduplicated across sources (module docstring); after
    ``grace`` seconds without a delivery, polls that find changes heal the subscription."""

    mode = "both"

    def __init__(
        self,
        webhook: WebhookTrigger,
        polling: PollingTrigger,
        *,
        grace: float = 300.0,
        clock: Any = time.time,
    ) -> None:
        super().__init__(webhook.name, webhook.key, webhook.practice, webhook.store)
        self.webhook = webhook
        self.polling = polling
        self.grace = grace
        self._clock = clock
        self._suspicious = 0

    def start(self) -> None:
        """Subscribe (the polling side is driven by :meth:`poll_once`)."""
        self.webhook.start()

    def stop(self, *, unsubscribe: bool = True) -> None:
        """Unsubscribe (the polling side keeps its cursor)."""
        self.webhook.stop(unsubscribe=unsubscribe)

    def poll_once(self) -> PollResult:
        """Poll; when polls keep finding what no delivery brought, heal the subscription."""
        return self.note_poll(self.polling.poll_once())

    def note_poll(self, result: PollResult) -> PollResult:
        """Look at a (possibly shared) poll's result for this trigger; returns it. When
        polls keep finding what no delivery brought, heal the subscription."""
        last = self.webhook.receiver.last_delivery(self.practice, self.name)
        quiet = last is None or self._clock() - last > self.grace
        self._suspicious = self._suspicious + 1 if result.events and quiet else 0
        if self._suspicious >= 2:
            self._suspicious = 0
            try:
                outcome = self.webhook.heal()
            except PracticeflowError as exc:
                logger.warning(
                    "webhook of %s looks stopped and could not be healed: %s", self.name, exc
                )
            else:
                logger.warning("webhook of %s looked stopped; check said %s", self.name, outcome)
        return result


def build_trigger(
    definition: TriggerDefinition,
    *,
    mode: str = "auto",
    options: Mapping[str, Any] | None = None,
    practice: str,
    store: StateStore,
    client: Client,
    receiver: Receiver | None = None,
    public_url: str | None = None,
    name: str | None = None,
    since: str | None = None,
    check_events: bool = True,
) -> Trigger:
    """Build the trigger a recipe asks for (``options``: its ``trigger.with``; ``since``:
    polling start instead of "from now"; ``receiver`` is needed for webhook and both)."""
    chosen = resolve_mode(definition, mode, public_url)
    given = dict(options or {})
    hooked: WebhookTrigger | None = None
    if chosen in ("webhook", "both"):
        if receiver is None or public_url is None:
            raise ConfigError(f"trigger {definition.key!r}: a webhook needs a receiver")
        hooked = WebhookTrigger(
            definition,
            given,
            practice=practice,
            store=store,
            client=client,
            receiver=receiver,
            public_url=public_url,
            name=name,
            check_events=check_events,
        )
        if chosen == "webhook":
            return hooked
    poller = Poller(client, store, practice, definition, given, name=name, since=since)
    polling = PollingTrigger(poller)
    return polling if hooked is None else BothTrigger(hooked, polling)
