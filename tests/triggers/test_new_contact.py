"""The new_contact trigger module, step by step, tolerant of the unshown list shape."""

from __future__ import annotations

import pytest
from trigger_helpers import check_error_statuses, check_loads, run_polls

KEY = "new_contact"
PATH = "/api/v1/contacts/list"
T0 = "2025-01-01T10:00:00.000Z"
T1 = "2025-01-01T10:00:03.000Z"


def test_module_loads_as_poll_only():
    check_loads(KEY, webhook=False, poll=True)


@pytest.mark.parametrize(
    ("envelope", "changes", "expected"),
    [
        # A wrapped page (items + hasMore) and a bare array are both read.
        (True, [{"contactKey": "c2", "lastUpdated": T1}], ["contact:c2"]),
        (False, [{"contactKey": "c2", "lastUpdated": T1}], ["contact:c2"]),
        # Another id field name, and a row with no id at all (left out, not an error).
        (
            False,
            [{"id": 77, "lastUpdated": T1}, {"firstName": "x", "lastUpdated": T1}],
            ["contact:77"],
        ),
        # A contact already known does not fire again.
        (False, [{"contactKey": "c1", "lastUpdated": T1}], []),
    ],
)
def test_rows_become_events_once(store, envelope, changes, expected):
    def wrap(rows):
        return {"items": rows, "hasMore": False} if envelope else rows

    pages = [
        ({"pageNumber": "1", "pageSize": "100"}, wrap([{"contactKey": "c1", "lastUpdated": T0}])),
        (
            {"lastUpdated": "2025-01-01T10:00:00Z", "pageNumber": "1", "pageSize": "100"},
            wrap(changes),
        ),
    ]
    assert run_polls(store, KEY, PATH, pages) == [[], expected]


def test_rows_without_a_timestamp_fall_back_to_full_reads(store):
    pages = [
        ({"pageNumber": "1", "pageSize": "100"}, [{"contactKey": "c1"}]),
        ({"pageNumber": "1", "pageSize": "100"}, [{"contactKey": "c1"}, {"contactKey": "c2"}]),
    ]
    assert run_polls(store, KEY, PATH, pages) == [[], ["contact:c2"]]


def test_error_statuses_of_the_list_raise_and_move_nothing(store):
    check_error_statuses(store, KEY, PATH)
