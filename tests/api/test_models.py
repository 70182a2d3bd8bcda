"""Models read the spec's wire names, keep unknown fields, and dump by alias."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any
from uuid import UUID

import pydantic
import pytest

from practiceflow.api import (
    Bill,
    BillLineItemRequest,
    BillRequest,
    CredentialCheck,
    EForm,
    EntityCreateRequest,
    EntityIntegrations,
    EntitySummary,
    Group,
    Lead,
    Onboarding,
    ProblemDetails,
    WebhookSubscribeRequest,
    WebhookSubscription,
)
from practiceflow.api.resource_models import ApiModel

KEY = "3f2b8c1e-6d4a-4e8b-9a51-2c7d0e9f1a23"


@pytest.mark.parametrize(
    ("model", "wire", "attribute", "value"),
    [
        (
            EntitySummary,
            {"entityKey": KEY, "entityTypeID": 3, "lastUpdated": "2026-11-22T10:00:00Z"},
            "entity_type_id",
            3,
        ),
        (EntitySummary, {"entityKey": KEY}, "entity_key", UUID(KEY)),
        (
            Lead,
            {"entityKey": KEY, "leadSource": "Website", "leadStatus": "New"},
            "lead_source",
            "Website",
        ),
        (
            Bill,
            {"billingID": 9, "billDate": "2026-11-01", "externalURL": "https://l"},
            "bill_date",
            date(2026, 11, 1),
        ),
        (Bill, {"lineItems": [{"billingDetailID": 1, "billTotal": 110.0}]}, "line_items", None),
        (
            Group,
            {
                "groupID": 1,
                "groupCode": "G1",
                "members": [{"entityKey": KEY, "entityEmail": "a@b.c"}],
            },
            "group_code",
            "G1",
        ),
        (EForm, {"formKey": KEY, "templateId": 12, "sent": False}, "sent", False),
        (
            Onboarding,
            {"onboardingKey": KEY, "recipient": {"name": "Jo", "email": "j@x"}, "clients": [KEY]},
            "status",
            None,
        ),
        (
            WebhookSubscription,
            {"id": KEY, "url": "https://h", "event": "proposal.accepted"},
            "event",
            "proposal.accepted",
        ),
        (
            CredentialCheck,
            {
                "authenticated": True,
                "clientID": "c",
                "clientName": "Acme",
                "canWrite": True,
                "timestamp": "2026-11-22T10:00:00Z",
            },
            "can_write",
            True,
        ),
        (
            ProblemDetails,
            {"type": None, "title": "Bad", "status": 400, "message": "m"},
            "message",
            "m",
        ),
    ],
)
def test_models_read_wire_names_and_keep_unknown_fields(
    model: type[ApiModel], wire: dict[str, Any], attribute: str, value: Any
) -> None:
    parsed = model.model_validate({**wire, "futureField": {"x": 1}})
    if value is not None:
        assert getattr(parsed, attribute) == value
    dumped = parsed.model_dump(mode="json", exclude_unset=True)
    assert dumped["futureField"] == {"x": 1}
    assert set(wire) <= set(dumped)


def test_integration_ids_forbid_unknown_fields_and_allow_nulls() -> None:
    ids = EntityIntegrations.model_validate(
        {"entityKey": None, "xpmClientID": "X1", "bglSmsfFirm": None}
    )
    assert ids.xpm_client_id == "X1"
    with pytest.raises(pydantic.ValidationError, match="extra"):
        EntityIntegrations.model_validate({"xpmClientID": "X1", "somethingElse": 1})


def test_request_models_dump_by_alias_and_accept_python_names() -> None:
    bill = BillRequest(
        entity_key=UUID(KEY),
        bill_date=date(2026, 11, 22),
        line_items=[BillLineItemRequest(amount=100, tax_percent=10, narration="Fee")],
    )
    assert bill.to_wire() == {
        "entityKey": KEY,
        "billDate": "2026-11-22",
        "lineItems": [{"amount": 100.0, "taxPercent": 10.0, "narration": "Fee"}],
    }
    entity = EntityCreateRequest.model_validate(
        {
            "entityType": "Company",
            "entityName": "Acme",
            "physicalAddress": {"address1": "1 St", "suburb": "X"},
        }
    )
    assert entity.to_wire()["physicalAddress"] == {"address1": "1 St", "suburb": "X"}


def test_bill_line_needs_tax_amount_or_percent() -> None:
    with pytest.raises(pydantic.ValidationError, match="taxAmount or taxPercent"):
        BillLineItemRequest(amount=100)
    assert BillLineItemRequest.model_validate({"amount": 1, "taxAmount": 0.1}).tax_amount == 0.1


def test_webhook_secret_stays_out_of_repr() -> None:
    created = WebhookSubscription.model_validate({"id": KEY, "webhookSecret": "whsec-123"})
    request = WebhookSubscribeRequest(target_url="https://h", webhook_secret="whsec-123")
    for model in (created, request):
        assert "whsec-123" not in repr(model)
        assert "whsec-123" not in str(model)
    assert created.webhook_secret == "whsec-123"
    assert created.model_dump()["webhookSecret"] == "whsec-123"


def test_datetimes_are_parsed_as_aware_utc() -> None:
    check = CredentialCheck.model_validate({"timestamp": "2026-11-22T10:00:00Z"})
    assert check.timestamp == datetime(2026, 11, 22, 10, tzinfo=UTC)


def test_client_posts_models_by_alias(rsps: Any, client: Any) -> None:
    from responses import matchers

    from .conftest import BASE

    body = {"entityKey": KEY, "lineItems": [{"amount": 50.0, "taxAmount": 5.0}]}
    rsps.post(
        f"{BASE}/api/v1/bills",
        status=201,
        json={"billingID": 1},
        match=[matchers.json_params_matcher(body)],
    )
    request = BillRequest.model_validate(body)
    assert Bill.model_validate(client.post("/api/v1/bills", json=request)).billing_id == 1


def test_fields_spelled_in_another_letter_case_are_read_and_extras_kept() -> None:
    # Spec 2.4 spells billingID and billingId; a service may add fields at any time.
    from practiceflow.api.resource_models import EntitySummary

    row = EntitySummary.model_validate(
        {"entityKey": "5114e089-47cd-4e89-9966-cab520339605", "entityTypeId": 3, "brandNew": 1}
    )
    assert row.entity_type_id == 3
    assert row.model_extra == {"brandNew": 1}
    exact = EntitySummary.model_validate({"entityTypeID": 4, "entityTypeId": 5})
    assert exact.entity_type_id == 4  # the spec's own spelling wins
