"""Run leases: which live process drives a run (:mod:`practiceflow.runner.run_lease`). The
store's methods (``_runs_sql.py``) lock the run's row first, so that taking a lease and moving
a step ``sent`` are serialized."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class RunLease:
    """Who drives a run, and until when.

    Attributes:
        owner: a token unique to one driving of the run (one process may drive several
            runs, and one run twice in a row).
        process: what tells the holder from a later process with the same pid on the same
            host (its pid namespace and start time), empty when the system does not say.
        expires_at: when it lapses unless renewed.
    """

    run_id: str
    owner: str
    host: str
    pid: int
    process: str
    taken_at: datetime
    expires_at: datetime

    def describe(self) -> str:
        """Who holds it, for a person: ``pid 1234 on host web-1 since 2026-...``."""
        since = self.taken_at.isoformat(timespec="seconds")
        return f"pid {self.pid} on host {self.host}, since {since}"
