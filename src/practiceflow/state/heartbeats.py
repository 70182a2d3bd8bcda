"""Who is listening, since when, last beat: the ``heartbeats`` table of the state store.

One row per process kind and practice (``fleet``: practice :data:`WHOLE_FLEET`); the
window from a last beat to the next start is a known downtime
(:mod:`practiceflow.service.gaps`). The one writer is
:class:`practiceflow.service.heartbeat.Heartbeat`; the store's methods are in
``_heartbeats_sql.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

HeartbeatKind = Literal["serve", "fleet"]
#: Every kind of process that keeps a heartbeat.
HEARTBEAT_KINDS: Final[tuple[HeartbeatKind, ...]] = ("serve", "fleet")
#: The practice key of the fleet's one row (a practice of the fleet file has no ``*``).
WHOLE_FLEET: Final = "*"


@dataclass(frozen=True)
class HeartbeatRecord:
    """One row of the heartbeats table.

    Attributes:
        kind: the process kind (:data:`HEARTBEAT_KINDS`).
        practice: the practice key (:data:`WHOLE_FLEET` for the fleet).
        holder: which process wrote it last (host and pid; None for rows kept from
            before the table existed).
        since: when that process began listening.
        beat_at: its last sign of life.
        stopped_at: when it stopped cleanly; None while it runs or after a kill.
    """

    kind: str
    practice: str
    holder: str | None
    since: datetime
    beat_at: datetime
    stopped_at: datetime | None
