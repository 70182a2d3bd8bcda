"""Reconciling in-doubt writes by reading back (the module's ``read_back.hook``), never by
sending again: ``found`` (succeeded), ``absent`` (sent again) or ``unknown`` (held for a
person, as is a module without a read-back).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from practiceflow.errors import PracticeflowError
from practiceflow.hooks import ClientLike
from practiceflow.hooks.read_backs import READ_BACKS, Verdict, register_read_back
from practiceflow.manifest import ActionModule, default_registry

__all__ = ["READ_BACKS", "Verdict", "register_read_back"]

logger = logging.getLogger("practiceflow.runner")


def reconcile(
    action: ActionModule | str,
    client: ClientLike | None,
    data: Mapping[str, Any],
    sent_at: datetime,
) -> Verdict:
    """Find out whether an in-doubt write happened, by its module's read-back; ``data`` is the
    input rendered again as sent. A failure to read back is ``unknown``, never an exception.
    """
    module = default_registry().action(action) if isinstance(action, str) else action
    declared = module.read_back
    func = READ_BACKS.get(declared.hook) if declared is not None else None
    if func is None:
        note = f"{module.key!r} has no read-back in the API; a person must check and resolve"
        return Verdict("unknown", note)
    if client is None:
        return Verdict("unknown", "no client to read back with")
    try:
        return func(client, data, sent_at)
    except (PracticeflowError, ValueError, TypeError) as exc:
        logger.warning("read-back for %s failed: %s", module.key, exc)
        return Verdict("unknown", f"the read-back failed ({exc}); a person must check")
