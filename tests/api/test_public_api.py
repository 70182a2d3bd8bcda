"""The public surface of practiceflow.api is pinned: changing it is a decision."""

from __future__ import annotations

import practiceflow.api as api

EXPECTED = {
    "Address", "ApiModel", "ApiResponse", "Bill", "BillLineItem", "BillLineItemRequest",
    "BillRequest", "Client", "CredentialCheck", "Download", "EForm", "EntityCreateRequest",
    "EntityIntegrations", "EntitySummary", "Group", "GroupMember", "Lead", "Onboarding",
    "OnboardingRecipient", "Page", "ProblemDetails", "RateBudget",
    "RateLimitStatus", "RateLimits", "RetryPolicy", "Secret", "Settings",
    "WebhookSubscribeRequest", "WebhookSubscription", "load_settings", "to_utc_param",
}  # fmt: skip


def test_all_is_pinned() -> None:
    assert set(api.__all__) == EXPECTED
    assert len(api.__all__) == len(EXPECTED)


def test_everything_in_all_is_importable() -> None:
    for name in api.__all__:
        assert getattr(api, name) is not None
