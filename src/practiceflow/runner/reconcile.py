"""Reconciling in-doubt writes by reading back, never by sending again.

A write whose answer was lost (timeout, 5xx, dropped connection, or a crash after it was
marked ``sent``) is ``in_doubt``. Its action module declares how to look for it
(``read_back.hook``, a named read-back of :mod:`practiceflow.hooks.read_backs`) and, where
the API keeps a caller's free value, the field that carries the run marker
(``read_back.marker``, :mod:`practiceflow.runner.marker`). The read-back returns a
:class:`Verdict`:

``found``
    the write happened: the runner records the found record as the step's output
    (the step becomes ``succeeded``, noted as reconciled);
``absent``
    it certainly did not happen: the step is marked safe to retry and sent again;
``unknown``
    the API cannot tell (no read-back is declared, or more than one candidate matched):
    the run is held for a person (``practiceflow runs resolve``).

The runner knows no endpoint: a module without ``read_back`` (eForms, onboardings, AML
checks: the spec shows no way to look) is held for a person.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from practiceflow.errors import PracticeflowError
from practiceflow.hooks import ClientLike
from practiceflow.hooks.read_backs import READ_BACKS, WINDOW, ReadBack, Verdict, register_read_back
from practiceflow.manifest import ActionModule, default_registry

__all__ = ["READ_BACKS", "WINDOW", "ReadBack", "Verdict", "reconcile", "register_read_back"]

logger = logging.getLogger("practiceflow.runner")


def reconcile(
    action: ActionModule | str,
    client: ClientLike | None,
    data: Mapping[str, Any],
    sent_at: datetime,
) -> Verdict:
    """Find out whether an in-doubt write happened, by the read-back its module declares.

    Args:
        action: the step's action module (or a shipped action's key).
        client: the API client (None: nothing can be read).
        data: the step's input, rendered again exactly as it was sent.
        sent_at: when the step was marked ``sent`` (UTC).

    Returns:
        The verdict; a failure to read back is ``unknown``, never an exception.
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
