"""The eform_submitted trigger module: webhook only, with the reason in its help text."""

from __future__ import annotations

import pytest
from trigger_helpers import check_delivery_cases, check_loads

from practiceflow.errors import ConfigError
from practiceflow.triggers import load_definition, resolve_mode

KEY = "eform_submitted"


def test_module_loads_as_webhook_only():
    check_loads(KEY, webhook=True, poll=False)


@pytest.mark.parametrize(
    ("body", "key", "fields"),
    [
        ({"data": {"formKey": "f1", "templateId": 12}}, "eform:f1", {"templateId": 12}),
        ({"formKey": "f1", "entityKey": None}, "eform:f1", {"formKey": "f1"}),
        ({"data": {"templateId": 12}}, "delivery:evt-9", {"templateId": 12}),
        (b"\x00binary".decode("latin-1"), "delivery:evt-9", {}),
    ],
)
def test_delivery_bodies_map_tolerantly(body, key, fields):
    check_delivery_cases(KEY, [(body, key, fields)])


def test_without_a_public_url_the_refusal_says_polling_cannot_stand_in():
    definition = load_definition(KEY)
    with pytest.raises(ConfigError, match="no list of eForms"):
        resolve_mode(definition, "auto", None)
    with pytest.raises(ConfigError, match="cannot be polled"):
        resolve_mode(definition, "poll", None)
