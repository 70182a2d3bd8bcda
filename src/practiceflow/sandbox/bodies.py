"""Request bodies as pydantic models: validated by the routes, described in /openapi.json
(guesses in GUESSES.md). Unknown fields are ignored; a boolean must be a JSON boolean.
"""

from __future__ import annotations

from datetime import date
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StrictBool


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class Address(_Body):
    """A postal or physical address; fields between address1 and country are guesses."""

    address1: str | None = None
    address2: str | None = None
    city: str | None = None
    state: str | None = None
    postcode: str | None = None
    country: str | None = None


class EntityBody(_Body):
    """``POST /api/v1/entities`` (spec 4.1)."""

    entityType: str | None = Field(default=None, description="type code or display name")
    entityTypeID: int | None = Field(default=None, description="ignored when entityType is set")
    clientStatus: str | None = Field(default=None, description="Lead or Active (default Active)")
    entityCode: str | None = None
    externalSystemID: str | None = None
    entityName: str = Field(min_length=1, max_length=200)
    entitySurname: str | None = None
    entityInitials: str | None = None
    email: str | None = None
    telephone: str | None = None
    mobile: str | None = None
    taxNumber: str | None = None
    regNumber: str | None = None
    idNumber: str | None = None
    physicalAddress: Address | None = None
    postalAddress: Address | None = None


class BillLineBody(_Body):
    """One line of ``POST /api/v1/bills`` (spec 2.4)."""

    amount: float | None = Field(default=None, description="tax-exclusive amount; required")
    taxAmount: float | None = None
    taxPercent: float | None = None
    narration: str | None = None
    extAccountID: int | None = None
    extItemID: int | None = None
    extTaxID: int | None = None


class BillBody(_Body):
    """``POST /api/v1/bills`` (spec 2.4)."""

    entityKey: UUID
    billDate: date | None = None
    dueDate: date | None = None
    billDetails: str | None = None
    sendBill: StrictBool = False
    syncNow: StrictBool = False
    lineItems: list[BillLineBody] = Field(min_length=1, max_length=500)


class WebhookBody(_Body):
    """``POST /api/v1/webhooks`` (spec 2.8)."""

    hookUrl: str | None = None
    targetUrl: str | None = None
    webhookEvent: str
    webhookName: str | None = None
    webhookSecret: str | None = Field(default=None, description="ignored: the server generates it")


class Recipient(_Body):
    """The person who receives an onboarding job or an ad-hoc eForm."""

    name: str = Field(min_length=1)
    email: str = Field(min_length=3)
    mobile: str | None = None


class OnboardingClientBody(_Body):
    """A client row: an existing ``entityKey`` or a quick-add (names guessed)."""

    entityKey: UUID | None = None
    entityType: str | None = None
    entityName: str | None = None


class OnboardingBody(_Body):
    """``POST /api/v1/onboardings/create`` (spec 2.7, 4.1)."""

    sendToRecipient: StrictBool = False
    userKey: UUID | None = None
    recipient: Recipient
    clients: list[OnboardingClientBody] = Field(min_length=1, max_length=50)


class EformSendBody(_Body):
    """``POST /api/v1/eforms/send``: a template, a stored client or ad-hoc recipient, mute."""

    templateId: int
    entityKey: UUID | None = None
    recipient: Recipient | None = None
    mute: StrictBool = False


class LeadBody(_Body):
    """``POST /api/v1/leads`` (guessed; field names from spec 2.3)."""

    entityType: str = Field(min_length=1)
    entityName: str = Field(min_length=1, max_length=200)
    entitySurname: str | None = None
    email: str | None = None
    leadSource: str | None = Field(default=None, description="a source NAME")
    leadStatus: str | None = Field(default=None, description="a status NAME (default New)")


class LeadNoteBody(_Body):
    """A note on a lead (guessed)."""

    note: str = Field(min_length=1, max_length=4000)


class ContactBody(_Body):
    """A contact of a client (guessed fields)."""

    firstName: str | None = None
    lastName: str | None = None
    email: str | None = None
    mobile: str | None = None
    role: str | None = None
    isPrimary: StrictBool | None = None


class NewContactBody(ContactBody):
    """A contact to add: ``firstName``, ``lastName`` or ``email`` is required (the route
    checks; the OpenAPI document says so)."""


class IdVerificationBody(_Body):
    """``POST /api/v1/id-verifications/send`` (guessed beyond includeAml)."""

    entityKey: UUID
    includeAml: StrictBool = False


class AmlCheckBody(_Body):
    """``POST /api/v1/id-verifications/aml-checks`` (level names from the spec)."""

    entityKey: UUID
    level: Literal["standard", "extensive"] = "standard"


class ProposalServiceBody(_Body):
    """A service line of an ad-hoc proposal (guessed)."""

    serviceID: int
    quantity: int = Field(default=1, ge=1, le=1000)
    price: float | None = Field(default=None, ge=0)


class ProposalBody(_Body):
    """``POST /api/v1/proposals``: an ad-hoc proposal (guessed)."""

    entityKey: UUID
    title: str | None = None
    services: list[ProposalServiceBody] = Field(min_length=1, max_length=50)


class ProposalFromTemplateBody(_Body):
    """``POST /api/v1/proposals/from-template`` (guessed)."""

    entityKey: UUID
    templateId: int
    title: str | None = None


class RenewBody(_Body):
    """``POST /api/v1/proposals/{key}/renew``: an optional signatory choice (guessed)."""

    signatoryKey: UUID | None = None
