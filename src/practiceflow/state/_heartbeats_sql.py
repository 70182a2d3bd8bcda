"""The heartbeats table in SQL (:mod:`practiceflow.state.heartbeats`), mixed into ``SQLStore``."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from practiceflow.state._sql import StoreBase
from practiceflow.state.heartbeats import (
    HEARTBEAT_KINDS,
    HeartbeatKind,
    HeartbeatRecord,
)
from practiceflow.state.rows import check_value

_SELECT: Final = "SELECT kind, practice, holder, since, beat_at, stopped_at FROM {p}heartbeats"

# The cursor rows that held these facts before (``serve#alive`` of a practice,
# ``fleet#alive`` of the practice ``fleet#``, ``<trigger>#test-asked``) move here and to
# the subscription's health row: a store upgraded keeps its downtime and awaited tests.
_BEAT: Final = (
    "INSERT INTO {p}heartbeats (kind, practice, holder, since, beat_at, stopped_at)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (kind, practice) DO UPDATE SET"
    " holder = excluded.holder, beat_at = excluded.beat_at, stopped_at = excluded.stopped_at"
)
#: A new listening: ``since`` starts again.
_BEGIN: Final = _BEAT + ", since = excluded.since"


class SQLHeartbeats(StoreBase):
    """The heartbeats table's part of :class:`~practiceflow.state.StateStore`."""

    def beat(
        self,
        kind: HeartbeatKind,
        practice: str,
        holder: str,
        *,
        at: datetime | None = None,
        start: bool = False,
        stop: bool = False,
    ) -> None:
        """Record a sign of life at ``at`` (now by default): ``start`` begins a new
        listening (``since`` = ``at``, not stopped), ``stop`` marks a clean stop."""
        check_value("heartbeat kind", kind, HEARTBEAT_KINDS)
        stamp = self._stamp(at, "heartbeat")
        stopped = stamp if stop else None
        with self._write() as db:
            db.execute(_BEGIN if start else _BEAT, (kind, practice, holder, stamp, stamp, stopped))

    def get_heartbeat(self, kind: HeartbeatKind, practice: str) -> HeartbeatRecord | None:
        """The row of a process kind and practice, or None before its first start."""
        rows = self._all(_SELECT + " WHERE kind = ? AND practice = ?", (kind, practice))
        return self._load.decode(HeartbeatRecord, rows[0]) if rows else None

    def list_heartbeats(self) -> list[HeartbeatRecord]:
        """Every row, by kind and practice."""
        return [
            self._load.decode(HeartbeatRecord, row) for row in self._all(_SELECT + " ORDER BY 1, 2")
        ]
