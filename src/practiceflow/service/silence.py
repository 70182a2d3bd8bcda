"""Silent subscriptions are found: every ``every`` seconds each served webhook trigger a sweep
can read is swept over the time since the last check (up to ``grace`` ago). An event that
never arrived is stored (it runs once) and the subscription healed (re-subscribed when the
API forgot it); the episode is a ``silent_subscription`` entry, closed or open for a person.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from practiceflow.errors import ConfigError, PracticeflowError
from practiceflow.service.sweep import GapSweep, SweepResult, can_sweep, lists_read
from practiceflow.state import StateStore
from practiceflow.triggers.definition import TriggerDefinition
from practiceflow.triggers.modes import BothTrigger, WebhookTrigger

logger = logging.getLogger("practiceflow.runner")

#: Seconds between two checks (0: no check).
EVERY_ENV: Final = "PRACTICEFLOW_SILENCE_EVERY"
#: Seconds between two checks when the environment does not say.
DEFAULT_EVERY: Final = 900.0
#: Seconds an event may take to be delivered before its absence counts.
GRACE_ENV: Final = "PRACTICEFLOW_SILENCE_GRACE"
DEFAULT_GRACE: Final = 120.0


def silence_settings() -> tuple[float, float]:
    """``(every, grace)`` from the environment; ConfigError when not seconds (>= 0)."""
    values: list[float] = []
    for name, default in ((EVERY_ENV, DEFAULT_EVERY), (GRACE_ENV, DEFAULT_GRACE)):
        text = os.environ.get(name, "").strip()
        try:
            value = float(text) if text else default
        except ValueError:
            value = -1.0
        if value < 0:
            message = f"{name}: got {text!r}; expected a number of seconds (0 or more)"
            raise ConfigError(message)
        values.append(value)
    return values[0], values[1]


def healer(triggers: Mapping[str, Any]) -> Callable[[str], str]:
    """``heal(name)``: check a webhook trigger's subscription, re-subscribe if the API forgot it."""

    def heal(name: str) -> str:
        trigger = triggers.get(name)
        hooked = trigger.webhook if isinstance(trigger, BothTrigger) else trigger
        if not isinstance(hooked, WebhookTrigger):
            return "not received by webhook"
        return hooked.manager.heal(name, hooked.event_key)

    return heal


class SilenceWatch(GapSweep):
    """Checks the served webhook triggers for silence every ``every`` seconds, from ``since``."""

    def __init__(
        self,
        store: StateStore,
        practice: str,
        client: Any,
        triggers: Mapping[str, TriggerDefinition],
        heal: Callable[[str], str],
        *,
        every: float,
        grace: float,
        since: datetime,
        on_stored: Callable[[], None] | None = None,
    ) -> None:
        swept = {name: found for name, found in triggers.items() if can_sweep(found)}
        super().__init__(store, practice, client, swept, on_stored=on_stored)
        self.heal = heal
        self.every = every
        self.grace = timedelta(seconds=grace)
        self.checked = {name: since for name in self.triggers}

    def start(self) -> SilenceWatch:
        """Check in a background thread (nothing to watch, or off: no thread)."""
        if self.every > 0 and self.triggers:
            self._thread = threading.Thread(target=self._run, name="pf-silence", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self.stop.wait(self.every):
            try:
                self.check()
            except PracticeflowError as exc:  # the store or the API: the next check
                logger.warning("silence check stopped: %s", exc)

    def check(self) -> list[str]:
        """One check of every trigger; the ids of the episodes listed."""
        listed: list[str] = []
        for name, found in self.triggers.items():
            subscription = self.store.get_subscription(self.practice, name)
            if subscription is None or subscription.status != "active":
                continue  # not received by webhook now: nothing to be silent
            window = (self.checked[name], self.store.now() - self.grace)
            if window[1] <= window[0]:
                continue
            result = self.sweep_window(name, found, window)
            if result.error is not None:
                logger.warning("silence check of %s: %s", name, result.error)
                continue
            self.checked[name] = window[1]
            if result.recovered:
                listed.append(self._episode(name, result))
        return listed

    def _episode(self, name: str, result: SweepResult) -> str:
        """Heal the subscription and list what happened."""
        try:
            outcome = self.heal(name)
        except PracticeflowError as exc:
            outcome = f"not healed ({exc})"
        start, end = (moment.isoformat(timespec="seconds") for moment in result.window)
        evidence = {**result.evidence(lists_read(self.triggers[name])), "heal": outcome}
        missed = len(result.recovered)
        reason = (
            f"the webhook of trigger {name!r} delivered none of {missed} event(s) its list "
            f"shows from {start} to {end}; they were recovered by a sweep and run"
        )
        healed = outcome == "resubscribed"
        text = reason
        if not healed:
            text = (
                f"{reason}; the subscription check said {outcome!r}, so the API still knows it "
                "but its deliveries do not reach us: check the public URL "
                "(PRACTICEFLOW_PUBLIC_URL) and the practice's webhook settings, then settle it"
            )
        entry, _ = self.store.add_attention(
            "silent_subscription", self.practice, name, f"silent:{name}:{end}", text,
            window=result.window, evidence=evidence, status="checking" if healed else "open",
        )  # fmt: skip
        if healed:
            note = "the API no longer knew the subscription: subscribed again"
            self.store.update_attention(
                entry.attention_id, "closed", settled_by="practiceflow", note=note
            )
            logger.warning("%s; %s", reason, note)
        else:
            logger.warning("needs attention (entry %s): %s", entry.attention_id[:8], text)
        return entry.attention_id
