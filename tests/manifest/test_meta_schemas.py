"""The meta-schemas in manifests/ are the one definition of each file format."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from practiceflow.manifest.validation import META_KINDS, meta_schema, meta_validator


@pytest.mark.parametrize("kind", META_KINDS)
def test_meta_schema_is_valid_draft_2020_12(kind):
    schema = meta_schema(kind)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(f"/{kind}.schema.json")


@pytest.mark.parametrize("kind", ["action", "trigger", "recipe", "connector"])
def test_top_level_refuses_unknown_fields(kind):
    assert meta_schema(kind)["additionalProperties"] is False


def test_trigger_schema_reuses_the_action_schema_dialect():
    validator = meta_validator("trigger")
    module = {
        "key": "t",
        "title": "Trigger",
        "description": "A trigger for this test.",
        "noun": "Proposal",
        "output": {"schema": {"type": "object", "properties": {"a": {"type": "strng"}}}},
        "sample": {},
        "webhook": {"event": "proposal.accepted"},
    }
    messages = [error.message for error in validator.iter_errors(module)]
    assert any("'strng' is not one of" in message for message in messages)
