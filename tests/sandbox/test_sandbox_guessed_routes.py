"""The endpoints of spec 4.2 (shapes guessed, see GUESSES.md) answer sensibly."""

from __future__ import annotations

import pytest

from practiceflow.sandbox.routes import ALL_OPS, Op

pytestmark = pytest.mark.integration

PLAIN_GETS = [op for op in ALL_OPS if op.method == "GET" and "{" not in op.path]
#: A value of each required query parameter (the route's own rules are tested elsewhere).
REQUIRED_VALUES = {"entityKey": "00000000-0000-4000-8000-000000000000"}


@pytest.mark.parametrize("op", PLAIN_GETS, ids=[op.path for op in PLAIN_GETS])
def test_every_plain_read_route_answers_200(api, op: Op) -> None:
    params = {param.name: REQUIRED_VALUES[param.name] for param in op.query if param.required}
    response = api.get(op.path, params=params)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("application/json")


def test_every_guessed_operation_is_marked_in_the_route_table() -> None:
    guessed = {op.path for op in ALL_OPS if op.guess}
    assert "/api/v1/settings/entity-types" in guessed
    assert "/api/v1/entities" not in guessed


def test_identity_verification_aml_and_certificate(api) -> None:
    key = api.get("/api/v1/entities").json()[0]["entityKey"]
    assert api.get(f"/api/v1/id-verifications/entities/{key}/certificate").status_code == 404
    sent = api.post("/api/v1/id-verifications/send", {"entityKey": key, "includeAml": True})
    assert sent.status_code == 201
    assert sent.json()["includeAml"] is True
    aml = api.post("/api/v1/id-verifications/aml-checks", {"entityKey": key, "level": "extensive"})
    assert aml.status_code == 201
    bad = api.post("/api/v1/id-verifications/aml-checks", {"entityKey": key, "level": "deep"})
    assert bad.status_code == 400
    pdf = api.get(f"/api/v1/id-verifications/entities/{key}/certificate")
    assert pdf.content.startswith(b"%PDF")


def test_lead_notes_and_wrong_method(api) -> None:
    lead = api.get("/api/v1/leads").json()["items"][0]["entityKey"]
    assert api.post(f"/api/v1/leads/{lead}/notes", {"note": "Called"}).status_code == 201
    assert [n["note"] for n in api.get(f"/api/v1/leads/{lead}/notes").json()] == ["Called"]
    wrong = api.request("PATCH", "/api/v1/entities")
    assert wrong.status_code == 405
    assert wrong.json()["title"] == "Method Not Allowed"
