"""One trigger's side of a (shared) poll: its filter, dedupe, known keys and cursor, stored
under its own name (``<name>``, ``<name>#known``, ``<name>#page_size``) so that triggers on
one list never share state; its events are stored before its cursor moves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from practiceflow.errors import ConfigError, PracticeflowError
from practiceflow.state import CursorState, StateStore
from practiceflow.triggers.base import TriggerEvent, envelope
from practiceflow.triggers.definition import PollSpec, TriggerDefinition, parse_time

logger = logging.getLogger("practiceflow.triggers.poller")

#: Cursor value of a list whose rows carry no usable cursor field: read whole each poll.
FULL_SCAN: Final = "*"
#: Suffix of the cursor row that holds a trigger's known keys.
KNOWN_SUFFIX: Final = "#known"
_KNOWN_VALUE: Final = "known"
#: Separates a stored known key from the time of the row that taught it.
_TAUGHT_AT: Final = "\x1f"
#: Suffix of the cursor row that keeps a learned fixed server page size.
PAGE_SIZE_SUFFIX: Final = "#page_size"


@dataclass
class PollResult:
    """What one poll did for one trigger: new events in order found, requests of the (shared)
    read, cursor after, first poll (nothing fires), rows a template could not read."""

    events: list[TriggerEvent] = field(default_factory=list)
    requests: int = 0
    cursor: str | None = None
    baseline: bool = False
    skipped: int = 0


class _KnownKeys:
    """A trigger's known keys for one poll, loaded when first asked. A row at or before the
    time of the row that taught its key is that row read again after a crash, so it counts as
    not known yet: ``known`` never fires twice for one row."""

    __slots__ = ("_keys", "_load")

    def __init__(self, load: Callable[[], set[str]]) -> None:
        self._load = load
        self._keys: dict[str, datetime | None] | None = None

    def _loaded(self) -> dict[str, datetime | None]:
        if self._keys is None:
            self._keys = {}
            for entry in self._load():
                key, taught = entry, ""
                if _TAUGHT_AT in entry:
                    key, _, taught = entry.rpartition(_TAUGHT_AT)
                moment = parse_time(taught)
                earlier = self._keys.get(key, moment)  # a key known without a time stays so
                self._keys[key] = (
                    None if earlier is None or moment is None else min(earlier, moment)
                )
        return self._keys

    def known(self, key: str, stamp: datetime | None) -> bool:
        """Whether ``key`` was known before the row stamped ``stamp`` was read."""
        keys = self._loaded()
        if key not in keys:
            return False
        taught = keys[key]
        return taught is None or stamp is None or stamp > taught

    def __contains__(self, key: object) -> bool:
        return key in self._loaded()

    def add(self, key: str, stamp: datetime | None) -> None:
        """Count ``key`` as known for the rest of the poll, taught at ``stamp``."""
        self._loaded()[key] = stamp


class PollMember:
    """One trigger reading a (possibly shared) list: its own filter, dedupe and cursor. A
    read calls :meth:`begin`, a ``start_*``, :meth:`take` per row, :meth:`page_done` per page
    and a ``finish_*``. ``since``: as for :class:`~.shared_poll.Poller`."""

    def __init__(
        self,
        store: StateStore,
        practice: str,
        definition: TriggerDefinition,
        options: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        since: str | None = None,
    ) -> None:
        self.spec: PollSpec = definition.polled()
        self.store = store
        self.practice = practice
        self.definition = definition
        self.options = dict(options or {})
        self.name = name or definition.key
        self.since = since
        self.result = PollResult()
        self.state: CursorState | None = None
        self.changed = False
        self._known = _KnownKeys(self._load_known)
        self._added: set[str] = set()
        self._handled: set[str] = set()
        self._cursor: datetime | None = None
        self._boundary: frozenset[str] = frozenset()
        self._best: tuple[str, datetime | None, set[str]] = ("", None, set())
        self._written: tuple[str, frozenset[str]] | None = None
        self._fire = True

    def begin(self) -> CursorState | None:
        """Start a poll: a fresh result, and the stored cursor (``None``: none yet)."""
        self.result = PollResult()
        self.changed = False
        self._known = _KnownKeys(self._load_known)
        self._added, self._handled = set(), set()
        self.state = self.store.get_cursor_state(self.practice, self.name)
        return self.state

    @property
    def needs_baseline(self) -> bool:
        """No cursor and no ``since``: the first poll only remembers (fires nothing)."""
        return self.state is None and self.since is None

    def start_value(self) -> tuple[str, frozenset[str]]:
        """The cursor a ``lastUpdated`` read starts from, with its boundary (ConfigError:
        ``since`` is not a timestamp)."""
        if self.state is not None:
            return self.state.value, self.state.boundary_keys
        given = str(self.since)
        if parse_time(given) is None:
            message = f"since: got {given!r}; expected an ISO 8601 date-time with an offset"
            raise ConfigError(message)
        return given, frozenset()

    def start_since(self, value: str, boundary: frozenset[str], *, stored: bool) -> datetime:
        """Take rows after ``value`` (and at it, unless their key is in ``boundary``);
        returns it parsed."""
        cursor = parse_time(value)
        if cursor is None:
            message = f"stored cursor of {self.name!r} is not a timestamp: {value!r}"
            raise ConfigError(message)
        self._cursor, self._boundary, self._fire = cursor, boundary, True
        self._best = (value, cursor, set(boundary))
        self._written = (value, boundary) if stored else None
        self._handled = set()
        self.result.cursor = value
        return cursor

    def start_whole(self) -> None:
        """Take every row (a first poll only remembers)."""
        self._cursor, self._boundary = None, frozenset()
        self._fire = not self.needs_baseline
        self._best = ("", None, set())
        self.result.baseline = self.needs_baseline

    def take(self, row: Any, stamp: datetime | None) -> None:
        """Handle one row of the list for this trigger (``stamp``: its cursor field)."""
        context = self.spec.context(row, self.options)
        key = self._key(context)
        if key is None:
            return
        if self._cursor is not None:
            if key in self._handled or (
                stamp is not None
                and (stamp < self._cursor or (stamp == self._cursor and key in self._boundary))
            ):
                return  # handed over by an earlier poll, or earlier in this one
            self._handled.add(key)
        # Rows of the other cursor kinds are read again by design, each poll: their keys
        # are known from the first read on, whatever its time.
        taught = stamp if self.spec.cursor == "lastUpdated" else None
        self._consider(row, context, key, taught)
        if stamp is None:
            return
        _, best, keys = self._best
        if best is None or stamp > best:
            self._best = (str(row[self.spec.cursor_field or ""]), stamp, {key})
        elif stamp == best:
            keys.add(key)

    def page_done(self, *, may_move: bool) -> None:
        """After a page: remember new known keys; move the cursor when ``may_move``."""
        self._remember()
        if may_move:
            self._write(self._best[0], frozenset(self._best[2]))

    def finish_since(self) -> None:
        """At the end of a ``lastUpdated`` read: the cursor moves to the newest handled."""
        self.page_done(may_move=True)
        self.result.cursor = self._best[0]

    def finish_whole(self, today: str | None) -> None:
        """At the end of a whole read: the cursor as its kind wants it (``today``: the
        date of a ``date_range`` read, else ``None``)."""
        self._remember()
        if self.spec.cursor == "lastUpdated":
            text, best, keys = self._best
            value = text if best is not None else FULL_SCAN
            if best is not None or self.needs_baseline:
                self.store.set_cursor(self.practice, self.name, value, keys)
                self.changed = self.changed or self.state is None or self.state.value != value
            self.result.cursor = value
            return
        value = today if today is not None else FULL_SCAN
        if self.state is None or self.state.value != value:  # a cursor that did not move stays
            self.store.set_cursor(self.practice, self.name, value)
        self.result.cursor = value

    def _write(self, text: str, keys: frozenset[str]) -> None:
        if self._written == (text, keys):
            return  # an empty poll writes nothing
        self.store.set_cursor(self.practice, self.name, text, set(keys))
        self._written = (text, keys)
        self.changed = True

    def _key(self, context: Mapping[str, Any]) -> str | None:
        try:
            key = self.spec.dedupe_key(context)
        except PracticeflowError as exc:
            key = None
            logger.warning("a row of %s has no dedupe key, left out: %s", self.name, exc)
        if key is None:
            self.result.skipped += 1
        return key

    def _consider(
        self, row: Any, context: Mapping[str, Any], key: str, stamp: datetime | None
    ) -> None:
        spec = self.spec
        try:
            passes = spec.passes(context)
            known_key, remember = spec.known_key(context)
        except PracticeflowError as exc:
            logger.warning("a row of %s could not be read, left out: %s", self.name, exc)
            self.result.skipped += 1
            return
        if spec.known is not None:
            was_known = known_key is not None and self._known.known(known_key, stamp)
            passes = passes and (was_known if spec.known.fire == "known" else not was_known)
        if self._fire and passes:
            self._store_event(row, context, key)
        if remember and known_key is not None and known_key not in self._known:
            self._known.add(known_key, stamp)
            taught = row.get(self.spec.cursor_field) if stamp is not None else None
            # Stored with the time of the row that taught it (see _KnownKeys).
            self._added.add(f"{known_key}{_TAUGHT_AT}{taught}" if taught else known_key)

    def _store_event(self, row: Any, context: Mapping[str, Any], key: str) -> None:
        if self.store.seen_event(self.practice, self.name, key):
            return
        try:
            data = self.spec.to_event(row, context)
        except PracticeflowError as exc:
            logger.warning("a row of %s did not map, keeping it whole: %s", self.name, exc)
            data = row
        event = self.definition.key
        payload = envelope("poll", data, row, event=event)
        if self.store.record_event(self.practice, self.name, event, key, payload):
            self.changed = True
            self.result.events.append(
                TriggerEvent(
                    id=key,
                    trigger=self.name,
                    source="poll",
                    dedupe_key=key,
                    payload=data,
                    received_at=self.store.now(),
                    raw=row,
                    event=event,
                    practice=self.practice,
                )
            )

    def stored_page_size(self) -> int | None:
        """The fixed server page size learned earlier for this trigger, if any."""
        value = self.store.get_cursor(self.practice, self.name + PAGE_SIZE_SUFFIX)
        return int(value) if value is not None and value.isdigit() else None

    def learn_page_size(self, size: int) -> None:
        """Keep a learned fixed server page size (a restart asks no extra, empty page)."""
        self.store.set_cursor(self.practice, self.name + PAGE_SIZE_SUFFIX, str(size))

    def _load_known(self) -> set[str]:
        if self.spec.known is None:
            return set()
        state = self.store.get_cursor_state(self.practice, self.name + KNOWN_SUFFIX)
        return set() if state is None else set(state.boundary_keys)

    def _remember(self) -> None:
        if self._added:
            self.store.set_cursor(
                self.practice, self.name + KNOWN_SUFFIX, _KNOWN_VALUE, self._added
            )
            self._added = set()
            self.changed = True
