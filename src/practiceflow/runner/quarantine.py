"""Quarantine: a run that keeps failing or ending its process is held for a person.

The runner counts every start of a run in the store, committed before the run's first
step (:attr:`~practiceflow.state.RunRecord.starts`: starts since the run last ended or
was held, less those stopped in order by a graceful shutdown). A start that stays counted
means the process died during the run (killed, out of memory, crashed) or the service's
boundary caught an exception no step caught and recorded it on the run
(:mod:`.event_guard`). The run is then started again automatically, which settles a passing
cause; but a run about to be started automatically that already has
:data:`QUARANTINE_AFTER` such starts is not started again. It is **quarantined**: held
``in_doubt`` with its reason (error ``kind: quarantined``, see :func:`quarantine_error`)
and its event marked handled, in one commit. It is listed as needing attention
(``practiceflow runs list --status in_doubt``, the console's "Needs attention",
``practiceflow_runs{status="in_doubt"}``) and nothing starts it again but a person:
``practiceflow runs retry RUN`` once the cause is fixed (the run has
:data:`QUARANTINE_AFTER` starts again), or ``practiceflow runs cancel RUN --reason``.

The count is in the store, not in a process, so a run whose every start kills the process
is quarantined when the restarted service comes to it the next time, instead of killing
that process too: no crash loop.

An operator's kill is told from a crash by progress: the first step a start completes
takes back the run's earlier unended starts (the runner's ``_progress``), so only starts
in a row that completed no step count. A run killed three times at the very same
unfinished step still looks like a crash; ``runs retry`` releases it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from practiceflow.state import RunRecord

__all__ = [
    "QUARANTINED",
    "QUARANTINE_AFTER",
    "VERSION_HELD",
    "is_quarantined",
    "quarantine_error",
    "quarantine_reason",
]

#: Starts of a run that did not end after which it is quarantined instead of started again.
QUARANTINE_AFTER: Final = 3

#: The ``kind`` of a quarantined run's error.
QUARANTINED: Final = "quarantined"

#: The ``kind`` of the error of a run held because its recipe version cannot be rebuilt
#: (:mod:`practiceflow.versions`): held like a quarantined run, until a person acts.
VERSION_HELD: Final = "version_unavailable"


def quarantine_reason(run: RunRecord) -> str | None:
    """Why a run is quarantined and what to do, or None when it is not quarantined."""
    error = run.error
    if run.status != "in_doubt" or not isinstance(error, Mapping):
        return None
    return str(error.get("reason")) if error.get("kind") in (QUARANTINED, VERSION_HELD) else None


def is_quarantined(run: RunRecord) -> bool:
    """Tell whether a run is held in quarantine (never started again automatically)."""
    return quarantine_reason(run) is not None


def quarantine_error(run: RunRecord) -> dict[str, Any]:
    """The error a run is quarantined with: its reason and the way out.

    Args:
        run: the run as found before a start, with at least :data:`QUARANTINE_AFTER`
            starts; its error is the one recorded by its last start, if any.

    Returns:
        ``kind`` (``quarantined``), ``reason`` (for people), ``starts`` and
        ``last_error`` (what the last start recorded, or None).
    """
    last = run.error if isinstance(run.error, Mapping) else None
    message = last.get("message") if last is not None else None
    if message:
        how = f"the last time with {message}"
    else:
        how = (
            "the last time without recording an error: the process running it stopped "
            "(killed, out of memory, or crashed)"
        )
    reason = (
        f"quarantined: started {run.starts} times without ending, {how}. Fix the cause (the "
        f"recipe, the event's data, the machine), then 'practiceflow runs retry {run.run_id}'; "
        f"or give it up with 'practiceflow runs cancel {run.run_id} --reason TEXT'"
    )
    return {"kind": QUARANTINED, "reason": reason, "starts": run.starts, "last_error": last}
