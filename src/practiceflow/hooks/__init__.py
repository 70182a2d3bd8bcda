"""Named Python checks, hooks and read-backs that action modules refer to, in one registry:
only the logic YAML cannot declare (the shipped ones: docs/modules-guide.md).
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
