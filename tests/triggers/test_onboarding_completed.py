"""The onboarding_completed trigger module: webhook only, event checked against the API."""

from __future__ import annotations

import pytest
from trigger_helpers import check_delivery_cases, check_loads

from practiceflow.errors import ConfigError
from practiceflow.triggers import WebhookTrigger, load_definition

KEY = "onboarding_completed"


def test_module_loads_as_webhook_only():
    check_loads(KEY, webhook=True, poll=False)


@pytest.mark.parametrize(
    ("options", "event"),
    [({}, "onboarding.completed"), ({"event": "onboarding.done"}, "onboarding.done")],
)
def test_event_key_comes_from_options(options, event):
    spec = load_definition(KEY).webhook
    assert spec is not None
    assert spec.event_key(options) == event


@pytest.mark.parametrize(
    ("body", "key", "fields"),
    [
        (
            {"data": {"onboardingKey": "o1", "entityKeys": ["e"]}},
            "onboarding:o1",
            {"entityKeys": ["e"]},
        ),
        ({"onboardingKey": "o1", "status": "Completed"}, "onboarding:o1", {"status": "Completed"}),
        ({"data": None}, "delivery:evt-9", {}),
    ],
)
def test_delivery_bodies_map_tolerantly(body, key, fields):
    check_delivery_cases(KEY, [(body, key, fields)])


@pytest.mark.integration
def test_an_event_the_api_does_not_offer_is_refused_with_the_valid_keys(store, client, receiver):
    trigger = WebhookTrigger(
        load_definition(KEY),
        {"event": "onboarding.unheard_of"},
        practice="p",
        store=store,
        client=client,
        receiver=receiver,
        public_url="http://127.0.0.1:9",
    )
    with pytest.raises(ConfigError, match=r"does not offer event 'onboarding.unheard_of'; valid"):
        trigger.start()
    assert store.list_subscriptions() == []
