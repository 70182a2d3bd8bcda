"""Bills, onboarding, eForms and proposals: the rules of spec sections 2.4, 3 and 4.1."""

from __future__ import annotations

import pytest

from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

KEY = "11111111-1111-4111-8111-111111111111"


def _first(api, status: str) -> dict:
    for number in (1, 2, 3):
        for row in api.get("/api/v1/entities", params={"pageNumber": number}).json():
            if row["status"] == status:
                return row
    raise AssertionError(f"no {status} entity")


def _bill(key: str, *lines: dict) -> dict:
    return {
        "entityKey": key,
        "billDate": "2025-03-01",
        "dueDate": "2025-03-31",
        "billDetails": "Work",
        "sendBill": True,
        "syncNow": True,
        "lineItems": list(lines),
    }


# ---- bills ---------------------------------------------------------------------------


def test_bill_totals_are_computed_from_lines_and_adhoc_has_no_ledger_numbers(sandbox, api) -> None:
    client = _first(api, "Active")
    response = api.post(
        "/api/v1/bills",
        _bill(
            client["entityKey"],
            {"amount": 100, "taxPercent": 10, "narration": "Fee"},
            {"amount": 50, "taxAmount": 2.5},
        ),
    )
    assert response.status_code == 201
    bill = response.json()
    assert (bill["billAmount"], bill["billTax"], bill["billTotal"]) == (150, 12.5, 162.5)
    assert [line["billTax"] for line in bill["lineItems"]] == [10, 2.5]
    assert bill["externalID"] is None
    assert bill["externalNumber"] is None
    assert bill["externalURL"] is None
    assert bill["sendBill"] is True
    assert bill["syncNow"] is True
    assert api.get(f"/api/v1/bills/{bill['billingID']}").json() == bill
    stored = sandbox.admin("GET", "/_admin/records/bills")
    assert any(row["billingID"] == bill["billingID"] for row in stored)


def test_generated_bills_of_recurring_runs_carry_ledger_numbers(api) -> None:
    schedules = api.get("/api/v1/recurring-billing/list").json()["items"]
    assert schedules
    assert "externalNumber" not in schedules[0]
    runs = api.get(f"/api/v1/recurring-billing/{schedules[0]['recurringBillingID']}/runs").json()
    bill = api.get(f"/api/v1/bills/{runs[0]['billingID']}").json()
    assert bill["externalID"]
    assert bill["externalNumber"]
    assert bill["externalURL"]


@pytest.mark.parametrize(
    "line",
    [{"taxPercent": 10}, {"amount": 100}, {"amount": "ten", "taxPercent": 10}],
    ids=["no amount", "no tax", "amount not a number"],
)
def test_bill_line_needs_amount_and_tax_amount_or_percent(api, line) -> None:
    client = _first(api, "Active")
    response = api.post("/api/v1/bills", _bill(client["entityKey"], line))
    assert response.status_code == 400
    assert "lineItems" in response.json()["message"]


def test_bill_for_unknown_entity_is_404_and_for_a_lead_is_400(sandbox, api) -> None:
    assert api.post("/api/v1/bills", _bill(KEY, {"amount": 1, "taxPercent": 0})).status_code == 404
    lead = _first(api, "Lead")
    response = api.post("/api/v1/bills", _bill(lead["entityKey"], {"amount": 1, "taxPercent": 0}))
    assert response.status_code == 400
    assert "Lead" in response.json()["message"]
    bills = sandbox.admin("GET", "/_admin/records/bills")
    assert not any(row["entityKey"] == lead["entityKey"] for row in bills)


@pytest.mark.parametrize(
    ("line", "status"),
    [
        ({"amount": 100, "taxPercent": 10}, 400),  # no account or item
        ({"amount": 100, "taxPercent": 10, "extAccountID": 200}, 201),
        ({"amount": 100, "taxPercent": 10.02, "extItemID": 7}, 201),  # within tolerance
        ({"amount": 100, "taxPercent": 9.97, "extAccountID": 200}, 400),  # outside tolerance
        ({"amount": 100, "taxPercent": 12.5, "extAccountID": 200}, 400),  # no such rate
        ({"amount": 100, "taxAmount": 10, "extAccountID": 200}, 400),  # needs taxID or percent
        ({"amount": 100, "taxAmount": 10, "extAccountID": 200, "extTaxID": 300}, 201),
        ({"amount": 100, "extAccountID": 200, "extTaxID": 300}, 400),  # spec 2.4: needs a tax
        ({"amount": 100, "taxPercent": 10, "extAccountID": 200, "extTaxID": 999}, 400),
    ],
)
def test_connected_ledger_rules(sandbox: SandboxHandle, api, line, status) -> None:
    sandbox.admin("POST", "/_admin/config", {"ledgerConnected": True})
    assert api.get("/api/v1/bills/ledger/status").json()["connected"] is True
    rates = {row["rate"] for row in api.get("/api/v1/bills/ledger/tax-rates").json()}
    assert 10.0 in rates
    response = api.post("/api/v1/bills", _bill(_first(api, "Active")["entityKey"], line))
    assert response.status_code == status, response.text


def test_bills_list_by_bill_date_range(api) -> None:
    everything = api.get("/api/v1/bills/list", params={"pageSize": 100}).json()["items"]
    dates = sorted(row["billDate"] for row in everything)
    start, end = dates[10], dates[20]
    window = api.get(
        "/api/v1/bills/list", params={"startDate": start, "endDate": end, "pageSize": 100}
    ).json()["items"]
    assert window
    assert all(start <= row["billDate"] <= end for row in window)
    assert api.get("/api/v1/bills/list", params={"startDate": "soon"}).status_code == 400
    pdf = api.get(f"/api/v1/bills/{everything[0]['billingID']}/pdf")
    assert pdf.headers["Content-Type"] == "application/pdf"
    assert pdf.content.startswith(b"%PDF")
    assert api.get("/api/v1/bills/999999999").status_code == 404


# ---- onboarding ----------------------------------------------------------------------


def _onboarding(api, send: bool, key: str) -> object:
    return api.post(
        "/api/v1/onboardings/create",
        {
            "sendToRecipient": send,
            "recipient": {"name": "Sam", "email": "sam@example.com"},
            "clients": [{"entityKey": key}, {"entityType": "CO", "entityName": "Quick Pty"}],
        },
    )


def test_onboarding_sent_when_wallet_suffices_and_draft_when_not_sending(sandbox, api) -> None:
    key = _first(api, "Active")["entityKey"]
    sent = _onboarding(api, True, key)
    assert sent.status_code == 201
    assert sent.json()["status"] == "Sent"
    assert sandbox.admin("GET", "/_admin/config")["walletBalance"] == 995.0
    draft = _onboarding(api, False, key)
    assert draft.json()["status"] == "Draft"
    documents = api.get(f"/api/v1/onboardings/{draft.json()['onboardingKey']}/documents").json()
    assert len(documents) == 2
    assert {"isUploaded", "isBypassed"} <= set(documents[0]["documents"][0])


def test_onboarding_with_insufficient_wallet_is_400_and_creates_nothing(sandbox, api) -> None:
    sandbox.admin("POST", "/_admin/config", {"walletBalance": 1})
    before_jobs = len(sandbox.admin("GET", "/_admin/records/onboardings"))
    before_entities = len(sandbox.state.practice("anz").entities)
    response = _onboarding(api, True, _first(api, "Active")["entityKey"])
    assert response.status_code == 400
    assert "wallet" in response.json()["message"].lower()
    assert len(sandbox.admin("GET", "/_admin/records/onboardings")) == before_jobs
    assert len(sandbox.state.practice("anz").entities) == before_entities
    assert _onboarding(api, False, _first(api, "Active")["entityKey"]).status_code == 201


def test_completing_an_onboarding_marks_documents_uploaded(sandbox, api) -> None:
    job = _onboarding(api, True, _first(api, "Active")["entityKey"]).json()
    sandbox.admin("POST", f"/_admin/onboardings/{job['onboardingKey']}/complete")
    rows = api.get(f"/api/v1/onboardings/{job['onboardingKey']}/documents").json()
    assert all(doc["isUploaded"] for row in rows for doc in row["documents"])
    row = rows[0]
    url = api.get(
        f"/api/v1/onboardings/{job['onboardingKey']}/entities/"
        f"{row['entityOnboardingId']}/documents/{row['documents'][0]['documentId']}"
    )
    assert url.status_code == 200
    assert url.json()["url"].startswith("https://")
    archive = api.get(
        f"/api/v1/onboardings/{job['onboardingKey']}/entities/"
        f"{row['entityOnboardingId']}/documents/zip"
    )
    assert archive.content.startswith(b"PK")


# ---- eForms --------------------------------------------------------------------------


def test_eform_send_to_a_stored_client_returns_entity_key(api) -> None:
    key = _first(api, "Active")["entityKey"]
    template = api.get("/api/v1/eforms/templates").json()["items"][0]["formTemplateId"]
    form = api.post("/api/v1/eforms/send", {"templateId": template, "entityKey": key}).json()
    assert form["sent"] is True
    assert form["emailSent"] is True
    assert form["entityKey"] == key
    assert form["formKey"]
    assert form["accessUrl"]


def test_eform_to_ad_hoc_recipient_omits_entity_key_and_mute_skips_email(api) -> None:
    body = {"templateId": 101, "recipient": {"name": "Al", "email": "al@example.com"}, "mute": True}
    form = api.post("/api/v1/eforms/send", body).json()
    assert "entityKey" not in form
    assert form["emailSent"] is False
    assert form["sent"] is True
    assert form["accessUrl"]


def test_eform_email_failure_leaves_a_draft_and_still_returns_form_key(sandbox, api) -> None:
    sandbox.admin("POST", "/_admin/config", {"eformEmailFails": True})
    form = api.post(
        "/api/v1/eforms/send", {"templateId": 101, "entityKey": _first(api, "Active")["entityKey"]}
    ).json()
    assert form["sent"] is False
    assert form["emailSent"] is False
    assert form["formKey"]
    stored = sandbox.admin("GET", "/_admin/records/eforms")
    assert next(f for f in stored if f["formKey"] == form["formKey"])["status"] == "Draft"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"templateId": 1, "entityKey": KEY}, 400),
        ({"templateId": 101}, 400),
        ({"templateId": 101, "entityKey": KEY}, 404),
    ],
)
def test_eform_send_errors(api, body, status) -> None:
    assert api.post("/api/v1/eforms/send", body).status_code == status


# ---- proposals -----------------------------------------------------------------------


def _stored_proposals(sandbox) -> list[dict]:
    """Every proposal of the anz practice (the API lists them one client at a time)."""
    return sandbox.admin("GET", "/_admin/records/proposals")


def test_renew_marks_original_renewed_and_creates_a_draft_copy(sandbox, api) -> None:
    original = _stored_proposals(sandbox)[1]
    response = api.post(f"/api/v1/proposals/{original['proposalKey']}/renew")
    assert response.status_code == 201
    copy = response.json()
    assert copy["status"] == "Draft"
    assert copy["proposalKey"] != original["proposalKey"]
    assert copy["services"] == original["services"]
    assert copy["billings"] == original["billings"]
    assert api.get(f"/api/v1/proposals/{original['proposalKey']}").json()["status"] == "Renewed"


def test_duplicate_leaves_the_original_unchanged(sandbox, api) -> None:
    original = _stored_proposals(sandbox)[2]
    copy = api.post(f"/api/v1/proposals/{original['proposalKey']}/duplicate").json()
    assert copy["status"] == "Draft"
    assert copy["proposalKey"] != original["proposalKey"]
    assert api.get(f"/api/v1/proposals/{original['proposalKey']}").json() == original
    assert api.post(f"/api/v1/proposals/{KEY}/duplicate").status_code == 404


def test_proposals_of_a_client_and_creation(sandbox, api) -> None:
    first = _stored_proposals(sandbox)[0]
    mine = api.get("/api/v1/proposals/list", params={"entityKey": first["entityKey"]}).json()
    assert first in mine["items"]
    assert all(row["entityKey"] == first["entityKey"] for row in mine["items"])
    created = api.post(
        "/api/v1/proposals", {"entityKey": first["entityKey"], "services": [{"serviceID": 400}]}
    )
    assert created.status_code == 201
    assert created.json()["status"] == "Draft"
    templated = api.post(
        "/api/v1/proposals/from-template", {"entityKey": first["entityKey"], "templateId": 901}
    )
    assert templated.status_code == 201
    assert api.get(f"/api/v1/proposals/{first['proposalKey']}/pricing").json()["services"]
    assert api.get(f"/api/v1/proposals/{first['proposalKey']}/renew-preview").status_code == 200
    assert api.get("/api/v1/proposals/services").json()
