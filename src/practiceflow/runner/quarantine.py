"""Quarantine: a run started :data:`QUARANTINE_AFTER` times without ending (counted in the
store, so no crash loop) is held for a person instead of started again; a start that
completes a step forgives the earlier ones. See docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from practiceflow.state import RunRecord

#: Starts of a run that did not end after which it is quarantined instead of started again.
QUARANTINE_AFTER: Final = 3

#: The ``kind`` of a quarantined run's error.
QUARANTINED: Final = "quarantined"

#: The error ``kind`` of a run held (like a quarantined one) as its version cannot be rebuilt.
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
    """The error a run is quarantined with: ``reason`` (the way out), ``starts``, ``last_error``."""
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
