"""Named Python checks and hooks that action modules refer to, in one registry.

Only logic YAML cannot declare lives here: checks ``lead_settings_names``,
``entity_is_active_client`` and ``ledger_rules``, hook ``canonical_lead_names``, and the
read-backs of :mod:`.read_backs` that modules name in ``read_back.hook``.
"""

from __future__ import annotations

from practiceflow.hooks import bills, leads, read_backs
from practiceflow.hooks.action_context import (
    CHECKS,
    HOOKS,
    ActionContext,
    ClientLike,
    get_check,
    get_hook,
    register_check,
    register_hook,
)

__all__ = [
    "CHECKS",
    "HOOKS",
    "ActionContext",
    "ClientLike",
    "bills",
    "get_check",
    "get_hook",
    "leads",
    "read_backs",
    "register_check",
    "register_hook",
]
