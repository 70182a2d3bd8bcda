"""Run leases in the store (issue 35): one live holder per run, taken over only when it
lapsed or its holder is known dead, every backend alike."""

from __future__ import annotations

from datetime import timedelta

from practiceflow.state import StateStore
from practiceflow.state.rows import RunLease
from practiceflow.testing import FakeClock


def _lease(store: StateStore, run_id: str, owner: str, ttl: float = 60) -> RunLease:
    now = store.now()
    return RunLease(run_id, owner, "host-a", 1234, "ns@1", now, now + timedelta(seconds=ttl))


def _alive(lease: RunLease) -> bool:
    return False


def _dead(lease: RunLease) -> bool:
    return True


def test_a_live_holder_keeps_its_run_until_it_lapses_or_is_known_dead(
    store: StateStore, clock: FakeClock
) -> None:
    run_id, _ = store.start_run("p", "r", "e1")
    first = _lease(store, run_id, "first")
    assert store.take_run_lease(first, _alive) == first
    assert store.run_lease(run_id) == first

    # Another driver is refused, and told who holds the run.
    assert store.take_run_lease(_lease(store, run_id, "second"), _alive) == first
    assert store.renew_run_lease(run_id, "first", store.now() + timedelta(seconds=60))

    # Lapsed: the next driver takes it, and the old holder's renewal says it was lost.
    clock.advance(timedelta(seconds=61))
    second = _lease(store, run_id, "second")
    assert store.take_run_lease(second, _alive) == second
    assert not store.renew_run_lease(run_id, "first", store.now() + timedelta(seconds=60))
    store.release_run_lease(run_id, "first")  # not its lease any more: nothing happens
    assert store.run_lease(run_id) == second

    # A holder known dead is taken over at once.
    third = _lease(store, run_id, "third")
    assert store.take_run_lease(third, _dead) == third
    store.release_run_lease(run_id, "third")
    assert store.run_lease(run_id) is None


def test_the_lease_read_inside_a_block_is_the_one_the_block_commits_with(
    store: StateStore,
) -> None:
    run_id, _ = store.start_run("p", "r", "e1")
    held = _lease(store, run_id, "mine")
    store.take_run_lease(held, _alive)
    with store.atomic(durable=True):
        assert store.run_lease(run_id) == held
        store.step_pending(run_id, "bill", {"use": "create_bill"})
        store.step_sent(run_id, "bill")
    assert store.get_step(run_id, "bill").status == "sent"  # type: ignore[union-attr]
