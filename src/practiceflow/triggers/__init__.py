"""Triggers, engine side: events from the practice, by webhook (receiver, subscriptions) or
by polling (shared per list, on adaptive cadences), behind one :class:`Trigger` interface.
"""

from __future__ import annotations

from practiceflow.triggers.base import Trigger, TriggerEvent
from practiceflow.triggers.cadence import PollNeed
from practiceflow.triggers.definition import (
    TriggerDefinition,
    definition,
    load_definition,
    shipped_trigger_keys,
)
from practiceflow.triggers.modes import (
    BothTrigger,
    PollingTrigger,
    WebhookTrigger,
    build_trigger,
    resolve_mode,
)
from practiceflow.triggers.poll_member import PollMember
from practiceflow.triggers.practice_polls import PollTarget, PracticePolls
from practiceflow.triggers.shared_poll import Poller, SharedPoll
from practiceflow.triggers.subscriptions import (
    SubscriptionInDoubt,
    SubscriptionManager,
    supported_events,
)
from practiceflow.triggers.webhook_receiver import Receiver, ReceiverServer, serve_receiver

__all__ = [
    "BothTrigger",
    "PollMember",
    "PollNeed",
    "PollTarget",
    "Poller",
    "PollingTrigger",
    "PracticePolls",
    "Receiver",
    "ReceiverServer",
    "SharedPoll",
    "SubscriptionInDoubt",
    "SubscriptionManager",
    "Trigger",
    "TriggerDefinition",
    "TriggerEvent",
    "WebhookTrigger",
    "build_trigger",
    "definition",
    "load_definition",
    "resolve_mode",
    "serve_receiver",
    "shipped_trigger_keys",
    "supported_events",
]
