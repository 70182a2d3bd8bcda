"""portable_schema: a list of types becomes anyOf of single types, meaning the same."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from practiceflow.export.schemas import portable_schema, portable_types

CASES = [
    ({"type": ["string", "null"], "title": "T"},
     {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "T"}),
    ({"type": ["integer"]}, {"type": "integer"}),
    ({"type": "object", "properties": {"a": {"type": ["integer", "string"]}}},
     {"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
    # An anyOf already there: the type alternatives join it through allOf.
    ({"type": ["object", "null"], "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
     {"anyOf": [{"required": ["a"]}, {"required": ["b"]}],
      "allOf": [{"anyOf": [{"type": "object"}, {"type": "null"}]}]}),
    # Data keywords are data: an example object with a "type" list stays as it is.
    ({"type": "array", "items": {"type": ["number", "null"]}, "examples": [{"type": ["x"]}]},
     {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "null"}]},
      "examples": [{"type": ["x"]}]}),
]  # fmt: skip
VALUES = [None, "x", 1, 1.5, True, {}, {"a": 1}, {"b": "s"}, [], [1, None], [{"type": 1}]]


@pytest.mark.parametrize(("schema", "expected"), CASES)
def test_portable_schema_spells_lists_of_types_as_any_of(schema, expected):
    assert portable_schema(schema) == expected


@pytest.mark.parametrize(("schema", "_expected"), CASES)
@pytest.mark.parametrize("value", VALUES)
def test_portable_schema_accepts_exactly_what_the_original_accepts(schema, _expected, value):
    before = Draft202012Validator(schema).is_valid(value)
    assert Draft202012Validator(portable_schema(schema)).is_valid(value) == before


def test_portable_types_rewrites_schemas_of_a_document_not_its_examples():
    document = {
        "paths": {"/x": {"get": {"parameters": [{"schema": {"type": ["string", "null"]}}]}}},
        "components": {"schemas": {"Row": {"type": ["object"]}}, "examples": {"e": {"type": []}}},
    }
    out = portable_types(document)
    assert out["paths"]["/x"]["get"]["parameters"][0]["schema"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    assert out["components"]["schemas"]["Row"] == {"type": "object"}
    assert out["components"]["examples"] == {"e": {"type": []}}
