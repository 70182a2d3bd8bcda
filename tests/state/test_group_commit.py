"""Group commit: events handed over together share one transaction; answers wait for it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
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
    """A SQLite store that remembers the batches it was asked to record, and where.

    ``calls`` lists every batch; ``where`` the thread that recorded it.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls: list[list[str]] = []
        self.where: list[tuple[str, int]] = []
        self.fail_with: Exception | None = None

    def record_events(self, events: Sequence[NewEvent]) -> list[bool]:
        self.calls.append([event.event_id for event in events])
        self.where.append(("writer", threading.get_ident()))
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
    # The batch failed as a whole in the writer thread, which then recorded each event
    # on its own.
    batch = ["evt-1", "evt-2", "evt-3"]
    assert store.calls == [batch, ["evt-1"], ["evt-2"], ["evt-3"]]
    assert [where for where, _ in store.where] == ["writer"] * 4
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


def test_every_batch_is_committed_in_one_writer_thread_off_the_event_loop(
    store: CountingStore,
) -> None:
    group = GroupCommit(store)
    loop_thread = threading.get_ident()
    try:
        outcomes = asyncio.run(_record_all(group, [_event(1), _event(2), _event(1)]))
        outcomes += asyncio.run(_record_all(group, [_event(3)]))
    finally:
        group.close()
    assert outcomes == [True, True, False, True]
    threads = {thread for _, thread in store.where}
    assert len(threads) == 1
    assert loop_thread not in threads
    assert _commits(store.path) == 3


def test_a_locked_database_sends_the_batch_to_the_writer_and_the_loop_goes_on(
    store: CountingStore,
) -> None:
    # Another process's writer holds the lock for a while.
    holder = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO cursors VALUES ('x', 'y', 'z', '2026-01-01T00:00:00Z')")
    group = GroupCommit(store)
    released = False

    async def ticker() -> None:
        # The lock is released from the event loop after a few turns of it: were the
        # loop blocked while the writer waits, it never would be, and the record would
        # end on the busy timeout instead. No clock is read.
        nonlocal released
        for _ in range(5):
            await asyncio.sleep(0.01)
        holder.execute("COMMIT")
        released = True

    async def scenario() -> tuple[bool, bool]:
        ticking = asyncio.create_task(ticker())
        outcome = await group.record(_event(1))
        answered_after_release = released
        await ticking
        return outcome, answered_after_release

    try:
        outcome, answered_after_release = asyncio.run(scenario())
    finally:
        group.close()
        holder.close()
    assert outcome is True
    assert answered_after_release  # answered only once committed, after the lock was released
    assert [where for where, _ in store.where] == ["writer"]
    assert store.where[0][1] != threading.get_ident()
    assert _commits(store.path) == 1
