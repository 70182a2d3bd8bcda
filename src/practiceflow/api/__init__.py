"""The typed HTTP connector of the Partner Integration API: regions and base URLs (never
built-in host names), both authentication methods (never mixed), problem-details errors,
retries, paging, ``lastUpdated`` handling and the resource models, tied together by
:class:`Client`. The rate budget lives in :mod:`practiceflow.budget`.
"""

from __future__ import annotations

from practiceflow.api.auth_methods import Secret
from practiceflow.api.client import ApiResponse, Client, Download
from practiceflow.api.config import Settings, load_settings
from practiceflow.api.paging import Page
from practiceflow.api.params import to_utc_param
from practiceflow.api.resource_models import (
    Address,
    ApiModel,
    Bill,
    BillLineItem,
    BillLineItemRequest,
    BillRequest,
    CredentialCheck,
    EForm,
    EntityCreateRequest,
    EntityIntegrations,
    EntitySummary,
    Group,
    GroupMember,
    Lead,
    Onboarding,
    OnboardingRecipient,
    ProblemDetails,
    WebhookSubscribeRequest,
    WebhookSubscription,
)
from practiceflow.api.retry import RetryPolicy
from practiceflow.budget.rate_budget import RateBudget, RateLimits, RateLimitStatus

__all__ = [
    "Address",
    "ApiModel",
    "ApiResponse",
    "Bill",
    "BillLineItem",
    "BillLineItemRequest",
    "BillRequest",
    "Client",
    "CredentialCheck",
    "Download",
    "EForm",
    "EntityCreateRequest",
    "EntityIntegrations",
    "EntitySummary",
    "Group",
    "GroupMember",
    "Lead",
    "Onboarding",
    "OnboardingRecipient",
    "Page",
    "ProblemDetails",
    "RateBudget",
    "RateLimitStatus",
    "RateLimits",
    "RetryPolicy",
    "Secret",
    "Settings",
    "WebhookSubscribeRequest",
    "WebhookSubscription",
    "load_settings",
    "to_utc_param",
]
