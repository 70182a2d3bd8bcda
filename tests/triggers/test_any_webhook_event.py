"""The any_webhook_event trigger module: any offered key, the whole body kept."""

from __future__ import annotations

import pytest
from trigger_helpers import check_delivery_cases, check_loads

from practiceflow.errors import ConfigError, TemplateError
from practiceflow.triggers import load_definition

KEY = "any_webhook_event"


def test_module_loads_as_webhook_only():
    check_loads(KEY, webhook=True, poll=False)


def test_the_event_key_is_required_and_checked():
    spec = load_definition(KEY).webhook
    assert spec is not None
    assert spec.event_key({"event": "eform.submitted"}) == "eform.submitted"
    with pytest.raises(TemplateError):
        spec.event_key({})
    with pytest.raises(ConfigError, match="expected an event key"):
        spec.event_key({"event": "nodot"})


@pytest.mark.parametrize(
    "body",
    [{"data": {"a": 1}}, {"event": "x", "nested": [1, 2]}, [], "text"],
)
def test_the_whole_body_is_the_event(body):
    check_delivery_cases(
        KEY,
        [(body, "delivery:evt-9", {"body": body, "deliveryId": "evt-9", "webhookEvent": "x.y"})],
        {"event": "x.y"},
    )
