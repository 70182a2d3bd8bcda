"""A poll writes its cursor only when the cursor moves: an empty poll leaves it as it was,
with the time it last moved (what the console shows as "moved at")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import responses
from responses import matchers
from trigger_helpers import BASE, entity, poller

from practiceflow.state import SQLiteStore

KEY = "new_client"
PATH = "/api/v1/entities/list"
T0 = "2025-01-01T10:00:00.250Z"
T1 = "2025-01-01T11:00:00.500Z"
SINCE = {"lastUpdated": "2025-01-01T10:00:00Z"}
ROWS = [entity("a", "Active", "2024-12-01T00:00:00.000Z"), entity("l", "Lead", T0)]


def test_an_empty_poll_leaves_the_cursor_and_a_new_row_moves_it(tmp_path: Path) -> None:
    now = [datetime(2025, 1, 1, 12, tzinfo=UTC)]
    # (query, rows): the baseline, two empty polls from the cursor, then one new row.
    pages = [
        ({"pageNumber": "1"}, ROWS),
        ({"pageNumber": "2"}, []),
        ({**SINCE, "pageNumber": "1"}, [ROWS[1]]),
        ({**SINCE, "pageNumber": "1"}, [ROWS[1]]),
        ({**SINCE, "pageNumber": "1"}, [ROWS[1], entity("b", "Active", T1)]),
        ({**SINCE, "pageNumber": "2"}, []),  # the page was full: the next one is asked
    ]  # fmt: skip
    moved = []
    with (
        SQLiteStore(tmp_path / "state.db", clock=lambda: now[0]) as store,
        responses.RequestsMock(assert_all_requests_are_fired=True) as mocked,
    ):
        for query, rows in pages:
            mocked.add(
                responses.GET, BASE + PATH, json=rows, match=[matchers.query_param_matcher(query)]
            )
        watcher = poller(store, KEY)
        for _ in range(4):
            fired = [event.id for event in watcher.poll_once().events]
            state = store.get_cursor_state("p", KEY)
            assert state is not None
            moved.append((fired, state.value, state.updated_at))
            now[0] += timedelta(minutes=1)

    start = datetime(2025, 1, 1, 12, tzinfo=UTC)
    assert moved == [
        ([], T0, start),  # the baseline
        ([], T0, start),  # empty: the cursor stays, with the time it last moved
        ([], T0, start),
        (["client:b"], T1, start + timedelta(minutes=3)),
    ]
