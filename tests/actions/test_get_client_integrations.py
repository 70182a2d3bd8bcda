"""get_client_integrations: GET /api/v1/entities/{key}/integrations (spec 2.2)."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "get_client_integrations"
ENTITY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = f"/api/v1/entities/{ENTITY}/integrations"
IDS = {
    "entityKey": ENTITY,
    "entityName": "Acme Pty Ltd",
    "xpmClientID": "9981",
    "fyiClientID": None,
    "bglSmsfFirm": None,
}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"entityKey": "not-a-key"}, "entityKey", "got 'not-a-key'; expected a UUID"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_reads_the_integration_ids(kit):
    kit.api.get(kit.url(PATH), json=IDS, match=[matchers.header_matcher(kit.auth)])
    result = kit.run(KEY, {"entityKey": ENTITY})
    assert result.output == IDS
    kit.fits(KEY, result)


def test_a_field_the_spec_forbids_is_reported(kit):
    kit.api.get(kit.url(PATH), json={**IDS, "surprise": "x"})
    result = kit.run(KEY, {"entityKey": ENTITY})
    assert any("surprise" in warning for warning in result.warnings)


@pytest.mark.integration
def test_against_the_sandbox(live):
    first = run_action("find_clients", {"limit": 1}, live).output["items"][0]
    result = run_action(KEY, {"entityKey": first["entityKey"]}, live)
    assert result.output["entityKey"] == first["entityKey"]
    assert result.warnings == []
