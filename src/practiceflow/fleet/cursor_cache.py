"""Cursors of the practices a replica owns: read once, kept in memory, written in batches.

While a replica holds a practice's lease no other polls it, so cursors read once stay
true. A poll's moves are written in one transaction by :meth:`CursorCache.flush`, which
the owner calls before the poll's events are queued: a cursor is durable before its job
exists, and a replica that dies leaves a cursor behind its events, never ahead.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, cast

from practiceflow.state import CursorState, StateStore

__all__ = ["CursorCache"]


class CursorCache:
    """A store whose cursors are cached and written in batches (see the module).

    Args:
        store: the fleet's state store.
    """

    def __init__(self, store: StateStore) -> None:
        self.store = store
        #: practice -> trigger key -> its cursor (None: none stored).
        self._known: dict[str, dict[str, CursorState | None]] = {}
        self._pending: dict[str, list[tuple[str, str, frozenset[str]]]] = {}
        self._lock = threading.Lock()
        # Practices whose cursors the start's snapshot answers (None: none stored then),
        # until the replica owns them: an owner reads its practices' cursors afresh.
        self._from_start: set[str] = set()

    def preload(self, practices: Iterable[str]) -> None:
        """Read every stored cursor at once, for the replica's start (a read per trigger
        made a fleet of thousands of practices take minutes to start)."""
        states = self.store.cursor_states()
        with self._lock:
            for state in states:
                self._known.setdefault(state.practice, {}).setdefault(state.trigger_key, state)
            self._from_start.update(practices)

    def as_store(self) -> StateStore:
        """This cache, typed as the store the pollers take."""
        return cast("StateStore", self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def get_cursor_state(self, practice: str, trigger_key: str) -> CursorState | None:
        """The cursor, from memory once read."""
        with self._lock:
            known = self._known.get(practice, {})
            if trigger_key in known:
                return known[trigger_key]
            if practice in self._from_start:
                return None
        state = self.store.get_cursor_state(practice, trigger_key)
        with self._lock:
            return self._known.setdefault(practice, {}).setdefault(trigger_key, state)

    def get_cursor(self, practice: str, trigger_key: str) -> str | None:
        """The cursor's value, from memory once read."""
        state = self.get_cursor_state(practice, trigger_key)
        return None if state is None else state.value

    def set_cursor(
        self, practice: str, trigger_key: str, value: str, boundary_keys: Iterable[str] = ()
    ) -> None:
        """Move the cursor in memory; written at the practice's next :meth:`flush`.

        Same rule as the store: the same value adds its boundary keys, a new one replaces.
        """
        keys = frozenset(boundary_keys)
        self.get_cursor_state(practice, trigger_key)  # read first: the merge needs it
        with self._lock:
            known = self._known.setdefault(practice, {})
            old = known.get(trigger_key)
            same = old is not None and old.value == value
            keys_now = old.boundary_keys | keys if old is not None and same else keys
            known[trigger_key] = CursorState(
                practice, trigger_key, value, keys_now, self.store.now()
            )
            self._pending.setdefault(practice, []).append((trigger_key, value, keys))

    def flush(self, practice: str) -> int:
        """Write the practice's cursor moves in one transaction; returns how many. On a
        StoreError its cursors are forgotten (read again at its next poll) and its moves
        dropped: its events are stored, so reading again repeats nothing."""
        with self._lock:
            moves = self._pending.pop(practice, [])
        if not moves:
            return 0
        try:
            with self.store.atomic():
                for trigger_key, value, keys in moves:
                    self.store.set_cursor(practice, trigger_key, value, keys)
        except BaseException:
            self.forget(practice)
            raise
        return len(moves)

    def forget(self, practice: str) -> None:
        """Drop what is kept of a practice (its lease began or ended, or a write failed)."""
        with self._lock:
            self._from_start.discard(practice)
            self._pending.pop(practice, None)
            self._known.pop(practice, None)
