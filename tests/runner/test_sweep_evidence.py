"""What a sweep proves and what it hands to a person (issue 36), against lists served by a
stub client: an event in the window that never arrived is stored once; an event before the
window is left alone; a row without a time of event, or a list that cannot be read, keeps
the gap for a person saying what could not be checked; a sweep stopped midway resumes
where it got to."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from practiceflow.errors import ApiError
from practiceflow.service.compose import note_downtime
from practiceflow.service.heartbeat import mark_alive
from practiceflow.service.sweep import CHUNK, GapSweep, can_sweep
from practiceflow.state import StateStore
from practiceflow.triggers import load_definition

ACCEPTED = load_definition("proposal_accepted")
DOWN = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
BACK = DOWN + timedelta(minutes=10)
IN_WINDOW = (DOWN + timedelta(minutes=3)).isoformat()
BEFORE = (DOWN - timedelta(days=2)).isoformat()


class Lists:
    """A stub client: the entities list and each client's proposals; records every read."""

    def __init__(self, proposals: Mapping[str, list[dict[str, Any]]], broken: bool = False):
        self.proposals = proposals
        self.broken = broken
        self.reads: list[tuple[str, str | None]] = []

    def paginate(
        self, path: str, params: Mapping[str, Any] | None = None, page_size: int | None = None
    ) -> Iterator[Any]:
        entity = None if params is None else params.get("entityKey")
        self.reads.append((path, entity))
        if path == "/api/v1/entities/list":
            return iter([{"entityKey": key, "lastUpdated": BEFORE} for key in self.proposals])
        if self.broken:
            raise ApiError("GET", "/api/v1/proposals/list", 500)
        return iter(self.proposals[str(entity)])


def _accepted(key: str, when: str | None) -> dict[str, Any]:
    return {"proposalKey": key, "status": "Accepted", "acceptedOn": when, "entityKey": "c"}


def _gap(store: StateStore) -> str:
    mark_alive(store, "p", DOWN)
    (gap,) = note_downtime(store, "p", [("proposal_accepted", ACCEPTED, False)], now=BACK)
    return gap


def _sweep(store: StateStore, lists: Lists) -> GapSweep:
    return GapSweep(store, "p", lists, {"proposal_accepted": ACCEPTED})


def test_only_a_trigger_whose_list_a_value_opens_can_be_swept() -> None:
    assert can_sweep(ACCEPTED)
    assert not can_sweep(load_definition("eform_submitted"))  # no list at all


def test_an_event_in_the_window_that_never_arrived_is_stored_once_and_the_gap_closed(
    store: StateStore,
) -> None:
    gap = _gap(store)
    store.record_event("p", "proposal_accepted", "proposal.accepted", "proposal:seen", {})
    lists = Lists(
        {
            "c1": [_accepted("missed", IN_WINDOW), _accepted("old", BEFORE)],
            "c2": [_accepted("seen", IN_WINDOW), {"proposalKey": "draft", "status": "Draft"}],
        }
    )
    (result,) = _sweep(store, lists).run()
    assert (result.found, result.received, result.recovered) == (2, 1, ["proposal:missed"])
    assert store.get_event("p", "proposal_accepted", "proposal:missed") is not None
    assert store.get_event("p", "proposal_accepted", "proposal:old") is None  # before: not ours
    entry = store.get_attention(gap)
    assert entry is not None
    assert (entry.status, entry.settled_by) == ("closed", "sweep")
    assert isinstance(entry.evidence, dict)
    assert entry.evidence["clients"] == 2
    assert _sweep(store, lists).run() == []  # nothing left to check: nothing read
    assert len(lists.reads) == 3


@pytest.mark.parametrize(
    ("lists", "says"),
    [
        (
            Lists({"c1": [_accepted("undated", None)]}),
            "1 row(s) of proposal_accepted that never arrived carry no time of event",
        ),
        (Lists({"c1": []}, broken=True), "the sweep could not read every list"),
    ],
    ids=["undated", "unreadable"],
)
def test_what_the_sweep_cannot_prove_is_held_for_a_person_saying_why(
    store: StateStore, lists: Lists, says: str
) -> None:
    gap = _gap(store)
    (result,) = _sweep(store, lists).run()
    assert not result.closed
    entry = store.get_attention(gap)
    assert entry is not None
    assert entry.status == "open"
    assert says in entry.reason
    assert "settle it" in entry.reason
    assert store.get_event("p", "proposal_accepted", "proposal:undated") is None


def test_a_sweep_stopped_midway_resumes_where_it_got_to(store: StateStore) -> None:
    gap = _gap(store)
    clients = {f"c{n:03d}": [] for n in range(CHUNK + 5)}
    lists = Lists(clients)
    stop = threading.Event()
    sweep = GapSweep(store, "p", lists, {"proposal_accepted": ACCEPTED}, stop=stop)
    read_before = lists.paginate

    def stop_after_a_chunk(path: str, **kwargs: Any) -> Iterator[Any]:
        if sum(entity is not None for _, entity in lists.reads) >= CHUNK:
            stop.set()
        return read_before(path, **kwargs)

    lists.paginate = stop_after_a_chunk  # type: ignore[method-assign]
    assert sweep.run() == []  # stopped: nothing settled
    entry = store.get_attention(gap)
    assert entry is not None
    assert entry.status == "checking"
    assert isinstance(entry.evidence, dict)
    assert entry.evidence["through"] == f"c{CHUNK:03d}"  # the last client read

    again = Lists(clients)
    (result,) = _sweep(store, again).run()  # the next start
    assert (result.resumed, result.clients) == (CHUNK + 1, 4)
    rest = [f"c{n:03d}" for n in range(CHUNK + 1, CHUNK + 5)]
    assert [entity for _, entity in again.reads[1:]] == rest
    closed = store.get_attention(gap)
    assert closed is not None
    assert closed.status == "closed"


def test_a_gap_of_a_trigger_no_longer_served_is_handed_to_a_person(store: StateStore) -> None:
    gap = _gap(store)
    lists = Lists({"c1": []})
    assert GapSweep(store, "p", lists, {}).run() == []
    entry = store.get_attention(gap)
    assert entry is not None
    assert entry.status == "open"
    assert "no recipe served now receives it" in entry.reason
    assert lists.reads == []
