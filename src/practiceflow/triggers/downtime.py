"""What a trigger can do about the time ``serve`` was down: one with a poll source (a list
it can read with its options) catches up on start; one without depends on the sender's
retries, and says so (``triggers list``, ``plan``, :mod:`practiceflow.service.compose`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from practiceflow.errors import PracticeflowError
from practiceflow.triggers.definition import TriggerDefinition


def has_poll_source(definition: TriggerDefinition, options: Mapping[str, Any]) -> bool:
    """Whether the trigger can read its list endpoint with these options (a recipe's
    ``trigger.with``; ``proposal_accepted`` needs ``entityKey``)."""
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
