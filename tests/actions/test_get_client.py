"""get_client: GET /api/v1/entities/{key} (spec 2.1, 4.1): the detail record, passed through."""

from __future__ import annotations

import pytest
from responses import matchers

KEY = "get_client"
ENTITY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = f"/api/v1/entities/{ENTITY}"
DETAIL = {
    "entityKey": ENTITY,
    "entityCode": "ACME01",
    "entityName": "Acme Pty Ltd",
    "status": "Active",
    "physicalAddress": {"address1": "1 George Street", "city": "Sydney"},
    "partner": {"name": "Liam Brown"},
}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"entityKey": "ACME01"}, "entityKey", "got 'ACME01'; expected a UUID"),
        ({"entityKey": 7}, "entityKey", "got 7; expected a string"),
        ({"entityKey": ENTITY, "extra": 1}, "", "'extra' is not a known field"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_loads_the_detail_and_passes_every_field_through(kit):
    kit.api.get(
        kit.url(PATH),
        json=DETAIL,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, {"entityKey": ENTITY})
    assert result.output == DETAIL
    kit.fits(KEY, result)


def test_the_detail_record_is_marked_personal():
    from practiceflow.manifest import default_registry

    assert default_registry().action(KEY).output.schema["x-pii"] is True


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    from practiceflow.engine import run_action

    first = run_action("find_clients", {"limit": 1}, live).output["items"][0]
    result = run_action(KEY, {"entityKey": first["entityKey"]}, live)
    assert result.output["entityKey"] == first["entityKey"]
    assert result.warnings == []
