"""Polling a list endpoint with a durable cursor: every change once, none lost.

One :class:`Poller` per (practice, trigger name). Its state lives in the state store, so a
new ``Poller`` over the same store carries on where the last one stopped:

* the **cursor** is the newest ``lastUpdated`` (as the server wrote it) among the rows
  handed over, with the dedupe keys of the rows *at* that instant (boundary keys);
* **known keys** (``poll.known``), kept under ``<name>#known``, tell new records from
  changed ones where rows carry no creation time.

The rules:

* **From now.** The first poll (no cursor, no ``since``) reads the whole list once, fires
  nothing, and sets the cursor to the newest ``lastUpdated`` it saw, remembering keys.
  The cursor is always a value the server wrote, never a local clock reading, so a
  future-``lastUpdated`` 400 cannot happen; the value sent is also never later than the
  local clock (the client refuses that), which can only widen the window.
* **Handed over first.** Each event is stored (one transaction, deduplicated by its key)
  before the cursor moves past it; a crash at any point repeats work, never loses it.
* **Same second.** ``lastUpdated`` goes out truncated to the second and is "at or after",
  so rows of the boundary second come back: those at the cursor with a boundary key, and
  any older than the cursor, are skipped; the store's dedupe catches the rest.
* **Moving pages.** Once this walk has shown the list ordered by the cursor field (two
  pages read, each ordered, the second starting at or after the end of the first), a
  full page makes the next request start again from that page's newest second (page 1)
  instead of asking for the next page, so rows that move while we read (changed again)
  cannot slip between pages. Until then, and on any list seen out of order, the pages are
  read in turn and the cursor moves only at the end: the order of rows under
  ``lastUpdated`` is not shown by the spec, so one ordered-looking page proves nothing.
* **Any paging.** A first page shorter than the ``pageSize`` sent may mean the server
  ignores ``pageSize``: the next page is asked for once (empty: the end). A page repeating
  the rows of the page before means the list ignores ``pageNumber``: it was read whole.
* **Budget.** With nothing changed, a poll is one request. :meth:`Poller.next_interval`
  stretches the interval as the server's ``X-RateLimit-Remaining`` falls.

Cursor kinds: ``lastUpdated``; ``date_range`` (bills: a window of bill dates from
``lookback_days`` ago to tomorrow, re-read each poll, new rows told apart by known keys);
``none`` (a list with no filter, read whole each poll).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from practiceflow.api import Client
from practiceflow.api.paging import MAX_PAGE_NUMBER, extract_items
from practiceflow.errors import ConfigError, PracticeflowError, ValidationError
from practiceflow.state import CursorState, StateStore
from practiceflow.triggers.base import TriggerEvent, envelope, persist
from practiceflow.triggers.definition import PollSpec, TriggerDefinition, parse_time

__all__ = ["FULL_SCAN", "KNOWN_SUFFIX", "PollResult", "Poller", "adapt_interval"]

logger = logging.getLogger("practiceflow.triggers.poller")

#: Cursor value of a list whose rows carry no usable cursor field: read whole each poll.
FULL_SCAN: Final = "*"
#: How many earlier times a poll tries when the API refuses its cursor (1 min doubling:
#: the last is about 2 days before the cursor).
_BEHIND_STEPS: Final = 12

#: Suffix of the cursor row that holds a trigger's known keys.
KNOWN_SUFFIX: Final = "#known"
_KNOWN_VALUE: Final = "known"
#: Suffix of the cursor row that keeps a learned fixed server page size.
PAGE_SIZE_SUFFIX: Final = "#page_size"


class _KnownKeys:
    """A trigger's known keys for one poll, read from the store when first asked.

    A poll that finds no row past its cursor never asks, so it does not read them.

    Args:
        load: reads the keys (called at most once).
    """

    __slots__ = ("_keys", "_load")

    def __init__(self, load: Callable[[], set[str]]) -> None:
        self._load = load
        self._keys: set[str] | None = None

    def _loaded(self) -> set[str]:
        if self._keys is None:
            self._keys = self._load()
        return self._keys

    def __contains__(self, key: object) -> bool:
        return key in self._loaded()

    def add(self, key: str) -> None:
        """Count ``key`` as known for the rest of the poll."""
        self._loaded().add(key)


@dataclass
class PollResult:
    """What one poll did.

    Attributes:
        events: the new events stored, in the order found.
        requests: how many requests it sent.
        cursor: the cursor after the poll.
        baseline: whether it was the first poll (nothing fires).
        skipped: rows left out because a template could not read them.
    """

    events: list[TriggerEvent] = field(default_factory=list)
    requests: int = 0
    cursor: str | None = None
    baseline: bool = False
    skipped: int = 0


def adapt_interval(
    base: float, limit: int | None, remaining: int | None, maximum: float = 3600.0
) -> float:
    """Stretch a poll interval as the rate budget runs low.

    Args:
        base: the configured interval in seconds.
        limit: ``X-RateLimit-Limit`` last seen, if any.
        remaining: ``X-RateLimit-Remaining`` last seen, if any.
        maximum: the longest interval returned.

    Returns:
        ``base`` with half the budget or more left; 2x below a half, 4x below a quarter,
        8x below a tenth, 16x when nothing is left.
    """
    if not limit or remaining is None or limit <= 0:
        return base
    left = remaining / limit
    factor = 1.0
    for threshold, stretch in ((0.0, 16.0), (0.1, 8.0), (0.25, 4.0), (0.5, 2.0)):
        if left <= threshold:
            factor = stretch
            break
    return min(base * factor, maximum)


class Poller:
    """Polls one trigger's list endpoint for one practice.

    Args:
        client: the API client.
        store: the state store (cursor, known keys, events).
        practice: the practice's name in the store.
        definition: the trigger (it must have a ``poll`` section).
        options: the trigger's options (``input`` of its templates).
        name: the trigger's name (default: its key).
        since: start from this ISO 8601 instant (or date) instead of "from now"; used only
            when no cursor is stored yet.
        today: the current UTC date for ``date_range`` windows (tests pass a fake).

    Raises:
        ConfigError: the trigger cannot be polled.
    """

    def __init__(
        self,
        client: Client,
        store: StateStore,
        practice: str,
        definition: TriggerDefinition,
        options: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        since: str | None = None,
        today: Any = None,
    ) -> None:
        if definition.poll is None:
            message = (
                f"trigger {definition.key!r} cannot be polled: {definition.module.description}"
            )
            raise ConfigError(message)
        self.client = client
        self.store = store
        self.practice = practice
        self.definition = definition
        self.spec: PollSpec = definition.poll
        self.options = dict(options or {})
        self.name = name or definition.key
        self.since = since
        self._today = today or (lambda: datetime.now(UTC).date())
        self._page_size: int | None = self.spec.page_size or self._stored_page_size()
        self._previous_rows: list[Any] | None = None
        self._walk_size: int | None = None
        self._lock = threading.Lock()

    # -- public ---------------------------------------------------------------------------

    def poll_once(self) -> PollResult:
        """Poll once: store the new events, then move the cursor.

        Returns:
            What was found.

        Raises:
            ApiError: the list endpoint refused (401, 403, 404, 400...); nothing moved.
            TransportError: no answer; nothing moved past what was stored.
        """
        with self._lock:
            state = self.store.get_cursor_state(self.practice, self.name)
            known = _KnownKeys(self._known)  # read on first use: an empty poll needs none
            if state is None and self.since is None:
                return self._baseline(known)
            if state is None:
                value, boundary = self._since_value(), frozenset[str]()
            else:
                value, boundary = state.value, state.boundary_keys
            if self.spec.cursor == "lastUpdated" and value != FULL_SCAN:
                try:
                    return self._poll_since(value, boundary, known, stored=state is not None)
                except ValidationError as refused:
                    return self._poll_behind(value, known, refused)
            return self._poll_whole(known, baseline=False, stored=state)

    def next_interval(self, base: float, maximum: float = 3600.0) -> float:
        """The seconds to wait before the next poll, given the budget left.

        Args:
            base: the configured interval.
            maximum: the cap.

        Returns:
            See :func:`adapt_interval`.
        """
        status = self.client.rate_limit_status
        if status is None:
            return base
        return adapt_interval(base, status.limit, status.remaining, maximum)

    def run(self, stop: threading.Event, interval: float = 60.0) -> None:
        """Poll until ``stop`` is set, waiting :meth:`next_interval` between polls.

        Transient failures are logged and retried at the next poll; configuration and
        authentication failures end the loop by raising.
        """
        while not stop.is_set():
            try:
                self.poll_once()
            except PracticeflowError as exc:
                if exc.kind != "transient":
                    raise
                logger.warning("poll of %s failed, retrying next time: %s", self.name, exc)
            stop.wait(self.next_interval(interval))

    # -- the three ways to read ----------------------------------------------------------

    def _since_value(self) -> str:
        given = str(self.since)
        if self.spec.cursor == "lastUpdated" and parse_time(given) is None:
            message = f"since: got {given!r}; expected an ISO 8601 date-time with an offset"
            raise ConfigError(message)
        return given

    def _baseline(self, known: _KnownKeys) -> PollResult:
        """The first poll: read everything once, remember, fire nothing."""
        result = self._poll_whole(known, baseline=True)
        result.baseline = True
        return result

    def _poll_whole(
        self, known: _KnownKeys, *, baseline: bool, stored: CursorState | None = None
    ) -> PollResult:
        path, fixed = self.spec.request(self.options)
        if self.spec.cursor == "date_range":
            today = self._today()
            start = today - timedelta(days=self.spec.lookback_days)
            end = today + timedelta(days=1)
            fixed = {**fixed, self.spec.start_param: start, self.spec.end_param: end}
        result = PollResult()
        newest: tuple[datetime, str] | None = None
        newest_keys: set[str] = set()
        added: set[str] = set()
        page = 1
        while True:
            rows, full = self._fetch(path, fixed, page, result)
            for row in rows:
                context = self.spec.context(row, self.options)
                key = self._key(context, result)
                if key is None:
                    continue
                self._consider(row, context, key, known, added, result, fire=not baseline)
                stamp = self._stamp(row)
                if stamp is not None and (newest is None or stamp > newest[0]):
                    newest, newest_keys = (stamp, str(row[self.spec.cursor_field or ""])), {key}
                elif stamp is not None and newest is not None and stamp == newest[0]:
                    newest_keys.add(key)
            if not full or page >= MAX_PAGE_NUMBER:
                break
            page += 1
        self._remember(added)
        if self.spec.cursor == "lastUpdated":
            value = newest[1] if newest is not None else FULL_SCAN
            if newest is not None or baseline:
                self.store.set_cursor(self.practice, self.name, value, newest_keys)
            result.cursor = value
        else:
            value = self._today().isoformat() if self.spec.cursor == "date_range" else FULL_SCAN
            if stored is None or stored.value != value:  # a cursor that did not move stays
                self.store.set_cursor(self.practice, self.name, value)
            result.cursor = value
        return result

    def _poll_since(
        self, value: str, boundary: frozenset[str], known: _KnownKeys, *, stored: bool = False
    ) -> PollResult:
        path, fixed = self.spec.request(self.options)
        cursor = parse_time(value)
        if cursor is None:
            message = f"stored cursor of {self.name!r} is not a timestamp: {value!r}"
            raise ConfigError(message)
        result = PollResult(cursor=value)
        best_text, best_time, best_keys = value, cursor, set(boundary)
        sent = self._sendable(cursor)
        added: set[str] = set()
        handled: set[str] = set()
        page = 1
        walk_ordered, walk_pages, walk_last = True, 0, None
        while True:
            params = {**fixed, self.spec.cursor_param: sent}
            rows, full = self._fetch(path, params, page, result)
            ordered, previous, page_newest = True, None, None
            for row in rows:
                stamp = self._stamp(row)
                if stamp is not None:
                    ordered = ordered and (previous is None or stamp >= previous)
                    if walk_last is not None and previous is None:
                        ordered = ordered and stamp >= walk_last  # across the page boundary
                    previous = stamp
                    page_newest = stamp if page_newest is None else max(page_newest, stamp)
                context = self.spec.context(row, self.options)
                key = self._key(context, result)
                if key is None:
                    continue
                if key in handled or (
                    stamp is not None and (stamp < cursor or (stamp == cursor and key in boundary))
                ):
                    continue  # handed over by an earlier poll, or earlier in this one
                handled.add(key)
                self._consider(row, context, key, known, added, result, fire=True)
                if stamp is None:
                    continue
                if stamp > best_time:
                    best_text, best_time, best_keys = (
                        str(row[self.spec.cursor_field or ""]),
                        stamp,
                        {key},
                    )
                elif stamp == best_time:
                    best_keys.add(key)
            self._remember(added)
            added = set()
            walk_ordered = walk_ordered and ordered
            walk_pages += 1
            walk_last = previous if previous is not None else walk_last
            # Order is proven only by two pages in a row, each ordered, boundary included.
            ordered = walk_ordered and walk_pages >= 2
            if ordered and page_newest is not None:
                # Every row up to this page's newest is stored: the cursor may move here.
                self.store.set_cursor(self.practice, self.name, best_text, best_keys)
                result.cursor = best_text
            if not full or page >= MAX_PAGE_NUMBER:
                break
            restart = ordered and page_newest is not None and self._sendable(page_newest) > sent
            if restart and page_newest is not None:
                sent, page = self._sendable(page_newest), 1
            else:
                page += 1
        if not stored or best_text != value or best_keys != boundary:
            # Written only when it moved: an empty poll writes nothing.
            self.store.set_cursor(self.practice, self.name, best_text, best_keys)
        result.cursor = best_text
        return result

    def _poll_behind(self, value: str, known: _KnownKeys, refused: ValidationError) -> PollResult:
        """Read again from earlier when the API refuses the cursor (its clock went back).

        The cursor is a time the API itself wrote; a 400 for it means the API's clock is now
        behind that time (spec 8: a future ``lastUpdated`` is refused). Records it stamps
        meanwhile carry times *before* the cursor, so reading on from the cursor would never
        see them. Step back from the cursor (1 min, 2 min, 4 min ... up to about 2 days)
        until the API accepts the time, and read from there: rows handed over before are
        dropped by the store's seen event ids (and known keys), so nothing fires twice.

        Raises:
            ValidationError: the API refused every earlier time too (it is not the clock).
        """
        cursor = parse_time(value)
        if cursor is None:  # pragma: no cover - _poll_since refused it first
            raise refused
        step = timedelta(minutes=1)
        for _ in range(_BEHIND_STEPS):
            earlier = (cursor - step).astimezone(UTC).isoformat().replace("+00:00", "Z")
            try:
                result = self._poll_since(earlier, frozenset(), known)
            except ValidationError:
                step *= 2
                continue
            logger.warning(
                "poll of %s: the API refused the cursor %s (its clock seems behind); "
                "read again from %s",
                self.name,
                value,
                earlier,
            )
            return result
        raise refused

    # -- pieces -----------------------------------------------------------------------------

    def _sendable(self, moment: datetime) -> datetime:
        """The instant to send: never after the local clock, whole seconds (earlier is safe)."""
        local = datetime.now(UTC)
        chosen = min(moment, local)
        return chosen.replace(microsecond=0)

    def _fetch(
        self, path: str, params: Mapping[str, Any], page: int, result: PollResult
    ) -> tuple[list[Any], bool]:
        """One page: its rows and whether another page may follow.

        A page that repeats the rows of the page before (the list ignores ``pageNumber``)
        comes back empty and last; a first page shorter than the ``pageSize`` sent, with
        no ``hasMore``, asks for one more page (the server may ignore ``pageSize``).
        """
        if page == 1:
            self._previous_rows = None
        query = dict(params)
        query["pageNumber"] = page
        if self.spec.page_size is not None:
            query["pageSize"] = self.spec.page_size
        data = self.client.get(path, query)
        result.requests += 1
        if (
            self.spec.items
            and isinstance(data, dict)
            and isinstance(data.get(self.spec.items), list)
        ):
            rows: list[Any] = data[self.spec.items]
            flag = data.get("hasMore") if isinstance(data.get("hasMore"), bool) else None
        else:
            rows, flag = extract_items(data, where=f"GET {path}")
        if self._previous_rows is not None and rows and rows == self._previous_rows:
            return [], False
        self._previous_rows = rows
        if self.spec.page_size is None and len(rows) > (self._page_size or 0):
            # A fixed server page size is learned from the longest page, and kept so that
            # a restarted poller does not ask for an extra, empty page.
            self._page_size = len(rows)
            self.store.set_cursor(self.practice, self.name + PAGE_SIZE_SUFFIX, str(len(rows)))
        if flag is not None:
            return rows, flag and bool(rows)
        if self.spec.page_size is not None:
            if page == 1 and rows:
                self._walk_size = len(rows)  # the server's size if pageSize is ignored
                return rows, True
            walk = self._walk_size or self.spec.page_size
            self._walk_size = max(walk, len(rows))
            return rows, bool(rows) and len(rows) >= walk
        size = self._page_size
        return rows, bool(rows) and (size is None or len(rows) >= size)

    def _stamp(self, row: Any) -> datetime | None:
        field_name = self.spec.cursor_field
        if field_name is None or not isinstance(row, dict):
            return None
        return parse_time(row.get(field_name))

    def _key(self, context: Mapping[str, Any], result: PollResult) -> str | None:
        try:
            key = self.spec.dedupe_key(context)
        except PracticeflowError as exc:
            key = None
            logger.warning("a row of %s has no dedupe key, left out: %s", self.name, exc)
        if key is None:
            result.skipped += 1
        return key

    def _consider(
        self,
        row: Any,
        context: Mapping[str, Any],
        key: str,
        known: _KnownKeys,
        added: set[str],
        result: PollResult,
        *,
        fire: bool,
    ) -> None:
        try:
            passes = self.spec.passes(context)
            known_key, remember = self.spec.known_key(context)
        except PracticeflowError as exc:
            logger.warning("a row of %s could not be read, left out: %s", self.name, exc)
            result.skipped += 1
            return
        if self.spec.known is not None:
            was_known = known_key is not None and known_key in known
            passes = passes and (was_known if self.spec.known.fire == "known" else not was_known)
        if fire and passes:
            self._store_event(row, context, key, result)
        if remember and known_key is not None and known_key not in known:
            known.add(known_key)
            added.add(known_key)

    def _store_event(
        self, row: Any, context: Mapping[str, Any], key: str, result: PollResult
    ) -> None:
        if self.store.seen_event(self.practice, self.name, key):
            return
        try:
            data = self.spec.to_event(row, context)
        except PracticeflowError as exc:
            logger.warning("a row of %s did not map, keeping it whole: %s", self.name, exc)
            data = row
        payload = envelope("poll", data, row, event=self.definition.key)
        if persist(self.store, self.practice, self.name, key, payload, event=self.definition.key):
            result.events.append(
                TriggerEvent(
                    id=key,
                    trigger=self.name,
                    source="poll",
                    dedupe_key=key,
                    payload=data,
                    received_at=self.store.now(),
                    raw=row,
                    event=self.definition.key,
                    practice=self.practice,
                )
            )

    def _stored_page_size(self) -> int | None:
        value = self.store.get_cursor(self.practice, self.name + PAGE_SIZE_SUFFIX)
        return int(value) if value is not None and value.isdigit() else None

    def _known(self) -> set[str]:
        if self.spec.known is None:
            return set()
        state = self.store.get_cursor_state(self.practice, self.name + KNOWN_SUFFIX)
        return set() if state is None else set(state.boundary_keys)

    def _remember(self, added: set[str]) -> None:
        if added:
            self.store.set_cursor(self.practice, self.name + KNOWN_SUFFIX, _KNOWN_VALUE, added)
