"""What a trigger can do about the time ``serve`` was down.

A stop is not a goodbye: subscriptions stay, and the sender's retries of deliveries made
while we were down reach the restarted receiver. Whether anything is lost depends on how
long the sender retries, which the spec does not say. So on start every trigger with a
**poll source** (a list endpoint it can read with its options) catches up from its last
handled point, and the webhook and the poll agree on each event's dedupe key, as in
``mode: both``; a trigger **without one** (``eform_submitted``, ``onboarding_completed``,
``any_webhook_event``, ``proposal_accepted`` without ``entityKey``) depends on the sender's
retries, and says so in ``triggers list``, in ``plan`` and, for each downtime, in the list
of what needs attention (:mod:`practiceflow.service.gaps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from practiceflow.errors import PracticeflowError
from practiceflow.triggers.definition import TriggerDefinition


def has_poll_source(definition: TriggerDefinition, options: Mapping[str, Any]) -> bool:
    """Whether the trigger can read its list endpoint with these options.

    Args:
        definition: the trigger.
        options: its options (a recipe's ``trigger.with``).

    Returns:
        False when it has no ``poll`` section, or the section needs an option that is not
        given (``proposal_accepted`` needs ``entityKey``).
    """
    if definition.poll is None:
        return False
    try:
        definition.poll.request(options)
    except PracticeflowError:
        return False
    return True


def downtime_note(definition: TriggerDefinition, options: Mapping[str, Any]) -> str:
    """One line on what happens to the trigger's events while ``serve`` is down."""
    if has_poll_source(definition, options):
        return (
            f"{definition.key}: events while serve is down are caught up on the next start "
            "by polling its list endpoint"
        )
    return (
        f"{definition.key}: no poll source, so events while serve is down depend on the "
        "sender's retries; each downtime is listed as needing attention"
    )
