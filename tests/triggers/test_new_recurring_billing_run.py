"""The new_recurring_billing_run trigger module: one schedule's runs, new ones fire."""

from __future__ import annotations

import pytest
from trigger_helpers import check_error_statuses, check_loads, poller, run_polls

from practiceflow.errors import TemplateError

KEY = "new_recurring_billing_run"
PATH = "/api/v1/recurring-billing/7001/runs"
OPTIONS = {"recurringBillingId": 7001}
PAGE = {"pageNumber": "1"}
NEXT = {"pageNumber": "2"}  # the page size is not known: a full page asks for the next


def test_module_loads_as_poll_only():
    check_loads(KEY, webhook=False, poll=True)


@pytest.mark.parametrize(
    ("second", "expected"),
    [
        ([{"runId": 1}, {"runId": 2}], ["run:7001:2"]),
        ([{"runId": 1}, {"id": 9}], ["run:7001:9"]),
        ([{"runId": 1}, {"note": "no id"}], []),
    ],
)
def test_new_runs_fire_once(store, second, expected):
    pages = [
        (PAGE, [{"runId": 1}]),
        (NEXT, []),
        (PAGE, second),
        (NEXT, []),
        (PAGE, second),
        (NEXT, []),
    ]
    found = run_polls(store, KEY, PATH, pages, options=OPTIONS, polls=3)
    assert found == [[], expected, []]


def test_the_schedule_id_is_required(store):
    with pytest.raises(TemplateError):
        poller(store, KEY, {}).poll_once()


def test_error_statuses_of_the_list_raise_and_move_nothing(store):
    check_error_statuses(store, KEY, PATH, OPTIONS)
