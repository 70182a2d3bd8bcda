"""The updated_group trigger module, step by step: load, first poll, changes, dedupe, errors."""

from __future__ import annotations

import pytest
from trigger_helpers import check_error_statuses, check_loads, run_polls

KEY = "updated_group"
PATH = "/api/v1/groups/list"
T0 = "2025-01-01T10:00:00.000Z"
T1 = "2025-01-01T10:00:09.000Z"


def group(group_id, updated, **extra):
    return {"groupID": group_id, "groupName": "G", "updatedOn": updated, **extra}


BASELINE = [group(1, "2024-01-01T00:00:00.000Z"), group(2, T0)]


def test_module_loads_as_poll_only():
    check_loads(KEY, webhook=False, poll=True)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ([group(2, T0), group(1, T1)], [f"1@{T1}"]),
        ([group(2, T0), group(3, T1)], []),
    ],
)
def test_rows_become_events_once(store, changes, expected):
    pages = [
        ({"includeMembers": "true", "pageNumber": "1"}, BASELINE),
        ({"includeMembers": "true", "pageNumber": "2"}, []),
        (
            {"includeMembers": "true", "lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "1"},
            changes,
        ),
        # one ordered page proves no order: page 2 is read, not a restart
        (
            {"includeMembers": "true", "lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "2"},
            [],
        ),
        (
            {"includeMembers": "true", "lastUpdated": "2025-01-01T10:00:09Z", "pageNumber": "1"},
            changes[-1:],
        ),
    ]
    options = {"includeMembers": True}
    baseline, first, again = run_polls(store, KEY, PATH, pages, options=options, polls=3)
    assert (baseline, first, again) == ([], expected, [])


def test_options_are_optional_and_nothing_changed_is_one_request(store):
    pages = [
        ({"pageNumber": "1"}, BASELINE),
        ({"pageNumber": "2"}, []),
        ({"lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "1"}, [BASELINE[1]]),
    ]
    assert run_polls(store, KEY, PATH, pages) == [[], []]


def test_error_statuses_of_the_list_raise_and_move_nothing(store):
    check_error_statuses(store, KEY, PATH)
