"""The poll triggers on the entities list (new_client, new_lead, updated_client,
lead_converted), step by step: load, first poll, changes, dedupe, errors; one table."""

from __future__ import annotations

import pytest
from trigger_helpers import check_error_statuses, check_loads, entity, run_polls

KEYS = ["new_client", "new_lead", "updated_client", "lead_converted"]
PATH = "/api/v1/entities/list"
T0 = "2025-01-01T10:00:00.250Z"
T1 = "2025-01-01T10:00:05.500Z"
BASELINE = [
    entity("a", "Active", "2024-12-01T00:00:00.000Z"),
    entity("l", "Lead", T0),
]


@pytest.mark.parametrize("key", KEYS)
def test_module_loads_as_poll_only(key):
    check_loads(key, webhook=False, poll=True)


@pytest.mark.parametrize(
    ("key", "changes", "expected"),
    [
        pytest.param(
            "new_client",
            [entity("l", "Lead", T0), entity("n", "Active", T1)],
            ["client:n"],
            id="new_client",
        ),
        pytest.param(
            "new_client", [entity("l", "Lead", T0), entity("a", "Active", T1)], [], id="new_client"
        ),
        pytest.param(
            "new_client", [entity("l", "Lead", T0), entity("q", "Lead", T1)], [], id="new_client"
        ),
        pytest.param(
            "new_lead",
            [entity("l", "Lead", T0), entity("q", "Lead", T1)],
            ["lead:q"],
            id="new_lead",
        ),
        pytest.param(
            "new_lead", [entity("l", "Lead", T0), entity("l", "Lead", T1)], [], id="new_lead"
        ),
        pytest.param(
            "new_lead", [entity("l", "Lead", T0), entity("n", "Active", T1)], [], id="new_lead"
        ),
        pytest.param(
            "updated_client",
            [entity("l", "Lead", T0), entity("a", "Active", T1)],
            [f"a@{T1}"],
            id="updated_client",
        ),
        pytest.param(
            "updated_client",
            [entity("l", "Lead", T0), entity("n", "Active", T1)],
            [],
            id="updated_client",
        ),
        pytest.param(
            "updated_client",
            [entity("l", "Lead", T0), entity("l", "Active", T1)],
            [f"l@{T1}"],
            id="updated_client",
        ),
        pytest.param(
            "lead_converted",
            [entity("l", "Lead", T0), entity("l", "Active", T1)],
            ["converted:l"],
            id="lead_converted",
        ),
        pytest.param(
            "lead_converted",
            [entity("l", "Lead", T0), entity("a", "Active", T1)],
            [],
            id="lead_converted",
        ),
        pytest.param(
            "lead_converted",
            [entity("l", "Lead", T0), entity("n", "Active", T1)],
            [],
            id="lead_converted",
        ),
    ],
)
def test_rows_become_events_once(store, key, changes, expected):
    pages = [
        ({"pageNumber": "1"}, BASELINE),
        ({"pageNumber": "2"}, []),
        ({"lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "1"}, changes),
        # one ordered page proves no order: page 2 is read, not a restart from T1
        ({"lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "2"}, []),
        ({"lastUpdated": "2025-01-01T10:00:05Z", "pageNumber": "1"}, changes[-1:]),
    ]
    baseline, first, again = run_polls(store, key, PATH, pages, polls=3)
    assert baseline == []
    assert first == expected
    assert again == []  # the boundary row comes back at the cursor second: no repeat


@pytest.mark.parametrize("key", KEYS)
def test_nothing_changed_is_one_request(store, key):
    pages = [
        ({"pageNumber": "1"}, BASELINE),
        ({"pageNumber": "2"}, []),
        ({"lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "1"}, [BASELINE[1]]),
    ]
    assert run_polls(store, key, PATH, pages) == [[], []]
    state = store.get_cursor_state("p", key)
    assert state is not None
    assert state.value == T0


@pytest.mark.parametrize("key", KEYS)
def test_error_statuses_of_the_list_raise_and_move_nothing(store, key):
    check_error_statuses(store, key, PATH)
