"""Run leases: which live process drives a run, kept in the store every process shares.

A lease row names its holder (a token unique to one driving of the run, the host, the
process id and what tells that process from a later one with the same id) and when it
expires. The runner takes it before a run's first step and renews it while it drives
(:mod:`practiceflow.runner.run_lease`); another process finds it held and leaves the run
alone. A lease is taken over only when it expired, or when its holder is known dead.

The statements here run inside the store's write transaction, after the run's row was
locked, so that taking a lease, checking it and moving a step ``sent`` are serialized.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from practiceflow.state._dialect import SQLConnection

__all__ = ["LEASE_TABLE", "RunLease", "drop_lease", "read_lease", "renew_lease", "take_lease"]

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

_SELECT: Final = (
    "SELECT run_id, owner, host, pid, process, taken_at, expires_at FROM {p}run_leases"
    " WHERE run_id = ?"
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


def _decode(row: Any, load_time: Callable[[Any], datetime]) -> RunLease:
    return RunLease(
        str(row[0]), str(row[1]), str(row[2]), int(row[3]), str(row[4]),
        load_time(row[5]), load_time(row[6]),
    )  # fmt: skip


def read_lease(db: SQLConnection, run_id: str) -> RunLease | None:
    """The lease of a run as ``db``'s transaction sees it, or None."""
    row = db.execute(_SELECT, (run_id,)).fetchone()
    return None if row is None else _decode(row, db.dialect.load_time)


def take_lease(
    db: SQLConnection,
    wanted: RunLease,
    now: datetime,
    dead: Callable[[RunLease], bool],
) -> RunLease:
    """Take a run's lease in ``db``'s write transaction (the run's row locked) unless a
    live holder has it.

    Args:
        db: the write transaction.
        wanted: the lease to write (its times already set).
        now: the store's time: a lease expiring at or before it has lapsed.
        dead: whether a lease's holder is known dead (a process gone from this host).

    Returns:
        The lease the run now has: ``wanted`` when taken, else the live holder's.
    """
    current = read_lease(db, wanted.run_id)
    held = current is not None and current.owner != wanted.owner
    if current is not None and held and current.expires_at > now and not dead(current):
        return current
    dump = db.dialect.dump_time
    db.execute(
        "INSERT INTO {p}run_leases (run_id, owner, host, pid, process, taken_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET"
        " owner = excluded.owner, host = excluded.host, pid = excluded.pid,"
        " process = excluded.process, taken_at = excluded.taken_at,"
        " expires_at = excluded.expires_at",
        (
            wanted.run_id, wanted.owner, wanted.host, wanted.pid, wanted.process,
            dump(wanted.taken_at, "taken_at"), dump(wanted.expires_at, "expires_at"),
        ),
    )  # fmt: skip
    return wanted


def renew_lease(db: SQLConnection, run_id: str, owner: str, expires_at: Any) -> bool:
    """Push a lease's expiry (already dumped) on; False when ``owner`` does not hold it."""
    sql = "UPDATE {p}run_leases SET expires_at = ? WHERE run_id = ? AND owner = ?"
    return db.execute(sql, (expires_at, run_id, owner)).rowcount == 1


def drop_lease(db: SQLConnection, run_id: str, owner: str) -> None:
    """Give a lease back, when ``owner`` still holds it."""
    db.execute("DELETE FROM {p}run_leases WHERE run_id = ? AND owner = ?", (run_id, owner))
