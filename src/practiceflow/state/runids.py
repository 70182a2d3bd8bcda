"""Short run ids: a run is found by its full id or by any unique prefix of 8 characters or more.

Every place that takes a run id (``runs show | resolve | retry``, the console's pages and
JSON API) finds the run through :func:`find_run`, so the short id printed is an id accepted.
"""

from __future__ import annotations

from typing import Final

from practiceflow.errors import ConfigError
from practiceflow.state._store import StateStore
from practiceflow.state.rows import RunRecord

#: The shortest prefix accepted for a run id.
MIN_PREFIX: Final = 8
#: How many candidates an ambiguous prefix lists.
_LISTED: Final = 10


class AmbiguousRunId(ConfigError):
    """A short id that is the prefix of more than one run; ``candidates`` lists them."""

    def __init__(self, prefix: str, candidates: list[RunRecord]) -> None:
        self.prefix = prefix
        self.candidates = candidates
        shown = ", ".join(
            f"{run.run_id} ({run.recipe}, {run.status})" for run in candidates[:_LISTED]
        )
        more = "" if len(candidates) <= _LISTED else f" and {len(candidates) - _LISTED} more"
        message = (
            f"run id {prefix!r} is the start of {len(candidates)} runs: {shown}{more}; "
            "give more of the id"
        )
        super().__init__(message)


def find_run(store: StateStore, run_id: str) -> RunRecord | None:
    """The run with this id, or the one run whose id starts with it (a prefix of at least
    :data:`MIN_PREFIX` characters), or None; :class:`AmbiguousRunId` when it starts
    several."""
    text = run_id.strip()
    found = store.get_run(text)
    if found is not None or len(text) < MIN_PREFIX:
        return found
    # Generated ids are lowercase hex; a prefix typed in capitals finds them too (LIKE
    # ignores ASCII case on SQLite but not on PostgreSQL, hence the lowercase prefix).
    prefix = text.lower()
    matches = [
        run
        for run in store.list_runs(run_id_prefix=prefix, limit=_LISTED + 50)
        if run.run_id.lower().startswith(prefix)
    ]
    if len(matches) > 1:
        raise AmbiguousRunId(text, matches)
    return matches[0] if matches else None
