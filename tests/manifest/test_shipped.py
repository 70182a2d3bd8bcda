"""Every shipped module loads, is self-consistent, and has its own tests: a ``*.test.yaml``
in the users' format (docs/testing.md) and, for an action, a Python test file."""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.engine import validate_input
from practiceflow.manifest import default_registry

REGISTRY = default_registry()
ACTIONS = sorted(REGISTRY.actions)
TESTS = Path(__file__).parents[1]


@pytest.mark.parametrize("key", ACTIONS)
def test_each_action_has_its_own_test_file(key):
    assert (TESTS / "actions" / f"test_{key}.py").is_file()


def test_each_module_has_its_own_test_yaml():
    missing = [
        f"{kind}/{key}"
        for kind, keys in (("actions", REGISTRY.actions), ("triggers", REGISTRY.triggers))
        for key in keys
        if not (TESTS / kind / f"{key}.test.yaml").is_file()
    ]
    assert missing == []


@pytest.mark.parametrize("key", ACTIONS)
def test_example_input_is_valid_input(key):
    module = REGISTRY.actions[key]
    assert validate_input(module, module.example_input()) == []


@pytest.mark.parametrize("key", ACTIONS)
def test_every_input_field_has_a_title_and_required_fields_have_examples(key):
    module = REGISTRY.actions[key]
    properties = module.input_schema["properties"]
    for name, schema in properties.items():
        assert schema.get("title"), f"{key}: input.{name} has no title"
    for name in module.required:
        assert properties[name].get("examples"), f"{key}: required input.{name} has no example"


@pytest.mark.parametrize("key", ACTIONS)
def test_write_actions_explain_403(key):
    module = REGISTRY.actions[key]
    if module.needs_write:
        assert "canWrite" in module.errors[403]
