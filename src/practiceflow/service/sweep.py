"""A gap closes by evidence: a sweep of the list endpoints proves a downtime complete.

A trigger whose module declares ``poll.sweep`` is swept at the lowest priority: every value
of the option (every client), then the trigger's list for each. Rows in the window are
stored under the webhook's dedupe key (each runs once); all lists read closes the gap with
its evidence, anything unproven goes to a person. Progress is noted every :data:`CHUNK`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from practiceflow.budget import Priority, priority
from practiceflow.errors import PracticeflowError
from practiceflow.service.needs_person import close_by_evidence, hold_for_person
from practiceflow.state import StateStore
from practiceflow.state.attention_rows import AttentionRecord
from practiceflow.triggers.base import envelope
from practiceflow.triggers.definition import SweepSource, TriggerDefinition, parse_time

logger = logging.getLogger("practiceflow.runner")

#: Read before the last sign of life (a delivery in flight at a kill may be lost).
MARGIN: Final = timedelta(minutes=5)
#: Clients read between two notes of progress.
CHUNK: Final = 25


def _source(definition: TriggerDefinition) -> SweepSource | None:
    """The sweep the trigger's module declares (``poll.sweep``), or None."""
    return None if definition.poll is None else definition.poll.sweep


def can_sweep(definition: TriggerDefinition) -> bool:
    """Whether a downtime of the trigger can be proven complete by a sweep."""
    return _source(definition) is not None


def lists_read(definition: TriggerDefinition) -> list[str]:
    """The lists a sweep of the trigger reads, as its evidence names them."""
    source, spec = _source(definition), definition.poll
    if source is None or spec is None:
        return []
    shown = str(spec.request({source.each: "{" + source.each + "}"})[0])
    return [f"GET {source.path} (every page)", f"GET {shown} for each {source.each}"]


@dataclass
class SweepResult:
    """What a sweep of one trigger found (``window`` starts with :data:`MARGIN`; ``recovered``:
    dedupe keys stored now; ``undated``: rows with no time of event that never arrived;
    ``bounded``: rows after the window are left for later, the check of :mod:`.silence`).
    """

    trigger: str
    entries: list[str]
    window: tuple[datetime, datetime]
    clients: int = 0
    resumed: int = 0
    found: int = 0
    received: int = 0
    recovered: list[str] = field(default_factory=list)
    undated: list[str] = field(default_factory=list)
    error: str | None = None
    closed: bool = False
    bounded: bool = False
    when: tuple[str, ...] = ()

    def evidence(self, lists: Sequence[str], through: str | None = None) -> dict[str, Any]:
        """The JSON evidence kept on the entries."""
        return {
            "window": [self.window[0].isoformat(), self.window[1].isoformat()],
            "lists": list(lists),
            "clients": self.clients,
            "resumed": self.resumed,
            "found": self.found,
            "received": self.received,
            "recovered": self.recovered,
            "undated": self.undated[:20],
            "error": self.error,
            "through": through,
        }


class GapSweep:
    """Sweeps the gaps a downtime left ``checking``, in a background thread."""

    def __init__(
        self,
        store: StateStore,
        practice: str,
        client: Any,
        triggers: Mapping[str, TriggerDefinition],
        *,
        stop: threading.Event | None = None,
        on_stored: Callable[[], None] | None = None,
        on_done: Callable[[SweepResult], None] | None = None,
    ) -> None:
        self.store = store
        self.practice = practice
        self.client = client
        self.triggers = dict(triggers)
        self.stop = stop or threading.Event()
        self.on_stored = on_stored
        self.on_done = on_done
        self._thread: threading.Thread | None = None

    def pending(self) -> dict[str, list[AttentionRecord]]:
        """The gap entries still to check, by trigger."""
        found: dict[str, list[AttentionRecord]] = {}
        for entry in self.store.list_attention(
            practice=self.practice, kind="gap", statuses=("checking",)
        ):
            found.setdefault(entry.trigger, []).append(entry)
        return found

    def start(self) -> GapSweep:
        """Sweep in a background thread (nothing to check: no thread)."""
        if self.pending():
            self._thread = threading.Thread(target=self.run, name="pf-gap-sweep", daemon=True)
            self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        """Stop at the next read and wait for the thread."""
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the sweep to end by itself; whether it did."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def run(self) -> list[SweepResult]:
        """Sweep every trigger with entries to check; what each sweep found."""
        results: list[SweepResult] = []
        for trigger, entries in self.pending().items():
            definition = self.triggers.get(trigger)
            source = None if definition is None else _source(definition)
            if definition is None or source is None:
                # Never left checking where no sweep will come: a person's, saying why.
                why = "no recipe served now receives it, so no sweep checks this window"
                for entry in entries:
                    hold_for_person(self.store, entry, f"{entry.reason}; {why}", entry.evidence)
                continue
            try:
                result = self._sweep(trigger, definition, source, entries)
            except PracticeflowError as exc:  # the store: the next start sweeps again
                logger.warning("sweep of %s stopped: %s", trigger, exc)
                continue
            if result is not None:
                results.append(result)
                if self.on_done is not None:
                    self.on_done(result)
        return results

    def _sweep(
        self,
        trigger: str,
        definition: TriggerDefinition,
        source: SweepSource,
        entries: list[AttentionRecord],
    ) -> SweepResult | None:
        starts = [entry.window_start for entry in entries if entry.window_start is not None]
        ends = [entry.window_end for entry in entries if entry.window_end is not None]
        if not starts or not ends:  # cannot happen for entries listed by note_downtime
            for entry in entries:
                hold_for_person(self.store, entry, f"{entry.reason}; no window", entry.evidence)
            return None
        start, end = min(starts) - MARGIN, max(ends)
        result = SweepResult(trigger, [entry.attention_id for entry in entries], (start, end))
        result.when = source.when
        throughs = [_through(entry) for entry in entries]
        through = None if any(value is None for value in throughs) else min(map(str, throughs))
        lists = lists_read(definition)
        try:
            with priority(Priority.BACKFILL):
                values = self._enumerate(source)
                done, last = 0, through
                for value, changed in values:
                    if self.stop.is_set():
                        self._note(entries, result, lists, last)
                        return None
                    if (
                        through is not None
                        and value <= through
                        and (changed is None or changed < start)
                    ):
                        result.resumed += 1
                        continue
                    self._read(trigger, definition, {source.each: value}, result)
                    result.clients += 1
                    done, last = done + 1, value
                    if done % CHUNK == 0:
                        self._note(entries, result, lists, value)
        except PracticeflowError as exc:
            result.error = str(exc)
        self._settle(entries, result, lists)
        return result

    def sweep_window(
        self, trigger: str, definition: TriggerDefinition, window: tuple[datetime, datetime]
    ) -> SweepResult:
        """Read a trigger's lists over a window, storing what never arrived (:mod:`.silence`)."""
        source = _source(definition)
        result = SweepResult(trigger, [], window, bounded=True)
        if source is None:
            result.error = "it has no list to sweep"
            return result
        try:
            with priority(Priority.BACKFILL):
                for value, _ in self._enumerate(source):
                    if self.stop.is_set():
                        result.error = "stopped"
                        break
                    self._read(trigger, definition, {source.each: value}, result)
                    result.clients += 1
        except PracticeflowError as exc:
            result.error = str(exc)
        return result

    def _enumerate(self, source: SweepSource) -> list[tuple[str, datetime | None]]:
        """Every value of the option (sorted), with when its record last changed."""
        found: dict[str, datetime | None] = {}
        for row in self.client.paginate(source.path):
            if isinstance(row, Mapping) and isinstance(row.get(source.field), str):
                changed = row.get(source.changed) if source.changed else None
                found[row[source.field]] = parse_time(str(changed)) if changed else None
        return sorted(found.items())

    def _read(
        self,
        trigger: str,
        definition: TriggerDefinition,
        options: Mapping[str, Any],
        result: SweepResult,
    ) -> None:
        spec = definition.poll
        assert spec is not None
        assert spec.sweep is not None
        path, params = spec.request(options)
        for row in self.client.paginate(path, params=params, page_size=spec.page_size):
            context = spec.context(row, options)
            key = spec.dedupe_key(context)
            if key is None or not spec.passes(context):
                continue
            when = spec.sweep.event_time(row)
            if when is None:
                if not self.store.seen_event(self.practice, trigger, key):
                    result.undated.append(key)
                continue
            if when < result.window[0] or (result.bounded and when > result.window[1]):
                continue
            result.found += 1
            data = spec.to_event(row, context)
            stored = envelope("poll", data, row, event=trigger)
            stored["sweep"] = True
            if self.store.record_event(self.practice, trigger, trigger, key, stored):
                result.recovered.append(key)
                logger.info("sweep of %s recovered %s (never delivered)", trigger, key)
                if self.on_stored is not None:
                    self.on_stored()
            else:
                result.received += 1

    def _note(
        self,
        entries: list[AttentionRecord],
        result: SweepResult,
        lists: Sequence[str],
        through: str | None,
    ) -> None:
        """Keep how far the sweep got on the entries (a restart resumes there)."""
        for entry in entries:
            self.store.update_attention(
                entry.attention_id, "checking", evidence=result.evidence(lists, through)
            )

    def _settle(
        self, entries: list[AttentionRecord], result: SweepResult, lists: Sequence[str]
    ) -> None:
        evidence = result.evidence(lists)
        window = (
            f"{result.window[0].isoformat(timespec='seconds')}.."
            f"{result.window[1].isoformat(timespec='seconds')}"
        )
        if result.error is not None or result.undated:
            why = (
                f"the sweep could not read every list ({result.error})"
                if result.error is not None
                else f"{len(result.undated)} row(s) of {result.trigger} that never arrived "
                f"carry no time of event ({', '.join(result.when)}), so the sweep cannot tell "
                "whether they happened in the window"
            )
            for entry in entries:
                hold_for_person(self.store, entry, f"{entry.reason}; {why}", evidence)
            return
        note = (
            f"swept {lists[0]} and {lists[1]} ({result.clients} read, {result.resumed} read "
            f"before a restart) over {window}: {result.found} event(s) in it, "
            f"{result.received} received already, {len(result.recovered)} recovered and run; "
            "none missing"
        )
        for entry in entries:
            close_by_evidence(self.store, entry, note, evidence)
        result.closed = True
        logger.info("gap of %s closed by evidence: %s", result.trigger, note)


def _through(entry: AttentionRecord) -> str | None:
    evidence = entry.evidence
    if isinstance(evidence, Mapping) and isinstance(evidence.get("through"), str):
        return str(evidence["through"])
    return None
