"""Named Python checks and hooks that action modules refer to, in one registry.

Hooks are the exception, not the habit: only logic that YAML cannot declare lives here
(matching a name against a settings list, the ledger rules of ``POST /api/v1/bills``). Each
is small and tested on its own (in the test file of the action that uses it).

Registered here:

* checks ``lead_settings_names`` (leads), ``entity_is_active_client`` and ``ledger_rules``
  (bills);
* hook ``canonical_lead_names`` (leads);
* read-backs ``client_by_identifier``, ``bill_by_entity_date_total``, ``lead_is_active`` and
  ``lead_by_email`` (:mod:`.read_backs`), that modules name in ``read_back.hook``.
"""

from __future__ import annotations

from practiceflow.hooks import bills, leads, read_backs
from practiceflow.hooks.action_context import ActionContext, ClientLike, ResponseLike
from practiceflow.hooks.registry import (
    CHECKS,
    HOOKS,
    Named,
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
    "Named",
    "ResponseLike",
    "bills",
    "get_check",
    "get_hook",
    "leads",
    "read_backs",
    "register_check",
    "register_hook",
]
