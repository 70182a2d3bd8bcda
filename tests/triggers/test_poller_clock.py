"""The API's clock going back: a refused cursor is stepped back, nothing is lost or repeated."""

from __future__ import annotations

import pytest
import responses
from trigger_helpers import BASE, entity, poller, run_polls

from practiceflow.errors import ValidationError

KEY = "new_client"
PATH = "/api/v1/entities/list"
T0 = "2025-01-01T10:00:00.250Z"
BEHIND = "2025-01-01T09:58:30.000Z"  # stamped after the clock went back: before the cursor
BASELINE = [  # three rows: the page size the poller learns, so shorter pages end a read
    entity("a", "Active", "2024-12-01T00:00:00.000Z"),
    entity("c", "Active", "2024-12-02T00:00:00.000Z"),
    entity("l", "Lead", T0),
]
REFUSED = {"status": 400, "title": "Bad Request", "message": "lastUpdated is in the future"}


def test_a_refused_cursor_is_stepped_back_and_the_record_stamped_meanwhile_fires_once(store):
    after_clock_went_back = [entity("b", "Active", BEHIND), entity("l", "Lead", T0)]
    pages = [
        ({"pageNumber": "1"}, BASELINE),
        ({"pageNumber": "2"}, []),
        # poll 2: the cursor, then one and two minutes before it, are refused; four is read
        ({"lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "1"}, REFUSED),
        ({"lastUpdated": "2025-01-01T09:59:00Z", "pageNumber": "1"}, REFUSED),
        ({"lastUpdated": "2025-01-01T09:58:00Z", "pageNumber": "1"}, after_clock_went_back),
    ]
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mocked:
        for query, body in pages:
            status = 400 if body is REFUSED else 200
            mocked.add(
                responses.GET,
                BASE + PATH,
                json=body,
                status=status,
                match=[responses.matchers.query_param_matcher(query)],
            )
        watcher = poller(store, KEY)
        assert watcher.poll_once().events == []  # the baseline
        fired = [event.id for event in watcher.poll_once().events]
        # the same read again (the clock still behind): the store's seen ids hold it
        again = [event.id for event in watcher.poll_once().events]
    assert fired == ["client:b"]
    assert again == []


def test_a_cursor_refused_at_every_earlier_time_is_an_error_and_moves_nothing(store):
    run_polls(
        store, KEY, PATH, [({"pageNumber": "1"}, BASELINE), ({"pageNumber": "2"}, [])], polls=1
    )
    before = store.get_cursor_state("p", KEY)
    with responses.RequestsMock() as mocked:
        mocked.add(responses.GET, BASE + PATH, json=REFUSED, status=400)
        with pytest.raises(ValidationError, match="in the future"):
            poller(store, KEY).poll_once()
        assert len(mocked.calls) == 13  # the cursor, then 12 earlier times (~2 days back)
    assert store.get_cursor_state("p", KEY) == before
    assert store.pending_events("p") == []
