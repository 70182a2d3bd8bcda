"""list_onboarding_documents: GET /api/v1/onboardings/{key}/documents (spec 2.7)."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "list_onboarding_documents"
JOB = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
PATH = f"/api/v1/onboardings/{JOB}/documents"
ROWS = [
    {
        "entityOnboardingId": 1,
        "documents": [{"documentId": 2, "isUploaded": True, "isBypassed": False}],
    }
]


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"onboardingKey": "abc"}, "onboardingKey", "got 'abc'; expected a UUID"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


@pytest.mark.parametrize("body", [ROWS, {"clients": ROWS}], ids=["bare-list", "envelope"])
def test_reads_the_requirements(kit, body):
    kit.api.get(
        kit.url(PATH),
        json=body,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, {"onboardingKey": JOB})
    assert result.output == {"items": ROWS, "count": 1, "hasMore": False}
    kit.fits(KEY, result)


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    job = sandbox.admin("GET", "/_admin/records/onboardings")[0]
    result = run_action(KEY, {"onboardingKey": job["onboardingKey"]}, live).output
    assert result["count"] == len(job["clients"])
    for row in result["items"]:
        for document in row["documents"]:
            assert isinstance(document["isUploaded"], bool)
            assert isinstance(document["isBypassed"], bool)
