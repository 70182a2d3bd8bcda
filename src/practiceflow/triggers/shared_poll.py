"""One list request feeds every trigger that reads the same list with the same cursor.

Polls are grouped by :class:`PollSource`; the read starts at the earliest of its triggers'
cursors and each trigger stores its events before moving its own cursor, so a crash only
hands rows again to the one left behind. Rules: docs/architecture.md ("Receiving events").
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

from practiceflow.api import Client
from practiceflow.api.paging import MAX_PAGE_NUMBER, extract_items
from practiceflow.errors import ConfigError, ValidationError
from practiceflow.state import StateStore
from practiceflow.triggers.definition import CursorKind, TriggerDefinition, parse_time
from practiceflow.triggers.poll_member import FULL_SCAN, PollMember, PollResult

logger = logging.getLogger("practiceflow.triggers.poller")

#: How many earlier times a read tries when the API refuses its cursor (1 min doubling:
#: the last is about 2 days before the cursor).
_BEHIND_STEPS: Final = 12


@dataclass(frozen=True)
class PollSource:
    """What a poll reads (rendered with the trigger's options): the key of a shared poll.
    ``query``: sorted ``(name, JSON)`` pairs; ``window``: of a ``date_range`` cursor."""

    path: str
    query: tuple[tuple[str, str], ...]
    cursor: CursorKind
    cursor_param: str
    cursor_field: str | None
    window: tuple[str, str, int] | None
    page_size: int | None
    items: str | None

    def describe(self) -> str:
        """``GET /api/v1/entities/list?lastUpdated=`` and the like, for people."""
        names = [name for name, _ in self.query]
        if self.cursor == "lastUpdated":
            names.append(f"{self.cursor_param}=")
        elif self.window is not None:
            names += [f"{self.window[0]}=", f"{self.window[1]}="]
        return f"GET {self.path}" + (f"?{'&'.join(names)}" if names else "")


def poll_source(definition: TriggerDefinition, options: Mapping[str, Any]) -> PollSource:
    """The source a trigger polls with these options (ConfigError: it cannot be polled;
    TemplateError: an option its path or query needs is missing)."""
    spec = definition.polled()
    path, fixed = spec.request(options)
    query = tuple(sorted((name, json.dumps(value, default=str)) for name, value in fixed.items()))
    window = (
        (spec.start_param, spec.end_param, spec.lookback_days)
        if spec.cursor == "date_range"
        else None
    )
    return PollSource(
        path=path,
        query=query,
        cursor=spec.cursor,
        cursor_param=spec.cursor_param,
        cursor_field=spec.cursor_field,
        window=window,
        page_size=spec.page_size,
        items=spec.items,
    )


def group_members(members: Iterable[PollMember]) -> list[list[PollMember]]:
    """Group triggers by what they read (:func:`poll_source`), in order of first appearance
    (ConfigError: two have the same name)."""
    groups: dict[PollSource, list[PollMember]] = {}
    names: set[str] = set()
    for member in members:
        if member.name in names:
            raise ConfigError(f"two polls of one practice are both named {member.name!r}")
        names.add(member.name)
        groups.setdefault(poll_source(member.definition, member.options), []).append(member)
    return list(groups.values())


@dataclass
class SharedPollResult:
    """What one shared poll did: each trigger's result, the requests sent for them all,
    and whether anything changed (an event, a cursor that moved, a key learned)."""

    results: dict[str, PollResult] = field(default_factory=dict)
    requests: int = 0
    changed: bool = False

    @property
    def events(self) -> list[Any]:
        """Every trigger's new events, trigger by trigger."""
        return [event for result in self.results.values() for event in result.events]

    @property
    def cursors(self) -> dict[str, str | None]:
        """Trigger name -> its cursor after the poll."""
        return {name: result.cursor for name, result in self.results.items()}


class SharedPoll:
    """Polls one list for every trigger of a practice that reads it (module docstring);
    ``today`` as for :class:`Poller`. ConfigError: members read different lists, or none."""

    def __init__(
        self,
        client: Any,
        members: Sequence[PollMember],
        *,
        today: Callable[[], date] | None = None,
    ) -> None:
        if not members:
            raise ConfigError("a shared poll needs at least one trigger")
        sources = {poll_source(member.definition, member.options) for member in members}
        if len(sources) != 1:
            names = [member.name for member in members]
            message = f"triggers {names} read different lists; they cannot share a poll"
            raise ConfigError(message)
        self.client = client
        self.members = list(members)
        self.source = sources.pop()
        self.spec = self.members[0].spec
        self._today = today or (lambda: datetime.now(UTC).date())
        learned = [size for m in self.members if (size := m.stored_page_size()) is not None]
        self._page_size: int | None = self.spec.page_size or max(learned, default=None)
        self._previous_rows: list[Any] | None = None
        self._walk_size: int | None = None
        self._requests = 0
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        """The triggers' names."""
        return [member.name for member in self.members]

    def poll_once(self) -> SharedPollResult:
        """Read the list once for every trigger: store their events, then their cursors. On
        an ApiError or TransportError, no cursor has moved past what was stored."""
        with self._lock:
            self._requests = 0
            whole: list[PollMember] = []
            since: list[PollMember] = []
            for member in self.members:
                state = member.begin()
                scan = state is not None and state.value == FULL_SCAN
                if self.spec.cursor != "lastUpdated" or member.needs_baseline or scan:
                    whole.append(member)
                else:
                    since.append(member)
            try:
                if whole:
                    self._read_whole(whole)
                if since:
                    self._read_since_or_behind(since)
            finally:
                for member in self.members:
                    member.result.requests = self._requests
            return SharedPollResult(
                results={member.name: member.result for member in self.members},
                requests=self._requests,
                changed=any(member.changed for member in self.members),
            )

    def _read_whole(self, members: list[PollMember]) -> None:
        path, fixed = self.spec.request(members[0].options)
        today = self._today()
        if self.spec.cursor == "date_range":
            start = today - timedelta(days=self.spec.lookback_days)
            end = today + timedelta(days=1)
            fixed = {**fixed, self.spec.start_param: start, self.spec.end_param: end}
        for member in members:
            member.start_whole()
        page = 1
        while True:
            rows, full = self._fetch(path, fixed, page, members)
            with _one_commit(members):
                for row in rows:
                    stamp = self._stamp(row)
                    for member in members:
                        member.take(row, stamp)
            if not full or page >= MAX_PAGE_NUMBER:
                break
            page += 1
        day = today.isoformat() if self.spec.cursor == "date_range" else None
        with _one_commit(members):
            for member in members:
                member.finish_whole(day)

    def _read_since_or_behind(self, members: list[PollMember]) -> None:
        starts = [(member, *member.start_value(), member.state is not None) for member in members]
        try:
            self._read_since(starts)
        except ValidationError as refused:
            earliest = min((start[1] for start in starts), key=_time)
            self._read_behind(members, earliest, refused)

    def _read_since(self, starts: list[tuple[PollMember, str, frozenset[str], bool]]) -> None:
        members = [start[0] for start in starts]
        path, fixed = self.spec.request(members[0].options)
        earliest = min(  # each cursor checked before anything is read
            member.start_since(value, boundary, stored=stored)
            for member, value, boundary, stored in starts
        )
        sent = self._sendable(earliest)
        fresh_walk = False
        page = 1
        walk_ordered, walk_pages, walk_last = True, 0, None
        while True:
            params = {**fixed, self.spec.cursor_param: sent}
            rows, full = self._fetch(path, params, page, members)
            ordered, previous, page_newest = True, None, None
            stamps = [self._stamp(row) for row in rows]
            for stamp in stamps:
                if stamp is not None:
                    ordered = ordered and (previous is None or stamp >= previous)
                    if walk_last is not None and previous is None:
                        ordered = ordered and stamp >= walk_last  # across the page boundary
                    previous = stamp
                    page_newest = stamp if page_newest is None else max(page_newest, stamp)
            walk_ordered = walk_ordered and ordered
            walk_pages += 1
            walk_last = previous if previous is not None else walk_last
            # Order is proven only by two pages in a row, each ordered, boundary included.
            ordered = walk_ordered and walk_pages >= 2
            # Only rows after the earliest cursor can be written: a page of the boundary
            # second alone (every empty poll) opens no transaction.
            fresh = any(stamp is None or stamp > earliest for stamp in stamps)
            fresh_walk = fresh_walk or fresh
            with _one_commit(members) if fresh else nullcontext():
                for row, stamp in zip(rows, stamps, strict=True):
                    for member in members:
                        member.take(row, stamp)
                for member in members:
                    # Every row up to this page's newest is stored: each cursor may move.
                    member.page_done(may_move=ordered and page_newest is not None)
            if not full or page >= MAX_PAGE_NUMBER:
                break
            restart = ordered and page_newest is not None and self._sendable(page_newest) > sent
            if restart and page_newest is not None:
                sent, page = self._sendable(page_newest), 1
            else:
                page += 1
        with _one_commit(members) if fresh_walk else nullcontext():
            for member in members:
                member.finish_since()

    def _read_behind(self, members: list[PollMember], value: str, refused: ValidationError) -> None:
        """When the API refuses the cursor (its clock went back, spec 8), read from 1, 2, 4 min
        ... about 2 days earlier until accepted (seen rows are dropped); else raise ``refused``."""
        cursor = _time(value)
        step = timedelta(minutes=1)
        for _ in range(_BEHIND_STEPS):
            earlier = (cursor - step).astimezone(UTC).isoformat().replace("+00:00", "Z")
            try:
                self._read_since([(member, earlier, frozenset(), False) for member in members])
            except ValidationError:
                step *= 2
                continue
            logger.warning(
                "poll of %s: the API refused the cursor %s (its clock seems behind); "
                "read again from %s",
                ", ".join(member.name for member in members),
                value,
                earlier,
            )
            return
        raise refused

    def _sendable(self, moment: datetime) -> datetime:
        """The instant to send: never after the local clock, whole seconds (earlier is safe)."""
        return min(moment, datetime.now(UTC)).replace(microsecond=0)

    def _stamp(self, row: Any) -> datetime | None:
        name = self.spec.cursor_field
        return parse_time(row.get(name)) if name is not None and isinstance(row, dict) else None

    def _fetch(
        self, path: str, params: Mapping[str, Any], page: int, members: Sequence[PollMember]
    ) -> tuple[list[Any], bool]:
        """One page: its rows and whether another may follow. A repeated page (``pageNumber``
        ignored) is empty and last; a short first page without ``hasMore`` asks one more."""
        if page == 1:
            self._previous_rows = None
        query = dict(params)
        query["pageNumber"] = page
        if self.spec.page_size is not None:
            query["pageSize"] = self.spec.page_size
        data = self.client.get(path, query)
        self._requests += 1
        items = self.spec.items
        if items and isinstance(data, dict) and isinstance(data.get(items), list):
            rows: list[Any] = data[items]
            flag = data.get("hasMore") if isinstance(data.get("hasMore"), bool) else None
        else:
            rows, flag = extract_items(data, where=f"GET {path}")
        if self._previous_rows is not None and rows and rows == self._previous_rows:
            return [], False
        self._previous_rows = rows
        if self.spec.page_size is None and len(rows) > (self._page_size or 0):
            # A fixed server page size is learned from the longest page, and kept so that
            # a restarted poll does not ask for an extra, empty page.
            self._page_size = len(rows)
            for member in members:
                member.learn_page_size(len(rows))
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


def _one_commit(members: Sequence[PollMember]) -> AbstractContextManager[None]:
    """One durable transaction for the members' writes, when they share one store."""
    stores = {id(member.store): member.store for member in members}
    if len(stores) != 1:
        return nullcontext()
    return next(iter(stores.values())).atomic(durable=True)


def _time(value: str) -> datetime:
    moment = parse_time(value)
    if moment is None:
        message = f"stored cursor is not a timestamp: {value!r}"
        raise ConfigError(message)
    return moment


class Poller:
    """Polls one trigger's list endpoint for one practice. ``since`` starts from that ISO
    8601 instant instead of "from now" (only while no cursor is stored); ``today`` gives
    the UTC date of ``date_range`` windows (tests fake it)."""

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
        today: Callable[[], date] | None = None,
    ) -> None:
        self.member = PollMember(store, practice, definition, options, name=name, since=since)
        self.client = client
        self.name = self.member.name
        self.shared = SharedPoll(client, [self.member], today=today)

    def poll_once(self) -> PollResult:
        """Poll once: store the new events, then move the cursor (:meth:`SharedPoll.poll_once`)."""
        return self.shared.poll_once().results[self.name]
