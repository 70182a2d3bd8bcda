"""Writes an assistant previewed (``practiceflow mcp``), kept in the store until confirmed,
so that a confirmation reaching any process sharing the store finds them.

The claim makes a confirmation single-use across processes: a process sends only while it
holds the claim, and takes another's over only when it is stale or its holder gone (the
caller decides, :meth:`PendingWriteStore.claim_pending_write`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from practiceflow.state._sql import StoreBase
from practiceflow.state.rows import Json
from practiceflow.state.sealing import to_json


@dataclass(frozen=True)
class PendingWrite:
    """A previewed write, as stored.

    Attributes:
        write_id: its id (not secret: the sealed confirmation state is what confirms it).
        sealed: what was sealed with it (the arguments, the confirmation code), opened.
        digest: the digest of the exact arguments.
        code_misses: wrong confirmation codes offered so far.
        claimed_by: the process sending it now (None: nobody), since ``claimed_at``.
    """

    practice: str
    write_id: str
    tool: str
    sealed: Json = field(repr=False)
    digest: str
    created_at: datetime
    expires_at: datetime
    code_misses: int
    claimed_by: str | None
    claimed_at: datetime | None


class PendingWriteStore(StoreBase):
    """The pending writes' part of :class:`~practiceflow.state.StateStore`."""

    def add_pending_write(
        self,
        practice: str,
        write_id: str,
        tool: str,
        sealed: Json,
        digest: str,
        expires_at: datetime,
    ) -> None:
        """Keep a previewed write (one durable commit); ``sealed`` (arguments, code) is
        what only the store may read again."""
        value = to_json(self.sealer.seal(sealed, f"pending write {write_id}"), write_id)
        created, expires = self._stamp(None, "created_at"), self._stamp(expires_at, "expires_at")
        with self._write(durable=True) as db:
            db.execute(
                "INSERT INTO {p}pending_writes (practice, write_id, tool, sealed, digest,"
                " created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (practice, write_id, tool, value, digest, created, expires),
            )

    def get_pending_write(self, practice: str, write_id: str) -> PendingWrite | None:
        """The previewed write of ``practice`` with that id, if it is still kept."""
        where = " WHERE practice = ? AND write_id = ?"
        return self._record(PendingWrite, "pending_writes", where, (practice, write_id))

    def miss_pending_code(self, practice: str, write_id: str) -> int:
        """Count a wrong confirmation code offered for a write; return how many so far."""
        with self._write() as db:
            row = db.execute(
                "UPDATE {p}pending_writes SET code_misses = code_misses + 1"
                " WHERE practice = ? AND write_id = ? RETURNING code_misses",
                (practice, write_id),
            ).fetchone()
        return 0 if row is None else int(row[0])

    def claim_pending_write(
        self,
        practice: str,
        write_id: str,
        claimant: str,
        may_take: Callable[[str, datetime], bool],
    ) -> str | None:
        """Claim a write for ``claimant`` unless another process holds it and
        ``may_take(holder, since)`` says no (stale, or its process gone): None when
        ``claimant`` now holds it, else the holder that keeps it."""
        stamp = self._stamp(None, "claimed_at")
        with self._write(durable=True) as db:
            sql = (
                "SELECT claimed_by, claimed_at FROM {p}pending_writes"
                " WHERE practice = ? AND write_id = ?" + self._load.lock_row
            )
            row = db.execute(sql, (practice, write_id)).fetchone()
            if row is not None and row[0] is not None and row[0] != claimant:
                holder, since = str(row[0]), self._load.load_time(row[1])
                if not may_take(holder, since):
                    return holder
            db.execute(
                "UPDATE {p}pending_writes SET claimed_by = ?, claimed_at = ?"
                " WHERE practice = ? AND write_id = ?",
                (claimant, stamp, practice, write_id),
            )
        return None

    def release_pending_write(self, practice: str, write_id: str, claimant: str) -> None:
        """Give up ``claimant``'s claim of a write (nothing when another holds it)."""
        with self._write() as db:
            db.execute(
                "UPDATE {p}pending_writes SET claimed_by = NULL, claimed_at = NULL"
                " WHERE practice = ? AND write_id = ? AND claimed_by = ?",
                (practice, write_id, claimant),
            )

    def purge_pending_writes(self, before: datetime) -> int:
        """Forget the writes expired before ``before`` that nobody holds; return how many."""
        cutoff = self._stamp(before, "before")
        with self._write() as db:
            sql = "DELETE FROM {p}pending_writes WHERE expires_at < ? AND claimed_by IS NULL"
            return int(db.execute(sql, (cutoff,)).rowcount)
