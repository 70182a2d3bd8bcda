"""Pydantic models of every resource whose fields the spec names: snake_case attributes with
the spec's wire names (``entityTypeID``) as aliases, read by either, dumped by alias. Fields the
spec does not name are kept (it lists them only partially), except where its section 2.2 says
none are allowed; response fields are optional, request models require what the spec requires.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ApiModel(BaseModel):
    """Base of the resource models: aliases on the wire, unknown fields kept."""

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        serialize_by_alias=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _any_letter_case(cls, data: Any) -> Any:
        """Read a field spelled in another letter case (``billingId`` for ``billingID``:
        the spec spells some both ways) under its alias; the exact spelling wins."""
        if not isinstance(data, dict):
            return data
        aliases = {
            (info.alias or name).lower(): info.alias or name
            for name, info in cls.model_fields.items()
        }
        renamed = dict(data)
        for key in data:
            alias = aliases.get(str(key).lower())
            if alias is not None and alias != key and alias not in data:
                renamed[alias] = renamed.pop(key)
        return renamed

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict with the spec's field names, unset fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class EntitySummary(ApiModel):
    """A row of ``GET /api/v1/entities`` (spec 2.1)."""

    entity_key: UUID | None = Field(default=None, alias="entityKey")
    entity_code: str | None = Field(default=None, alias="entityCode")
    entity_name: str | None = Field(default=None, alias="entityName")
    entity_surname: str | None = Field(default=None, alias="entitySurname")
    entity_initials: str | None = Field(default=None, alias="entityInitials")
    entity_type: str | None = Field(default=None, alias="entityType")
    entity_type_id: int | None = Field(default=None, alias="entityTypeID")
    status: str | None = None
    email: str | None = None
    last_updated: datetime | None = Field(default=None, alias="lastUpdated")


class Address(ApiModel):
    """``physicalAddress`` / ``postalAddress`` (the fields the spec does not show are extras)."""

    address1: str | None = None
    city: str | None = None
    state: str | None = None
    postcode: str | None = None
    country: str | None = None


class EntityCreateRequest(ApiModel):
    """Body of ``POST /api/v1/entities`` (spec 2.1, 4.1); ``entityType`` wins over
    ``entityTypeID`` when both are set."""

    entity_type: str | None = Field(default=None, alias="entityType")
    entity_type_id: int | None = Field(default=None, alias="entityTypeID")
    client_status: str | None = Field(default=None, alias="clientStatus")
    entity_code: str | None = Field(default=None, alias="entityCode")
    external_system_id: str | None = Field(default=None, alias="externalSystemID")
    entity_name: str | None = Field(default=None, alias="entityName")
    entity_surname: str | None = Field(default=None, alias="entitySurname")
    entity_initials: str | None = Field(default=None, alias="entityInitials")
    email: str | None = None
    telephone: str | None = None
    mobile: str | None = None
    tax_number: str | None = Field(default=None, alias="taxNumber")
    reg_number: str | None = Field(default=None, alias="regNumber")
    id_number: str | None = Field(default=None, alias="idNumber")
    physical_address: Address | None = Field(default=None, alias="physicalAddress")
    postal_address: Address | None = Field(default=None, alias="postalAddress")


class EntityIntegrations(ApiModel):
    """``GET /api/v1/entities/{key}/integrations`` (spec 2.2): no other fields allowed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    entity_key: UUID | None = Field(default=None, alias="entityKey")
    entity_name: str | None = Field(default=None, alias="entityName")
    xpm_client_id: str | None = Field(default=None, alias="xpmClientID")
    xgl_client_id: str | None = Field(default=None, alias="xglClientID")
    gs_client_id: str | None = Field(default=None, alias="gsClientID")
    connector_client_id: str | None = Field(default=None, alias="connectorClientID")
    fyi_client_id: str | None = Field(default=None, alias="fyiClientID")
    workflow_client_id: str | None = Field(default=None, alias="workflowClientID")
    workflow_entity_type: str | None = Field(default=None, alias="workflowEntityType")
    qb_client_id: str | None = Field(default=None, alias="qbClientID")
    accounting_client_url: str | None = Field(default=None, alias="accountingClientUrl")
    bgl_id: str | None = Field(default=None, alias="bglID")
    bgl_contact_id: str | None = Field(default=None, alias="bglContactID")
    bgl_smsf_id: str | None = Field(default=None, alias="bglSmsfID")
    bgl_smsf_firm: str | None = Field(default=None, alias="bglSmsfFirm")


class Lead(ApiModel):
    """A lead (spec 2.3); ``leadSource`` and ``leadStatus`` are names, not ids."""

    entity_key: UUID | None = Field(default=None, alias="entityKey")
    entity_type: str | None = Field(default=None, alias="entityType")
    entity_name: str | None = Field(default=None, alias="entityName")
    entity_surname: str | None = Field(default=None, alias="entitySurname")
    email: str | None = None
    lead_source: str | None = Field(default=None, alias="leadSource")
    lead_status: str | None = Field(default=None, alias="leadStatus")


class BillLineItemRequest(ApiModel):
    """A line of ``POST /api/v1/bills``: ``amount`` plus ``taxAmount`` or ``taxPercent``."""

    amount: float
    tax_amount: float | None = Field(default=None, alias="taxAmount")
    tax_percent: float | None = Field(default=None, alias="taxPercent")
    narration: str | None = None
    ext_account_id: int | None = Field(default=None, alias="extAccountID")
    ext_item_id: int | None = Field(default=None, alias="extItemID")
    ext_tax_id: int | None = Field(default=None, alias="extTaxID")

    @model_validator(mode="after")
    def _needs_tax(self) -> Self:
        if self.tax_amount is None and self.tax_percent is None:
            message = "a bill line needs taxAmount or taxPercent besides amount"
            raise ValueError(message)
        return self


class BillRequest(ApiModel):
    """Body of ``POST /api/v1/bills`` (spec 2.4); ``entityKey`` must be an Active client."""

    entity_key: UUID = Field(alias="entityKey")
    bill_date: date | None = Field(default=None, alias="billDate")
    due_date: date | None = Field(default=None, alias="dueDate")
    bill_details: str | None = Field(default=None, alias="billDetails")
    send_bill: bool | None = Field(default=None, alias="sendBill")
    sync_now: bool | None = Field(default=None, alias="syncNow")
    line_items: list[BillLineItemRequest] = Field(alias="lineItems")


class BillLineItem(ApiModel):
    """A line of a bill detail response (spec 2.4)."""

    billing_detail_id: int | None = Field(default=None, alias="billingDetailID")
    bill_amount: float | None = Field(default=None, alias="billAmount")
    bill_tax: float | None = Field(default=None, alias="billTax")
    bill_total: float | None = Field(default=None, alias="billTotal")
    narration: str | None = None
    ext_item_id: int | None = Field(default=None, alias="extItemID")
    ext_account_id: int | None = Field(default=None, alias="extAccountID")
    ext_tax_id: int | None = Field(default=None, alias="extTaxID")
    field_one: str | None = Field(default=None, alias="fieldOne")
    field_two: str | None = Field(default=None, alias="fieldTwo")
    order_id: int | None = Field(default=None, alias="orderID")
    service_id: int | None = Field(default=None, alias="serviceID")


class Bill(ApiModel):
    """A bill detail: the answer of ``POST /api/v1/bills`` and ``GET /api/v1/bills/{id}``."""

    billing_id: int | None = Field(default=None, alias="billingID")
    engagement_id: int | None = Field(default=None, alias="engagementID")
    engagement_status_id: int | None = Field(default=None, alias="engagementStatusID")
    entity_id: int | None = Field(default=None, alias="entityID")
    engagement_name: str | None = Field(default=None, alias="engagementName")
    entity_name: str | None = Field(default=None, alias="entityName")
    is_engagement_finalised: bool | None = Field(default=None, alias="isEngagementFinalised")
    is_onboarding_entity: bool | None = Field(default=None, alias="isOnboardingEntity")
    bill_date: date | None = Field(default=None, alias="billDate")
    due_date: date | None = Field(default=None, alias="dueDate")
    bill_number: str | None = Field(default=None, alias="billNumber")
    ref_no: str | None = Field(default=None, alias="refNo")
    bill_amount: float | None = Field(default=None, alias="billAmount")
    bill_tax: float | None = Field(default=None, alias="billTax")
    bill_total: float | None = Field(default=None, alias="billTotal")
    payment_total: float | None = Field(default=None, alias="paymentTotal")
    bill_details: str | None = Field(default=None, alias="billDetails")
    currency_id: int | None = Field(default=None, alias="currencyID")
    bill_now: int | None = Field(default=None, alias="billNow")
    package_number: int | None = Field(default=None, alias="packageNumber")
    bill_percent: float | None = Field(default=None, alias="billPercent")
    sync_now: bool | None = Field(default=None, alias="syncNow")
    send_bill: bool | None = Field(default=None, alias="sendBill")
    invoice_status: str | None = Field(default=None, alias="invoiceStatus")
    external_id: str | None = Field(default=None, alias="externalID")
    external_number: str | None = Field(default=None, alias="externalNumber")
    external_url: str | None = Field(default=None, alias="externalURL")
    sync_attempt_count: int | None = Field(default=None, alias="syncAttemptCount")
    sync_failed_reason: str | None = Field(default=None, alias="syncFailedReason")
    branding_theme_id: str | None = Field(default=None, alias="brandingThemeID")
    created_on: datetime | None = Field(default=None, alias="createdOn")
    updated_on: datetime | None = Field(default=None, alias="updatedOn")
    cancelled_on: datetime | None = Field(default=None, alias="cancelledOn")
    line_items: list[BillLineItem] | None = Field(default=None, alias="lineItems")


class GroupMember(ApiModel):
    """A member of a group, present with ``includeMembers=true``."""

    entity_key: UUID | None = Field(default=None, alias="entityKey")
    entity_name: str | None = Field(default=None, alias="entityName")
    entity_email: str | None = Field(default=None, alias="entityEmail")


class Group(ApiModel):
    """A row of ``GET /api/v1/groups/list`` (spec 2.5)."""

    group_id: int | None = Field(default=None, alias="groupID")
    group_name: str | None = Field(default=None, alias="groupName")
    group_code: str | None = Field(default=None, alias="groupCode")
    is_active: bool | None = Field(default=None, alias="isActive")
    practice_office_id: int | None = Field(default=None, alias="practiceOfficeID")
    created_on: datetime | None = Field(default=None, alias="createdOn")
    updated_on: datetime | None = Field(default=None, alias="updatedOn")
    members: list[GroupMember] | None = None


class EForm(ApiModel):
    """The answer of ``POST /api/v1/eforms/send`` (spec 2.6); ``sent: false`` is a draft."""

    form_key: UUID | None = Field(default=None, alias="formKey")
    template_id: int | None = Field(default=None, alias="templateId")
    entity_key: UUID | None = Field(default=None, alias="entityKey")
    access_url: str | None = Field(default=None, alias="accessUrl")
    email_sent: bool | None = Field(default=None, alias="emailSent")
    sent: bool | None = None


class OnboardingRecipient(ApiModel):
    """The one recipient of an onboarding job."""

    name: str | None = None
    email: str | None = None
    mobile: str | None = None


class Onboarding(ApiModel):
    """An onboarding job (spec 2.7); ``clients`` rows are entityKeys or quick-adds whose
    field names the spec does not show, so they stay as parsed JSON."""

    onboarding_key: UUID | None = Field(default=None, alias="onboardingKey")
    status: str | None = None
    user_key: UUID | None = Field(default=None, alias="userKey")
    recipient: OnboardingRecipient | None = None
    clients: list[Any] | None = None


class WebhookSubscription(ApiModel):
    """A webhook subscription (spec 2.8); ``webhookSecret`` only in the create answer."""

    id: UUID | None = None
    url: str | None = None
    event: str | None = None
    webhook_secret: str | None = Field(default=None, alias="webhookSecret", repr=False)


class WebhookSubscribeRequest(ApiModel):
    """Body of ``POST /api/v1/webhooks``; ``targetUrl`` is the automation platforms'
    spelling of ``hookUrl``, and a ``webhookSecret`` sent is ignored by the server."""

    hook_url: str | None = Field(default=None, alias="hookUrl")
    target_url: str | None = Field(default=None, alias="targetUrl")
    webhook_event: str | None = Field(default=None, alias="webhookEvent")
    webhook_name: str | None = Field(default=None, alias="webhookName")
    webhook_secret: str | None = Field(default=None, alias="webhookSecret", repr=False)


class CredentialCheck(ApiModel):
    """The answer of ``GET /api/v1/auth/validate`` (spec 2.8b)."""

    authenticated: bool | None = None
    message: str | None = None
    client_id: str | None = Field(default=None, alias="clientID")
    client_name: str | None = Field(default=None, alias="clientName")
    can_write: bool | None = Field(default=None, alias="canWrite")
    timestamp: datetime | None = None


class ProblemDetails(ApiModel):
    """An error body (spec 7): all fields nullable; ``message`` on validation and 404."""

    type: str | None = None
    title: str | None = None
    status: int | None = None
    detail: str | None = None
    instance: str | None = None
    message: str | None = None
