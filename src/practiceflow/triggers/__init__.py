"""Triggers, engine side: events from the practice, by webhook or by polling.

Trigger modules (``triggers/*.yaml``) become events for recipes: the :class:`Trigger`
interface (:mod:`.base`), the webhook receiver and subscriptions, polling shared per list
(:mod:`.shared_poll`) on adaptive cadences, and the modes (:mod:`.modes`).
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
from practiceflow.triggers.poller import Poller
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
