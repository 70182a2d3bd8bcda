"""The updated_client trigger module, step by step: load, first poll, changes, dedupe, errors."""

from __future__ import annotations

import pytest
from trigger_helpers import check_error_statuses, check_loads, entity, run_polls

KEY = "updated_client"
PATH = "/api/v1/entities/list"
T0 = "2025-01-01T10:00:00.250Z"
T1 = "2025-01-01T10:00:05.500Z"
BASELINE = [
    entity("a", "Active", "2024-12-01T00:00:00.000Z"),
    entity("l", "Lead", T0),
]


def test_module_loads_as_poll_only():
    check_loads(KEY, webhook=False, poll=True)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ([entity("l", "Lead", T0), entity("a", "Active", T1)], [f"a@{T1}"]),
        ([entity("l", "Lead", T0), entity("n", "Active", T1)], []),
        ([entity("l", "Lead", T0), entity("l", "Active", T1)], [f"l@{T1}"]),
    ],
)
def test_rows_become_events_once(store, changes, expected):
    pages = [
        ({"pageNumber": "1"}, BASELINE),
        ({"pageNumber": "2"}, []),
        ({"lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "1"}, changes),
        # one ordered page proves no order: page 2 is read, not a restart from T1
        ({"lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "2"}, []),
        ({"lastUpdated": "2025-01-01T10:00:05Z", "pageNumber": "1"}, changes[-1:]),
    ]
    baseline, first, again = run_polls(store, KEY, PATH, pages, polls=3)
    assert baseline == []
    assert first == expected
    assert again == []  # the boundary row comes back at the cursor second: no repeat


def test_nothing_changed_is_one_request(store):
    pages = [
        ({"pageNumber": "1"}, BASELINE),
        ({"pageNumber": "2"}, []),
        ({"lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "1"}, [BASELINE[1]]),
    ]
    assert run_polls(store, KEY, PATH, pages) == [[], []]
    state = store.get_cursor_state("p", KEY)
    assert state is not None
    assert state.value == T0


def test_error_statuses_of_the_list_raise_and_move_nothing(store):
    check_error_statuses(store, KEY, PATH)
