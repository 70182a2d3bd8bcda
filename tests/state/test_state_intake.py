"""Store-agnostic: events and dedupe, polling cursors, subscriptions, request counts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from practiceflow.errors import BugError, ConfigError
from practiceflow.state import NewEvent, StateStore

if TYPE_CHECKING:
    from practiceflow.testing import FakeClock


P, Q = "practice-a", "practice-b"
SRC = "proposal_accepted"
SIG1 = "sha256=" + "1" * 64
SIG2 = "sha256=" + "2" * 64
SECRET = "whsec_do_not_print_me"


# --- events ------------------------------------------------------------------------------------


def test_an_event_is_recorded_once_by_id(store: StateStore, clock: FakeClock) -> None:
    assert store.record_event(P, SRC, "proposal.accepted", "evt-1", {"a": 1}) is True
    assert store.record_event(P, SRC, "proposal.accepted", "evt-1", {"a": 2}) is False

    assert store.seen_event(P, SRC, "evt-1")
    event = store.get_event(P, SRC, "evt-1")
    assert event is not None
    assert event.payload == {"a": 1}  # the first delivery wins
    assert event.received_at == clock.start
    assert event.handled_at is None


def test_the_practices_to_sweep_are_those_with_an_event_pending_or_a_retry_due(
    store: StateStore, clock: FakeClock
) -> None:
    store.record_event(P, SRC, "proposal.accepted", "evt-1", {"a": 1})  # pending
    store.record_event(Q, SRC, "proposal.accepted", "evt-2", {"a": 2})
    store.mark_event_handled(Q, SRC, "evt-2")  # handled: nothing to sweep
    cause = {"kind": "server"}
    for practice, next_at in (
        ("practice-c", clock.start),
        ("practice-d", clock.start + timedelta(hours=1)),  # not due yet
        ("practice-e", None),  # no attempt scheduled
    ):
        run_id, _ = store.start_run(practice, "r", f"ev-{practice}")
        store.save_run_retry(run_id, practice, "r", 1, next_at, cause)

    assert store.practices_to_sweep() == {P, "practice-c"}


def test_a_replayed_signature_under_a_new_id_is_a_duplicate(store: StateStore) -> None:
    assert store.record_event(P, SRC, "e", "evt-1", {}, signature=SIG1)
    assert store.record_event(P, SRC, "e", "evt-forged", {}, signature=SIG1) is False

    assert store.seen_event(P, SRC, "evt-never", signature=SIG1)
    assert not store.seen_event(P, SRC, "evt-never", signature=SIG2)
    assert not store.seen_event(P, SRC, "evt-never")
    assert store.get_event(P, SRC, "evt-forged") is None


def test_events_without_signature_dedupe_by_id_only(store: StateStore) -> None:
    assert store.record_event(P, SRC, "e", "evt-1", {})
    assert store.record_event(P, SRC, "e", "evt-2", {})
    assert store.record_event(P, SRC, "e", "evt-3", {}, signature=SIG1)
    assert store.record_event(P, SRC, "e", "evt-4", {}, signature=SIG2)


def test_a_batch_is_recorded_with_the_same_dedupe_in_order(
    store: StateStore, clock: FakeClock
) -> None:
    store.record_event(P, SRC, "e", "evt-old", {"n": 0}, signature=SIG2)
    batch = [
        NewEvent(P, SRC, "e", "evt-1", {"n": 1}, SIG1),
        NewEvent(P, SRC, "e", "evt-1", {"n": 2}),  # same id, earlier in the batch
        NewEvent(P, SRC, "e", "evt-2", {"n": 3}, SIG1),  # same signature, earlier
        NewEvent(P, SRC, "e", "evt-3", {"n": 4}, SIG2),  # signature stored before
        NewEvent(Q, SRC, "e", "evt-1", {"n": 5}, SIG1),  # another practice: its own
        NewEvent(P, "other", "e", "evt-1", {"n": 6}),  # another source: its own
        NewEvent(P, SRC, "e", "evt-old", {"n": 7}),  # id stored before
    ]
    assert store.record_events(batch) == [True, False, False, False, True, True, False]

    first = store.get_event(P, SRC, "evt-1")
    assert first is not None
    assert first.payload == {"n": 1}  # the first one wins
    assert first.received_at == clock.start
    assert store.get_event(P, SRC, "evt-2") is None
    assert [e.payload["n"] for e in store.pending_events(P, source=SRC)] == [0, 1]
    assert store.record_events([]) == []


def test_a_batch_with_a_bad_payload_records_nothing(store: StateStore) -> None:
    batch = [NewEvent(P, SRC, "e", "evt-1", {}), NewEvent(P, SRC, "e", "evt-2", {"x": {1, 2}})]
    with pytest.raises(BugError, match="evt-2"):
        store.record_events(batch)
    assert not store.seen_event(P, SRC, "evt-1")


@pytest.mark.parametrize(
    ("practice", "source", "recorded"),
    [
        pytest.param(P, SRC, False, id="same-practice-same-source"),
        pytest.param(Q, SRC, True, id="other-practice"),
        pytest.param(P, "eform_submitted", True, id="other-source"),
    ],
)
def test_dedupe_is_per_practice_and_source(
    store: StateStore, practice: str, source: str, recorded: bool
) -> None:
    store.record_event(P, SRC, "e", "evt-1", {}, signature=SIG1)
    assert store.record_event(practice, source, "e", "evt-1", {}, signature=SIG1) is recorded
    assert store.seen_event(practice, source, "evt-1") is True


def test_pending_events_oldest_first_until_handled(store: StateStore, clock: FakeClock) -> None:
    for number in range(5):
        store.record_event(P, SRC, "e", f"evt-{number}", {"n": number})
        clock.advance(timedelta(seconds=1))
    store.record_event(P, "other", "e", "evt-x", {})
    store.record_event(Q, SRC, "e", "evt-q", {})

    assert [e.event_id for e in store.pending_events(P, 3)] == ["evt-0", "evt-1", "evt-2"]
    assert len(store.pending_events(P)) == 6
    assert [e.event_id for e in store.pending_events(P, source="other")] == ["evt-x"]

    store.mark_event_handled(P, SRC, "evt-0")
    store.mark_event_handled(P, SRC, "evt-2")
    pending = [e.event_id for e in store.pending_events(P, source=SRC)]
    assert pending == ["evt-1", "evt-3", "evt-4"]
    assert store.seen_event(P, SRC, "evt-0")  # handled events still dedupe


def test_mark_event_handled_keeps_the_first_time(store: StateStore, clock: FakeClock) -> None:
    store.record_event(P, SRC, "e", "evt-1", {})
    store.mark_event_handled(P, SRC, "evt-1")
    clock.advance(timedelta(hours=1))
    store.mark_event_handled(P, SRC, "evt-1")
    event = store.get_event(P, SRC, "evt-1")
    assert event is not None
    assert event.handled_at == clock.start


def test_marking_an_unknown_event_is_a_bug(store: StateStore) -> None:
    with pytest.raises(BugError, match="never recorded"):
        store.mark_event_handled(P, SRC, "evt-missing")


def test_purge_forgets_only_old_handled_events(store: StateStore, clock: FakeClock) -> None:
    store.record_event(P, SRC, "e", "old-handled", {}, signature=SIG1)
    store.record_event(P, SRC, "e", "old-pending", {})
    store.mark_event_handled(P, SRC, "old-handled")
    clock.advance(timedelta(days=6))
    store.record_event(P, SRC, "e", "recent-handled", {})
    store.mark_event_handled(P, SRC, "recent-handled")

    assert store.purge_seen() == 0  # nothing is 7 days old yet
    clock.advance(timedelta(days=1, seconds=1))
    assert store.purge_seen() == 1

    assert not store.seen_event(P, SRC, "old-handled", signature=SIG1)
    assert store.seen_event(P, SRC, "old-pending")  # never drop an unhandled event
    assert store.seen_event(P, SRC, "recent-handled")
    assert store.purge_seen(timedelta(0)) == 1


def test_event_payloads_round_trip_as_json(store: StateStore, clock: FakeClock) -> None:
    payload = {"name": "Zoë 東京", "lines": [1, 2.5, None, True], "nested": {"b": {}, "a": []}}
    store.record_event(P, SRC, "e", "evt-1", payload, received_at=clock.start - timedelta(days=1))
    event = store.get_event(P, SRC, "evt-1")
    assert event is not None
    assert event.payload == payload
    assert event.received_at == clock.start - timedelta(days=1)
    assert "Zoë" not in repr(event)  # payloads may carry personal data


def test_a_naive_datetime_is_refused(store: StateStore) -> None:
    with pytest.raises(ConfigError, match="naive"):
        store.record_event(P, SRC, "e", "evt-1", {}, received_at=datetime(2025, 1, 1))


def test_a_payload_that_is_not_json_is_a_bug(store: StateStore, clock: FakeClock) -> None:
    with pytest.raises(BugError, match="not JSON"):
        store.record_event(P, SRC, "e", "evt-1", {"when": clock.start})
    assert not store.seen_event(P, SRC, "evt-1")


# --- cursors -----------------------------------------------------------------------------------


def test_cursor_is_none_before_the_first_poll(store: StateStore) -> None:
    assert store.get_cursor(P, "new_client") is None
    assert store.get_cursor_state(P, "new_client") is None


def test_cursor_boundary_keys_merge_at_the_same_value_and_reset_on_move(
    store: StateStore, clock: FakeClock
) -> None:
    store.set_cursor(P, "new_client", "2025-03-01T09:00:00Z", ["ent-1", "ent-2"])
    store.set_cursor(P, "new_client", "2025-03-01T09:00:00Z", ["ent-3", "ent-2"])
    state = store.get_cursor_state(P, "new_client")
    assert state is not None
    assert state.boundary_keys == {"ent-1", "ent-2", "ent-3"}

    clock.advance(timedelta(minutes=5))
    store.set_cursor(P, "new_client", "2025-03-01T09:04:59Z", ["ent-9"])
    state = store.get_cursor_state(P, "new_client")
    assert state is not None
    assert state.value == "2025-03-01T09:04:59Z"
    assert state.boundary_keys == {"ent-9"}
    assert state.updated_at == clock.start + timedelta(minutes=5)
    assert store.get_cursor(P, "new_client") == "2025-03-01T09:04:59Z"

    store.set_cursor(P, "new_client", "2025-03-01T09:10:00Z")
    state = store.get_cursor_state(P, "new_client")
    assert state is not None
    assert state.boundary_keys == frozenset()


def test_cursors_are_isolated_by_practice_and_trigger(store: StateStore) -> None:
    store.set_cursor(P, "new_client", "a", ["k"])
    store.set_cursor(Q, "new_client", "b")
    store.set_cursor(P, "new_group", "c")
    assert store.get_cursor(P, "new_client") == "a"
    assert store.get_cursor(Q, "new_client") == "b"
    assert store.get_cursor(P, "new_group") == "c"
    state = store.get_cursor_state(Q, "new_client")
    assert state is not None
    assert state.boundary_keys == frozenset()


# --- subscriptions -----------------------------------------------------------------------------


def _subscribe(store: StateStore, practice: str = P, trigger: str = "proposal_accepted", **kw):
    values = {
        "subscription_id": None,
        "event": "proposal.accepted",
        "url": f"https://hooks.example.test/{practice}/{trigger}/tok",
        "secret": SECRET,
        "path_token": f"tok-{practice}-{trigger}",
        "status": "pending",
    }
    values.update(kw)
    return store.save_subscription(practice, trigger, **values)


def test_subscription_lifecycle_pending_in_doubt_active(
    store: StateStore, clock: FakeClock
) -> None:
    saved = _subscribe(store)
    assert saved.status == "pending"
    assert saved.subscription_id is None

    _subscribe(store, status="in_doubt")
    clock.advance(timedelta(seconds=30))
    active = _subscribe(store, subscription_id="sub-123", secret="whsec_new", status="active")

    assert active.status == "active"
    assert active.subscription_id == "sub-123"
    assert active.secret == "whsec_new"
    assert active.created_at == clock.start
    assert active.updated_at == clock.start + timedelta(seconds=30)
    assert store.get_subscription(P, "proposal_accepted") == active


def test_subscription_secret_is_never_in_repr(store: StateStore) -> None:
    saved = _subscribe(store, status="active", subscription_id="sub-1")
    assert saved.secret == SECRET
    assert SECRET not in repr(saved)
    assert SECRET not in repr(store.list_subscriptions())


def test_find_subscription_by_path_token(store: StateStore) -> None:
    _subscribe(store, P)
    _subscribe(store, Q)
    found = store.find_subscription_by_path(f"tok-{Q}-proposal_accepted")
    assert found is not None
    assert found.practice == Q
    assert store.find_subscription_by_path("tok-unknown") is None


def test_list_and_delete_subscriptions(store: StateStore) -> None:
    _subscribe(store, P, "a")
    _subscribe(store, P, "b")
    _subscribe(store, Q, "a")
    assert [(s.practice, s.trigger_key) for s in store.list_subscriptions()] == [
        (P, "a"),
        (P, "b"),
        (Q, "a"),
    ]
    assert [s.trigger_key for s in store.list_subscriptions(Q)] == ["a"]

    assert store.delete_subscription(P, "a") is True
    assert store.delete_subscription(P, "a") is False
    assert store.get_subscription(P, "a") is None
    assert len(store.list_subscriptions()) == 2


def test_subscription_health_is_empty_before_anything_happens(store: StateStore) -> None:
    health = store.subscription_health(P, SRC)
    assert (health.last_delivery_at, health.last_test_delivery_at, health.resubscribes) == (
        None,
        None,
        0,
    )


def test_subscription_health_records_deliveries_tests_and_resubscribes(
    store: StateStore, clock: FakeClock
) -> None:
    webhook = {"source": "webhook", "data": {}}
    store.record_event(P, SRC, "proposal.accepted", "e1", webhook)
    clock.advance(timedelta(seconds=10))
    store.record_event(P, SRC, "proposal.accepted", "e2", webhook)
    clock.advance(timedelta(seconds=10))
    # A polled event, another trigger's and another practice's do not count.
    store.record_event(P, SRC, "proposal.accepted", "e3", {"source": "poll", "data": {}})
    store.record_event(P, "other", "proposal.accepted", "e4", webhook)
    store.record_event(Q, SRC, "proposal.accepted", "e5", webhook)
    store.record_test_delivery(P, SRC)
    store.record_test_delivery(P, SRC, at=clock.start)  # an older time does not win
    _subscribe(store, status="active", subscription_id="sub-1")
    assert store.count_resubscribe(P, SRC) == 1
    store.delete_subscription(P, SRC)  # a re-subscribe deletes the row; health stays
    assert store.count_resubscribe(P, SRC) == 2

    health = store.subscription_health(P, SRC)
    assert health.last_delivery_at == clock.start + timedelta(seconds=10)
    assert health.last_test_delivery_at == clock.start + timedelta(seconds=20)
    assert health.resubscribes == 2
    assert store.subscription_health(Q, SRC).resubscribes == 0
    assert store.subscription_health(Q, SRC).last_test_delivery_at is None


def test_an_unknown_subscription_status_is_refused(store: StateStore) -> None:
    with pytest.raises(BugError, match=r"got 'subscribed'; valid values are \["):
        _subscribe(store, status="subscribed")


def test_a_path_token_belongs_to_one_subscription(store: StateStore) -> None:
    _subscribe(store, P, "a", path_token="shared")
    with pytest.raises(BugError) as caught:
        _subscribe(store, P, "b", path_token="shared")
    assert SECRET not in str(caught.value)
    assert store.get_subscription(P, "b") is None


# --- rate budget bookkeeping -------------------------------------------------------------------


def test_request_counts_since_a_time_per_practice(store: StateStore, clock: FakeClock) -> None:
    for _ in range(3):
        store.record_request(P)
        clock.advance(timedelta(minutes=1))
    store.record_request(P, at=clock.start - timedelta(hours=2))
    store.record_request(Q)

    assert store.request_counts(P, clock.start) == 3
    assert store.request_counts(P, clock.start + timedelta(minutes=1)) == 2
    assert store.request_counts(P, clock.start - timedelta(days=1)) == 4
    assert store.request_counts(Q, clock.start) == 1
    assert store.request_counts("nobody", clock.start) == 0


def test_requests_counted_together_go_in_one_call(store: StateStore, clock: FakeClock) -> None:
    times = [clock.start + timedelta(seconds=n) for n in range(5)]
    store.record_requests(P, times)
    store.record_requests(P, [])  # nothing to write: no error

    assert store.request_counts(P, clock.start) == 5
    assert store.request_counts(P, clock.start + timedelta(seconds=3)) == 2
    assert store.request_counts(Q, clock.start) == 0


def test_purge_requests_forgets_old_records(store: StateStore, clock: FakeClock) -> None:
    store.record_request(P, at=clock.start - timedelta(days=3))
    store.record_request(P)
    assert store.purge_requests() == 1
    assert store.request_counts(P, clock.start - timedelta(days=10)) == 1


# --- lifetime ----------------------------------------------------------------------------------


def test_everything_survives_close_and_reopen(
    store: StateStore,
    open_store_again: Callable[[], StateStore],
    clock: FakeClock,
) -> None:
    store.record_event(P, SRC, "e", "evt-1", {"a": 1}, signature=SIG1)
    store.set_cursor(P, "t", "v", ["k"])
    _subscribe(store, status="active", subscription_id="sub-1")
    store.record_request(P)
    run_id, _ = store.start_run(P, "recipe", "evt-1")
    store.step_pending(run_id, "bill", {"method": "POST"})
    store.step_sent(run_id, "bill")
    store.close()

    again = open_store_again()
    assert not again.record_event(P, SRC, "e", "evt-2", {}, signature=SIG1)
    state = again.get_cursor_state(P, "t")
    assert state is not None
    assert (state.value, state.boundary_keys) == ("v", {"k"})
    sub = again.get_subscription(P, "proposal_accepted")
    assert sub is not None
    assert sub.secret == SECRET
    assert again.request_counts(P, clock.start) == 1
    assert again.start_run(P, "recipe", "evt-1") == (run_id, False)
    step = again.get_step(run_id, "bill")
    assert step is not None
    assert step.status == "sent"


def test_a_closed_store_refuses_use(store: StateStore) -> None:
    store.close()
    with pytest.raises(BugError, match="closed"):
        store.get_cursor(P, "t")


def test_a_store_is_a_context_manager(open_store_again: Callable[[], StateStore]) -> None:
    with open_store_again() as store:
        store.record_request(P)
    with pytest.raises(BugError):
        store.record_request(P)


def test_store_clock_defaults_to_utc_now(tmp_path) -> None:
    from practiceflow.state import open_store

    with open_store(str(tmp_path / "s.db")) as store:
        before = datetime.now(UTC)
        store.record_event(P, SRC, "e", "evt-1", {})
        event = store.get_event(P, SRC, "evt-1")
        assert event is not None
        assert before <= event.received_at <= datetime.now(UTC)
