"""list_entity_types: GET /api/v1/settings/entity-types, any list envelope."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "list_entity_types"
PATH = "/api/v1/settings/entity-types"
ROWS = [{"entityTypeID": 1, "name": "Individual"}, {"entityTypeID": 2, "name": "Company"}]


def test_extra_input_is_refused_and_nothing_sent(kit):
    kit.bad_input(KEY, {"country": "AU"}, "", "'country' is not allowed here")


@pytest.mark.parametrize(
    "body", [ROWS, {"items": ROWS}, {"data": ROWS, "total": 2}], ids=["bare", "items", "data"]
)
def test_rows_are_read_from_any_list_envelope(kit, body):
    kit.api.get(
        kit.url(PATH),
        json=body,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, {})
    assert result.output == {"items": ROWS, "count": 2, "hasMore": False}
    kit.fits(KEY, result)


@pytest.mark.integration
def test_against_the_sandbox(live):
    result = run_action(KEY, {}, live)
    assert result.output["count"] >= 1
    assert result.warnings == []
