"""Error messages say where, what was got, and what would be valid."""

from __future__ import annotations

import pytest

from practiceflow.manifest.validation import compile_validator, did_you_mean, issues_for
from practiceflow.manifest.yamlpos import load_yaml

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["entityKey", "lineItems"],
    "properties": {
        "entityKey": {"type": "string", "format": "uuid"},
        "billDate": {"type": "string", "format": "date"},
        "kind": {"enum": ["create", "search", "read"]},
        "lineItems": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["amount"],
                "anyOf": [{"required": ["taxAmount"]}, {"required": ["taxPercent"]}],
                "properties": {
                    "amount": {"type": "number"},
                    "taxAmount": {"type": "number"},
                    "taxPercent": {"type": "number", "minimum": 0, "maximum": 100},
                },
            },
        },
        "note": {"type": "string", "x-pii": True},
        "when": {"type": "string", "format": "date-time"},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    },
}
VALIDATOR = compile_validator(SCHEMA)
KEY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
LINE = {"amount": 1, "taxPercent": 10}


def messages(data, **kwargs):
    return [
        f"{issue.path}: {issue.message}"
        for issue in issues_for(VALIDATOR, data, file="input", **kwargs)
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"lineItems": [LINE]}, "entityKey: required field is missing"),
        ({"entityKey": 5, "lineItems": [LINE]}, "entityKey: got 5; expected a string"),
        ({"entityKey": "x", "lineItems": [LINE]}, "entityKey: got 'x'; expected a UUID"),
        (
            {"entityKey": KEY, "lineItems": [{"amount": "ten", "taxAmount": 1}]},
            "lineItems[0].amount: got 'ten'; expected a number",
        ),
        (
            {"entityKey": KEY, "lineItems": [{"amount": 1}]},
            "lineItems[0]: needs 'taxAmount' or 'taxPercent'",
        ),
        (
            {"entityKey": KEY, "lineItems": []},
            "lineItems: got a list; expected at least this many items: 1",
        ),
        (
            {"entityKey": KEY, "lineItems": [{"amount": 1, "taxPercent": 101}]},
            "lineItems[0].taxPercent: got 101; expected at most 100",
        ),
        (
            {"entityKey": KEY, "lineItems": [LINE], "billDate": "01/05/2024"},
            "billDate: got '01/05/2024'; expected a date as YYYY-MM-DD",
        ),
        (
            {"entityKey": KEY, "lineItems": [LINE], "billDate": "2024-02-30"},
            "billDate: got '2024-02-30'; expected a date",
        ),
        (
            {"entityKey": KEY, "lineItems": [LINE], "when": "yesterday"},
            "when: got 'yesterday'; expected a UTC ISO 8601 datetime",
        ),
        (
            {"entityKey": KEY, "lineItems": [LINE], "kind": "serch"},
            "kind: got 'serch'; expected one of ['create', 'search', 'read']; "
            "did you mean 'search'?",
        ),
        (
            {"entityKey": KEY, "lineItems": [LINE], "biilDate": "2024-05-01"},
            ": 'biilDate' is not a known field; did you mean 'billDate'?",
        ),
        (
            {"entityKey": KEY, "lineItems": [LINE], "either": 1.5},
            "either: got 1.5; expected a string or an integer",
        ),
        (
            {"entityKey": KEY, "lineItems": [LINE], "zzz": 1},
            ": 'zzz' is not a known field; valid fields are",
        ),
    ],
)
def test_each_kind_of_error_reads_well(data, expected):
    found = messages(data)
    assert any(line.startswith(expected) for line in found), found


def test_all_errors_are_reported_at_once():
    found = messages(
        {"entityKey": 5, "lineItems": [{"amount": "x"}, {"amount": 1, "taxAmount": "y"}]}
    )
    assert len(found) >= 4


def test_personal_values_are_not_echoed():
    found = messages(
        {"entityKey": KEY, "lineItems": [LINE], "note": 12345},
        redact=lambda path: path[:1] == ("note",),
    )
    assert found == ["note: got ***; expected a string"]


def test_positions_come_from_the_file_the_data_was_read_from():
    located = load_yaml(f"entityKey: {KEY}\nlineItems:\n  - amount: ten\n    taxAmount: 1\n")
    issues = issues_for(VALIDATOR, located.data, file="bill.yaml", located=located)
    assert [str(issue) for issue in issues] == [
        "bill.yaml:3:13 lineItems[0].amount: got 'ten'; expected a number"
    ]


@pytest.mark.parametrize(
    ("word", "candidates", "expected"),
    [
        ("amonut", ["amount", "narration"], "amount"),
        ("AMOUNT", ["amount"], "amount"),
        ("zzz", ["amount"], None),
        ("amount", ["amount"], None),
    ],
)
def test_did_you_mean(word, candidates, expected):
    assert did_you_mean(word, candidates) == expected


@pytest.mark.parametrize(
    ("instance", "valid"),
    [
        ({"entityKey": KEY, "lineItems": [LINE]}, True),
        ({"entityKey": KEY, "lineItems": [LINE], "when": "2024-05-01T09:30:00Z"}, True),
        ({"entityKey": KEY, "lineItems": [LINE], "when": "2024-05-01T09:30"}, True),
        ({"entityKey": KEY, "lineItems": [LINE], "when": "yesterday"}, False),
        ({"entityKey": "x", "lineItems": [LINE]}, False),
        ({"entityKey": KEY, "lineItems": [{"amount": True, "taxAmount": 1}]}, False),
        ({"entityKey": KEY, "lineItems": [LINE], "billDate": "2024-02-30"}, False),
        ({"entityKey": KEY, "lineItems": []}, False),
    ],
)
def test_one_engine_checks_formats_and_types(instance, valid):
    from practiceflow.manifest.validation import compile_validator

    validator = compile_validator(SCHEMA)
    assert validator.is_valid(instance) is valid
    assert (not list(validator.iter_errors(instance))) is valid


def test_every_shipped_sample_and_example_input_fits_its_schema():
    from practiceflow.manifest import default_registry

    for module in default_registry().actions.values():
        assert module.output.validator.is_valid(module.sample), module.key
        assert module.input_validator.is_valid(module.example_input()), module.key
