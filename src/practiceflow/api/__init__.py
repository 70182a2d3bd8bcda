"""The typed HTTP connector of the Partner Integration API.

This package owns regions and base URLs (configuration, never built-in host names), both
authentication methods (never mixed), problem-details errors mapped onto
:mod:`practiceflow.errors`, paging (fixed server page size, ``pageSize``, ``hasMore``),
``lastUpdated`` handling, the multi-window rate budget with ``Retry-After``, and pydantic
models of the resources the spec names.

Modules, one concern each:

* :mod:`~practiceflow.api.config`: settings from arguments, environment, profile file
* :mod:`~practiceflow.api.auth_methods`: the masked :class:`Secret`, header and HTTP Basic
  authentication
* :mod:`~practiceflow.api.params`: query values, ``lastUpdated`` as UTC
* :mod:`practiceflow.budget`: the rate budget (pyrate-limiter) and ``Retry-After``
* :mod:`~practiceflow.api.retry`: which failures are retried, and backoff
* :mod:`~practiceflow.api.problems`: error answers to exceptions
* :mod:`~practiceflow.api.paging`: pages and items of list endpoints
* :mod:`~practiceflow.api.client`: :class:`Client`, the send loop, downloads
* :mod:`~practiceflow.api.wire`: result types and conversions around one request
* :mod:`~practiceflow.api.resource_models`: the resource models
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
