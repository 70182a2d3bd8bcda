"""Group commit: events handed over together share one transaction; answers wait for it."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from practiceflow.errors import BugError, StoreError
from practiceflow.state import NewEvent, SQLiteStore
from practiceflow.state.group_commit import GroupCommit

P, SRC = "practice-a", "proposal_accepted"


def _event(number: int, payload: object = None) -> NewEvent:
    return NewEvent(P, SRC, "proposal.accepted", f"evt-{number}", payload or {"n": number})


class CountingStore(SQLiteStore):
    """A SQLite store that remembers the batches it was asked to record."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls: list[list[str]] = []
        self.fail_with: Exception | None = None

    def record_events(self, events: Sequence[NewEvent]) -> list[bool]:
        self.calls.append([event.event_id for event in events])
        if self.fail_with is not None:
            raise self.fail_with
        return super().record_events(events)


@pytest.fixture
def store(tmp_path: Path) -> CountingStore:
    with CountingStore(tmp_path / "state.db") as opened:
        yield opened


def _commits(path: Path) -> int:
    with sqlite3.connect(path) as raw:
        return int(raw.execute("SELECT count(*) FROM events").fetchone()[0])


async def _record_all(group: GroupCommit, events: list[NewEvent]) -> list[bool | BaseException]:
    outcomes = await asyncio.gather(*(group.record(e) for e in events), return_exceptions=True)
    return list(outcomes)


def test_events_handed_over_together_share_one_transaction(store: CountingStore) -> None:
    group = GroupCommit(store)
    try:
        events = [_event(n) for n in range(5)] + [_event(2)]  # the last repeats evt-2
        outcomes = asyncio.run(_record_all(group, events))
    finally:
        group.close()
    assert outcomes == [True, True, True, True, True, False]
    assert store.calls == [[f"evt-{n}" for n in (0, 1, 2, 3, 4, 2)]]
    assert (group.batches, group.committed) == (1, 6)
    assert _commits(store.path) == 5


def test_every_answer_waits_for_its_commit(store: CountingStore) -> None:
    group = GroupCommit(store)

    async def scenario() -> list[bool]:
        first = await group.record(_event(1))
        # By the time the answer arrives, the row is committed and visible to anyone.
        assert _commits(store.path) == 1
        later = await asyncio.gather(group.record(_event(2)), group.record(_event(3)))
        assert _commits(store.path) == 3
        return [first, *later]

    try:
        assert asyncio.run(scenario()) == [True, True, True]
    finally:
        group.close()
    assert store.calls == [["evt-1"], ["evt-2", "evt-3"]]


def test_a_full_batch_is_committed_without_waiting(store: CountingStore) -> None:
    group = GroupCommit(store, max_batch=2, max_wait=60.0)
    try:
        outcomes = asyncio.run(asyncio.wait_for(_record_all(group, [_event(1), _event(2)]), 10))
    finally:
        group.close()
    assert outcomes == [True, True]
    assert store.calls == [["evt-1", "evt-2"]]


def test_batches_never_exceed_max_batch(store: CountingStore) -> None:
    group = GroupCommit(store, max_batch=3)
    try:
        outcomes = asyncio.run(_record_all(group, [_event(n) for n in range(7)]))
    finally:
        group.close()
    assert outcomes == [True] * 7
    assert [len(batch) for batch in store.calls] == [3, 3, 1]


def test_a_store_failure_fails_the_whole_batch_and_stores_nothing(store: CountingStore) -> None:
    store.fail_with = StoreError("state database x: the disk is full")
    group = GroupCommit(store)
    try:
        outcomes = asyncio.run(_record_all(group, [_event(1), _event(2)]))
    finally:
        group.close()
    assert [type(outcome) for outcome in outcomes] == [StoreError, StoreError]
    assert store.calls == [["evt-1", "evt-2"]]
    assert _commits(store.path) == 0


def test_one_bad_event_fails_alone(store: CountingStore) -> None:
    group = GroupCommit(store)
    bad = _event(2, {"not json": {1, 2}})
    try:
        outcomes = asyncio.run(_record_all(group, [_event(1), bad, _event(3)]))
    finally:
        group.close()
    assert outcomes[0] is True
    assert outcomes[2] is True
    assert isinstance(outcomes[1], BugError)
    # The batch failed as a whole, then each event was recorded on its own.
    assert store.calls == [["evt-1", "evt-2", "evt-3"], ["evt-1"], ["evt-2"], ["evt-3"]]
    assert _commits(store.path) == 2


def test_a_closed_group_starts_a_new_writer_for_later_events(store: CountingStore) -> None:
    group = GroupCommit(store)
    assert asyncio.run(_record_all(group, [_event(1)])) == [True]
    group.close()
    group.close()
    assert asyncio.run(_record_all(group, [_event(2)])) == [True]
    group.close()
    assert _commits(store.path) == 2


def test_bad_settings_are_refused(store: CountingStore) -> None:
    with pytest.raises(BugError, match="max_batch"):
        GroupCommit(store, max_batch=0)
    with pytest.raises(BugError, match="max_wait"):
        GroupCommit(store, max_wait=-1)
