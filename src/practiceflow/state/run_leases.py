"""Run leases: which live process drives a run, kept in the store every process shares.

A lease names its holder (a token per driving, host, pid, process start) and its expiry;
the runner takes it before a run's first step and renews it (:mod:`practiceflow.runner.run_lease`).
It is taken over only once expired or its holder known dead. The store's statements
(``take_run_lease`` and kin, ``_runs_sql.py``) run after the run's row is locked, so taking
a lease and moving a step ``sent`` are serialized.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

#: The migration that adds the table (schema version 5).
LEASE_TABLE: Final = (
    """
    CREATE TABLE {p}run_leases (
        run_id text PRIMARY KEY REFERENCES {p}runs (run_id) ON DELETE CASCADE,
        owner text NOT NULL,
        host text NOT NULL,
        pid integer NOT NULL,
        process text NOT NULL,
        taken_at {time} NOT NULL,
        expires_at {time} NOT NULL
    )
    """,
)


@dataclass(frozen=True)
class RunLease:
    """Who drives a run, and until when.

    Attributes:
        run_id: the run.
        owner: a token unique to one driving of the run (one process may drive several
            runs, and one run twice in a row).
        host: the holder's host name.
        pid: the holder's process id.
        process: what tells the holder from a later process with the same id on the same
            host (its pid namespace and start time), empty when the system does not say.
        taken_at: when it was taken.
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
