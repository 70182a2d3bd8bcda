"""Triggers, engine side: events from the practice, by webhook or by polling.

This package owns turning trigger modules (``triggers/*.yaml``) into events for recipes:

* :mod:`.base`: the one :class:`Trigger` interface and the :class:`TriggerEvent` it yields;
* :mod:`.definition`: a loaded module as webhook and poll specs, and their templates;
* :mod:`.receiver`: the starlette receiver (verify, dedupe, store, then 2xx);
* :mod:`.subscriptions`: subscribe, check, heal and unsubscribe webhook subscriptions;
* :mod:`.poller`: cursor polling (from now, same-second overlap, budget-aware);
* :mod:`.shared_poll` and :mod:`.poll_member`: one list read for every trigger reading that
  list, each with its own filter, dedupe and cursor;
* :mod:`.cadence` and :mod:`.practice_polls`: a practice's polls on adaptive intervals (up to
  each recipe's ``max_delay``), tied together so that a change anywhere speeds them all up;
* :mod:`.downtime`: whether a trigger can catch up on a downtime of ``serve`` (a poll
  source), and what ``plan`` and ``triggers list`` say of it;
* :mod:`.modes`: ``auto``, ``webhook``, ``poll`` and ``both``, and :func:`build_trigger`.

Every event is in the state store before it is acknowledged to its sender; the runner
reads them with :meth:`Trigger.pending` and acknowledges with :meth:`Trigger.acknowledge`.
"""

from __future__ import annotations

from practiceflow.triggers.base import Trigger, TriggerEvent, event_from_record
from practiceflow.triggers.cadence import Cadence, PollNeed, PracticeCadence
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
from practiceflow.triggers.poll_member import PollMember, PollResult
from practiceflow.triggers.poller import Poller, adapt_interval
from practiceflow.triggers.practice_polls import PollTarget, PracticePolls, ScheduledPoll
from practiceflow.triggers.shared_poll import (
    PollSource,
    SharedPoll,
    SharedPollResult,
    group_members,
    poll_source,
)
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
    "Cadence",
    "CheckResult",
    "KnownKeys",
    "PollMember",
    "PollNeed",
    "PollResult",
    "PollSource",
    "PollSpec",
    "PollTarget",
    "Poller",
    "PollingTrigger",
    "PracticeCadence",
    "PracticePolls",
    "Receiver",
    "ReceiverServer",
    "ScheduledPoll",
    "SharedPoll",
    "SharedPollResult",
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
    "group_members",
    "load_definition",
    "poll_source",
    "resolve_mode",
    "serve_receiver",
    "shipped_trigger_keys",
    "supported_events",
]
