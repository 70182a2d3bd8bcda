"""Who is listening, since when, last beat: the ``heartbeats`` table and its store methods.

One row per process kind and practice (``fleet``: practice :data:`WHOLE_FLEET`); the
window from a last beat to the next start is a known downtime
(:func:`practiceflow.service.compose.note_downtime`). The one writer is
:class:`practiceflow.service.heartbeat.Heartbeat`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, get_args

from practiceflow.state._sql import StoreBase
from practiceflow.state.rows import check_value

HeartbeatKind = Literal["serve", "fleet"]
HEARTBEAT_KINDS: Final[tuple[HeartbeatKind, ...]] = get_args(HeartbeatKind)
#: The practice key of the fleet's one row (a practice of the fleet file has no ``*``).
WHOLE_FLEET: Final = "*"

_BEAT: Final = (
    "INSERT INTO {p}heartbeats (kind, practice, holder, since, beat_at, stopped_at)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (kind, practice) DO UPDATE SET"
    " holder = excluded.holder, beat_at = excluded.beat_at, stopped_at = excluded.stopped_at"
)
#: A new listening: ``since`` starts again.
_BEGIN: Final = _BEAT + ", since = excluded.since"


@dataclass(frozen=True)
class HeartbeatRecord:
    """One row of the heartbeats table.

    Attributes:
        practice: the practice key (:data:`WHOLE_FLEET` for the fleet).
        holder: which process wrote it last (host and pid; None for old rows).
        since: when that process began listening.
        stopped_at: when it stopped cleanly; None while it runs or after a kill.
    """

    kind: str
    practice: str
    holder: str | None
    since: datetime
    beat_at: datetime
    stopped_at: datetime | None


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
        where = " WHERE kind = ? AND practice = ?"
        return self._record(HeartbeatRecord, "heartbeats", where, (kind, practice))

    def list_heartbeats(self) -> list[HeartbeatRecord]:
        """Every row, by kind and practice."""
        return self._records(HeartbeatRecord, "heartbeats", " ORDER BY kind, practice")
