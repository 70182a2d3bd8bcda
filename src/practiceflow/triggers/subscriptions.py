"""The lifecycle of webhook subscriptions: subscribe, check, re-subscribe, unsubscribe.

Each is saved ``pending`` before the subscribe is sent (the spec has no list of them), then
``active`` with its id and secret (only in the store). A lost answer leaves it ``in_doubt``,
never repeated (a second subscribe could leave an orphan delivering): a person settles it.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from practiceflow.api import Client
from practiceflow.errors import ConfigError, InDoubtError, NotFoundError
from practiceflow.state import StateStore, SubscriptionRecord
from practiceflow.triggers import tests_asked
from practiceflow.triggers.webhook_receiver import HOOKS_PREFIX

logger = logging.getLogger("practiceflow.triggers.subscriptions")

WEBHOOKS_PATH: Final = "/api/v1/webhooks"
EVENTS_PATH: Final = "/api/v1/webhooks/events"


class SubscriptionInDoubt(ConfigError):
    """A subscribe's answer was lost earlier: it may exist on the server. Not repeated."""

    def __init__(self, practice: str, name: str) -> None:
        self.practice = practice
        self.name = name
        message = (
            f"the webhook subscription of trigger {name!r} ({practice}) is in doubt: an "
            "earlier subscribe got no answer, so it may exist on the server. It was not "
            "repeated. Check the practice's webhook settings, then run 'practiceflow "
            f"triggers unsubscribe {name} --forget' and start again"
        )
        super().__init__(message)


@dataclass(frozen=True)
class CheckResult:
    """What a test delivery showed, and the seconds waited: ``arrived``, ``not_arrived`` (none
    in the wait), ``missing`` (404: gone), ``not_subscribed`` (none stored) or ``in_doubt``."""

    name: str
    status: Literal["arrived", "not_arrived", "missing", "not_subscribed", "in_doubt"]
    subscription_id: str | None
    waited: float


def supported_events(client: Client) -> list[str]:
    """The event keys ``GET /api/v1/webhooks/events`` lists; its shape is not shown, so
    strings, objects with a ``key``/``event``/``name``, or either wrapped are all read."""
    data = client.get(EVENTS_PATH)
    rows: Any = data
    if isinstance(data, dict):
        rows = next((value for value in data.values() if isinstance(value, list)), [])
    keys: list[str] = []
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, str):
            keys.append(row)
        elif isinstance(row, dict):
            for field in ("key", "event", "eventKey", "name", "webhookEvent"):
                if isinstance(row.get(field), str):
                    keys.append(row[field])
                    break
    return keys


def _pick(answer: Any, *names: str) -> str | None:
    """A string field of the subscribe answer, looked up tolerantly (also under ``data``)."""
    for source in (answer, answer.get("data") if isinstance(answer, dict) else None):
        if isinstance(source, dict):
            for name in names:
                value = source.get(name)
                if isinstance(value, str | int) and str(value):
                    return str(value)
    return None


class SubscriptionManager:
    """Subscribes and unsubscribes the webhook triggers of one practice; each subscription
    adds ``/hooks/<token>`` to ``public_url``, where the API reaches the receiver."""

    def __init__(
        self,
        client: Client,
        store: StateStore,
        practice: str,
        public_url: str | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.store = store
        self.practice = practice
        self.public_url = public_url.rstrip("/") if public_url else None
        self._sleep = sleep

    def ensure(self, name: str, event: str) -> SubscriptionRecord:
        """Subscribe a trigger unless an active subscription for the same event exists.
        Raises SubscriptionInDoubt when an earlier subscribe is in doubt (never repeated),
        InDoubtError when this one gets no answer (saved ``in_doubt``)."""
        current = self.store.get_subscription(self.practice, name)
        if current is not None and current.status in ("in_doubt", "pending"):
            raise SubscriptionInDoubt(self.practice, name)
        if current is not None and current.status == "active":
            prefix = None if self.public_url is None else self.public_url + HOOKS_PREFIX
            if current.event == event and prefix and current.url.startswith(prefix):
                return current
            self.remove(name)
        return self._subscribe(name, event)

    def _subscribe(self, name: str, event: str) -> SubscriptionRecord:
        if self.public_url is None:
            message = (
                f"trigger {name!r}: no public URL is configured, so the API cannot deliver "
                "webhooks here; give --public-url (or use mode: poll)"
            )
            raise ConfigError(message)
        token = secrets.token_urlsafe(24)
        url = self.public_url + HOOKS_PREFIX + token
        save = self.store.save_subscription
        save(self.practice, name, None, event, url, "", token, "pending")
        body = {
            "targetUrl": url,
            "hookUrl": url,
            "webhookEvent": event,
            "webhookName": f"practiceflow {name}",
        }
        try:
            answer = self.client.post(WEBHOOKS_PATH, json=body)
        except InDoubtError:
            save(self.practice, name, None, event, url, "", token, "in_doubt")
            logger.error("subscribe of %s (%s) is in doubt; not repeated", name, event)
            raise
        except BaseException:
            # The API certainly did not create it (an error status, or never sent).
            self.store.delete_subscription(self.practice, name)
            raise
        subscription_id = _pick(answer, "id", "webhookId", "subscriptionId")
        secret = _pick(answer, "webhookSecret", "secret")
        if subscription_id is None or secret is None:
            save(self.practice, name, subscription_id, event, url, "", token, "in_doubt")
            message = (
                f"subscribe of trigger {name!r}: the answer lacks "
                f"{'id' if subscription_id is None else 'webhookSecret'}; the subscription is "
                "recorded in doubt"
            )
            raise ConfigError(message)
        record = save(self.practice, name, subscription_id, event, url, secret, token, "active")
        logger.info("subscribed %s to %s (id %s)", name, event, subscription_id)
        return record

    def remove(self, name: str, *, forget_only: bool = False) -> bool:
        """Unsubscribe a trigger (``DELETE /api/v1/webhooks/{id}``) and forget it; True when
        there was one. One in doubt (its id unknown) raises SubscriptionInDoubt unless
        ``forget_only`` (a person checked the practice): then only the row is forgotten."""
        current = self.store.get_subscription(self.practice, name)
        if current is None:
            return False
        if current.subscription_id is not None and not forget_only:
            try:
                self.client.delete(f"{WEBHOOKS_PATH}/{current.subscription_id}")
            except NotFoundError:
                logger.info("subscription of %s was already gone", name)
        elif current.status in ("in_doubt", "pending") and not forget_only:
            # Its id is unknown: only a person who checked the practice may forget it.
            raise SubscriptionInDoubt(self.practice, name)
        self.store.delete_subscription(self.practice, name)
        logger.info("unsubscribed %s", name)
        return True

    def check(
        self,
        name: str,
        arrived: Callable[[], bool] | None = None,
        *,
        wait: float = 5.0,
        every: float = 0.1,
    ) -> CheckResult:
        """Send the test delivery and report whether the subscription is alive: ``arrived``
        is asked every ``every`` s for ``wait`` s (``None``: only that the API knows it)."""
        current = self.store.get_subscription(self.practice, name)
        if current is None:
            return CheckResult(name, "not_subscribed", None, 0.0)
        if current.subscription_id is None or current.status != "active":
            return CheckResult(name, "in_doubt", current.subscription_id, 0.0)
        # Noted before asking, so a delivery racing the answer is not run (tests_asked).
        tests_asked.note_asked(self.store, self.practice, name)
        try:
            answer = self.client.post(f"{WEBHOOKS_PATH}/{current.subscription_id}/test")
            tests_asked.note_asked(self.store, self.practice, name, answer)
        except NotFoundError:
            # No test delivery will come: a delivery after this is not held as maybe it.
            tests_asked.arrived(self.store, self.practice, name)
            logger.warning("subscription of %s disappeared from the API", name)
            return CheckResult(name, "missing", current.subscription_id, 0.0)
        if arrived is None:
            return CheckResult(name, "arrived", current.subscription_id, 0.0)
        started = time.monotonic()
        while True:
            waited = time.monotonic() - started
            if arrived():
                return CheckResult(name, "arrived", current.subscription_id, waited)
            if waited >= wait:
                return CheckResult(name, "not_arrived", current.subscription_id, waited)
            self._sleep(every)

    def heal(self, name: str, event: str, arrived: Callable[[], bool] | None = None) -> str:
        """Check a subscription and re-subscribe when the API no longer knows it: ``ok``,
        ``resubscribed`` or the check's status when nothing could be done."""
        result = self.check(name, arrived)
        if result.status in ("missing", "not_subscribed"):
            if result.status == "missing":
                self.store.delete_subscription(self.practice, name)
            self._subscribe(name, event)
            self.store.count_resubscribe(self.practice, name)
            return "resubscribed"
        return "ok" if result.status == "arrived" else result.status
