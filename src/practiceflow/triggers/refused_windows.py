"""Deliveries refused because the store could not take them, remembered until it can.

A refused delivery is answered 503 and retried, but the sender may give up before the store
is usable again. So the first refusal per (practice, trigger) opens a window; once a later
delivery is stored, ``on_window`` lists each window as a gap needing attention.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

logger = logging.getLogger("practiceflow.triggers")

#: Called with (practice, trigger, first refusal, when the store took writes again).
WindowHandler = Callable[[str, str, datetime, datetime], None]


class RefusedWindows:
    """The open windows of refused deliveries (module docstring)."""

    def __init__(self, on_window: WindowHandler) -> None:
        self._on_window = on_window
        self._open: dict[tuple[str, str], datetime] = {}
        self._lock = threading.Lock()

    def refused(self, practice: str, trigger: str, at: datetime) -> None:
        """Note a delivery of a trigger refused at ``at`` (the window's start, if first)."""
        with self._lock:
            self._open.setdefault((practice, trigger), at)

    @property
    def pending(self) -> bool:
        """Whether a window waits to be listed."""
        return bool(self._open)

    def close(self, at: datetime) -> None:
        """The store took a write at ``at``: list every open window, ending then. A window
        whose listing fails stays open for the next time."""
        with self._lock:
            windows, self._open = self._open, {}
        for (practice, trigger), start in windows.items():
            try:
                self._on_window(practice, trigger, start, at)
            except Exception as exc:  # the store refused again: kept for the next commit
                logger.warning("refused deliveries of %s not listed yet: %s", trigger, exc)
                self.refused(practice, trigger, start)
