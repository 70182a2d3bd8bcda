"""The one writer of the heartbeats table: a listening process records who listens since when,
beats every few seconds and marks a clean stop; the last beat before a start is where a
downtime began (:func:`.compose.note_downtime`).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from practiceflow.errors import PracticeflowError
from practiceflow.state import StateStore
from practiceflow.state.heartbeats import HeartbeatKind

logger = logging.getLogger("practiceflow.runner")

#: Seconds between heartbeats.
HEARTBEAT_EVERY: Final = 5.0


def holder() -> str:
    """This process, as a heartbeat row names it (host and pid)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def last_alive(store: StateStore, practice: str, kind: HeartbeatKind = "serve") -> datetime | None:
    """When a process of ``kind`` for the practice last showed a sign of life."""
    row = store.get_heartbeat(kind, practice)
    return None if row is None else row.beat_at


def mark_alive(
    store: StateStore,
    practice: str,
    at: datetime | None = None,
    kind: HeartbeatKind = "serve",
    *,
    start: bool = False,
    stop: bool = False,
) -> None:
    """Record a sign of life of this process (now, unless ``at`` says)."""
    store.beat(kind, practice, holder(), at=at, start=start, stop=stop)


@dataclass(eq=False, repr=False)
class Heartbeat:
    """Marks the practice alive every ``every`` seconds in a thread, and once at stop."""

    store: StateStore
    practice: str
    every: float = HEARTBEAT_EVERY
    kind: HeartbeatKind = "serve"

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pf-heartbeat", daemon=True)

    def start(self, at: datetime | None = None) -> Heartbeat:
        """Begin listening now (or at ``at``), then keep beating in the background."""
        mark_alive(self.store, self.practice, at, self.kind, start=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                mark_alive(self.store, self.practice, kind=self.kind)
            except PracticeflowError as exc:  # a busy store: the next beat tries again
                logger.warning("heartbeat not recorded: %s", exc)

    def stop(self) -> None:
        """Stop beating; the last sign of life is now, a clean stop."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        try:
            mark_alive(self.store, self.practice, kind=self.kind, stop=True)
        except PracticeflowError as exc:
            logger.warning("last heartbeat not recorded: %s", exc)
