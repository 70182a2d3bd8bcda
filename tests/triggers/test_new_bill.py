"""The new_bill trigger module: a bill-date window, new billing ids fire once."""

from __future__ import annotations

from datetime import date

import pytest
from trigger_helpers import check_error_statuses, check_loads, run_polls

KEY = "new_bill"
PATH = "/api/v1/bills/list"
WINDOW = {"startDate": "2025-01-24", "endDate": "2025-02-01", "pageNumber": "1", "pageSize": "100"}


def bill(billing_id, bill_date="2025-01-30"):
    return {"billingID": billing_id, "billDate": bill_date, "billTotal": 10.0}


def test_module_loads_as_poll_only():
    check_loads(KEY, webhook=False, poll=True)


@pytest.mark.parametrize(
    ("second", "expected"),
    [
        ([bill(1), bill(2)], ["bill:2"]),
        ([bill(1)], []),
        ([bill(1), {"billDate": "2025-01-30"}], []),  # no billingID: left out
    ],
)
def test_window_is_rendered_and_new_ids_fire_once(store, second, expected):
    pages = [(WINDOW, [bill(1)]), (WINDOW, second), (WINDOW, second)]
    found = run_polls(store, KEY, PATH, pages, polls=3, today=lambda: date(2025, 1, 31))
    assert found == [[], expected, []]


def test_error_statuses_of_the_list_raise_and_move_nothing(store):
    check_error_statuses(store, KEY, PATH)
