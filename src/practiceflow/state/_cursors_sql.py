"""Polling cursors (each moved in one transaction with its boundary keys) and the count of
requests sent (what budget reports read), mixed into ``StateStore``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from practiceflow.state._sql import StoreBase
from practiceflow.state.rows import CursorState


class SQLCursors(StoreBase):
    """The cursors' and request counts' part of :class:`~practiceflow.state.StateStore`."""

    def get_cursor_state(self, practice: str, trigger_key: str) -> CursorState | None:
        """The cursor with its boundary keys, or ``None`` before the first poll."""
        key = (practice, trigger_key)
        where = " WHERE practice = ? AND trigger_key = ?"
        # One snapshot: the value and its keys belong together.
        with self._snapshot() as db:
            row = db.execute("SELECT value, updated_at FROM {p}cursors" + where, key).fetchone()
            if row is None:
                return None
            keys = db.execute("SELECT dedupe_key FROM {p}cursor_keys" + where, key).fetchall()
        boundary = frozenset(str(k[0]) for k in keys)
        return CursorState(practice, trigger_key, row[0], boundary, self.dialect.load_time(row[1]))

    def get_cursor(self, practice: str, trigger_key: str) -> str | None:
        """The cursor value, or ``None`` before the first poll."""
        state = self.get_cursor_state(practice, trigger_key)
        return None if state is None else state.value

    def set_cursor(
        self, practice: str, trigger_key: str, value: str, boundary_keys: Iterable[str] = ()
    ) -> None:
        """Move the cursor (only once the events up to ``value`` are handled) with its
        ``boundary_keys``: added to those kept when ``value`` is the stored one, else
        replacing them."""
        key = (practice, trigger_key)
        where = " WHERE practice = ? AND trigger_key = ?"
        stamp = self._stamp(None, "updated_at")
        with self._write() as db:
            # The cursor may not exist yet (no row to lock): a lock on its key.
            self._lock(db, f"cursor\0{practice}\0{trigger_key}")
            row = db.execute("SELECT value FROM {p}cursors" + where, key).fetchone()
            if row is not None and row[0] != value:
                db.execute("DELETE FROM {p}cursor_keys" + where, key)
            db.execute(
                "INSERT INTO {p}cursors (practice, trigger_key, value, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (practice, trigger_key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (*key, value, stamp),
            )
            db.executemany(
                "INSERT INTO {p}cursor_keys (practice, trigger_key, dedupe_key) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [(*key, dedupe_key) for dedupe_key in boundary_keys],
            )

    # --- requests sent ------------------------------------------------------------------

    def record_request(self, practice: str, at: datetime | None = None) -> None:
        """Count one request sent with a practice's credentials (for reports)."""
        self.record_requests(practice, [self.now() if at is None else at])

    def record_requests(self, practice: str, times: Sequence[datetime]) -> None:
        """Count several requests, sent at ``times``, in one commit (see ``RequestLog``)."""
        rows = [(practice, self._stamp(at, "at")) for at in times]
        if rows:
            with self._write() as db:
                db.executemany("INSERT INTO {p}requests (practice, at) VALUES (?, ?)", rows)

    def request_counts(self, practice: str, since: datetime) -> int:
        """How many requests were recorded for a practice at or after ``since``."""
        row = self._one(
            "SELECT count(*) FROM {p}requests WHERE practice = ? AND at >= ?",
            (practice, self.dialect.dump_time(since, "since")),
        )
        return int(row[0])

    def purge_requests(self, older_than: timedelta = timedelta(days=2)) -> int:
        """Forget request records older than ``older_than``; returns how many."""
        cutoff = self._stamp(self.now() - older_than, "older_than")
        with self._write() as db:
            return db.execute("DELETE FROM {p}requests WHERE at < ?", (cutoff,)).rowcount
