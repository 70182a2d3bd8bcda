"""Triggers, engine side: events from the practice, by webhook or by polling.

This package owns turning trigger modules (``triggers/*.yaml``) into events for recipes:

* :mod:`.base`: the one :class:`Trigger` interface and the :class:`TriggerEvent` it yields;
* :mod:`.definition`: a loaded module as webhook and poll specs, and their templates;
* :mod:`.receiver`: the starlette receiver (verify, dedupe, store, then 2xx);
* :mod:`.subscriptions`: subscribe, check, heal and unsubscribe webhook subscriptions;
* :mod:`.poller`: cursor polling (from now, same-second overlap, budget-aware);
* :mod:`.modes`: ``auto``, ``webhook``, ``poll`` and ``both``, and :func:`build_trigger`.

Every event is in the state store before it is acknowledged to its sender; the runner
reads them with :meth:`Trigger.pending` and acknowledges with :meth:`Trigger.acknowledge`.
"""

from __future__ import annotations

from practiceflow.triggers.base import Trigger, TriggerEvent, event_from_record
from practiceflow.triggers.definition import (
    KnownKeys,
    PollSpec,
    TriggerDefinition,
    WebhookSpec,
    definition,
    load_definition,
    shipped_trigger_keys,
)
from practiceflow.triggers.modes import (
    MODES,
    BothTrigger,
    PollingTrigger,
    WebhookTrigger,
    build_trigger,
    resolve_mode,
)
from practiceflow.triggers.poller import Poller, PollResult, adapt_interval
from practiceflow.triggers.subscriptions import (
    CheckResult,
    SubscriptionInDoubt,
    SubscriptionManager,
    supported_events,
)
from practiceflow.triggers.webhook_receiver import (
    DEFAULT_MAX_BODY,
    HOOKS_PREFIX,
    Receiver,
    ReceiverServer,
    serve_receiver,
)

__all__ = [
    "DEFAULT_MAX_BODY",
    "HOOKS_PREFIX",
    "MODES",
    "BothTrigger",
    "CheckResult",
    "KnownKeys",
    "PollResult",
    "PollSpec",
    "Poller",
    "PollingTrigger",
    "Receiver",
    "ReceiverServer",
    "SubscriptionInDoubt",
    "SubscriptionManager",
    "Trigger",
    "TriggerDefinition",
    "TriggerEvent",
    "WebhookSpec",
    "WebhookTrigger",
    "adapt_interval",
    "build_trigger",
    "definition",
    "event_from_record",
    "load_definition",
    "resolve_mode",
    "serve_receiver",
    "shipped_trigger_keys",
    "supported_events",
]
