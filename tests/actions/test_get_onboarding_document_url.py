"""get_onboarding_document_url: GET /api/v1/onboardings/{key}/entities/{id}/documents/{id}."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "get_onboarding_document_url"
JOB = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
INPUT = {"onboardingKey": JOB, "entityOnboardingId": 4411, "documentId": 8801}
PATH = f"/api/v1/onboardings/{JOB}/entities/4411/documents/8801"


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({**INPUT, "onboardingKey": "job-1"}, "onboardingKey", "got 'job-1'; expected a UUID"),
        (
            {"onboardingKey": JOB, "entityOnboardingId": 4411},
            "documentId",
            "required field is missing",
        ),
        ({**INPUT, "documentId": [1]}, "documentId", "got a list"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"url": "https://f.example/1?sig=a", "expiresAt": "2024-05-01T09:35:00Z"},
            {"url": "https://f.example/1?sig=a", "expiresAt": "2024-05-01T09:35:00Z"},
        ),
        ("https://f.example/1?sig=a", {"url": "https://f.example/1?sig=a"}),
    ],
    ids=["object", "bare-url"],
)
def test_the_signed_url_is_returned_whatever_the_shape(kit, body, expected):
    kit.api.get(
        kit.url(PATH),
        json=body,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, INPUT)
    assert result.output == expected
    kit.fits(KEY, result)


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    job = sandbox.admin("GET", "/_admin/records/onboardings")[0]
    sandbox.admin("POST", f"/_admin/onboardings/{job['onboardingKey']}/complete")
    rows = run_action("list_onboarding_documents", {"onboardingKey": job["onboardingKey"]}, live)
    row = rows.output["items"][0]
    document = next(doc for doc in row["documents"] if doc["isUploaded"])
    data = {
        "onboardingKey": job["onboardingKey"],
        "entityOnboardingId": row["entityOnboardingId"],
        "documentId": document["documentId"],
    }
    result = run_action(KEY, data, live)
    assert result.output["url"].startswith("https://")
