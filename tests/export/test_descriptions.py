"""Descriptions of exported operations promise only what the exported request does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from practiceflow.export import generate
from practiceflow.export.descriptions import (
    RUNNER_ONLY,
    export_description,
    runner_only_mentions,
)
from practiceflow.export.powerautomate import operation_id
from practiceflow.manifest import default_registry

REGISTRY = default_registry()


@pytest.mark.parametrize(
    ("description", "missing", "extra", "expected"),
    [
        # A sentence naming a field the operation lacks is left out.
        ("Finds things. Matches saveTo locally.", ["saveTo"], [], "Finds things."),
        # The first sentence is cut before the runner-only part, trailing words trimmed.
        (
            "Lists bills by date (not creation), page by page, and stops at limit; more.",
            ["limit"],
            ["One page per call."],
            "Lists bills by date (not creation). One page per call.",
        ),
        ("Downloads a PDF and writes it to a file.", ["saveTo"], [], "Downloads a PDF."),
        # Nothing left of the first sentence: the title stands in.
        ("Pages through everything.", [], [], "Title."),
        # A field name inside another word, or after a dot, is not the field.
        ("Sends the limitless note. Reads item.limit too.", ["limit"], [], None),
    ],
)
def test_export_description_keeps_what_the_request_does(description, missing, extra, expected):
    got = export_description(description, "Title", missing, extra)
    assert got == (description if expected is None else expected)


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        operation
        for methods in document["paths"].values()
        for operation in methods.values()
        if isinstance(operation, dict) and "operationId" in operation
    ]


def _carried(document: dict[str, Any], operation: dict[str, Any], key: str) -> set[str]:
    """Input fields the operation carries: its parameters and its body's fields."""
    properties = REGISTRY.actions[key].input_schema.get("properties", {})
    carried = {parameter["name"] for parameter in operation.get("parameters", [])}
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body:
        name = body["schema"]["$ref"].rsplit("/", 1)[-1]
        schema = document["components"]["schemas"][name]
        carried |= set(schema.get("properties", {})) & set(properties)
        # A body that is one input field (such as contact) carries that field.
        carried |= {field for field, sub in properties.items() if sub == schema}
        if "properties" not in schema and schema.get("type") == "object":
            carried |= set(properties)
    return carried


@pytest.fixture(scope="module")
def documents() -> dict[str, Any]:
    files = generate("openapi")
    return {name: json.loads(text) for name, text in files.items() if name.endswith(".json")}


def test_no_exported_operation_promises_what_only_the_runner_does(documents):
    document = documents["openapi.json"]
    swagger = documents["powerautomate/apiDefinition.swagger.json"]
    by_id = {op["operationId"]: op for op in _operations(swagger)}
    offences = {}
    changed = 0
    for operation in _operations(document):
        key = operation["operationId"]
        properties = REGISTRY.actions[key].input_schema.get("properties", {})
        missing = sorted(set(properties) - _carried(document, operation, key))
        for text in (operation["description"], by_id.get(operation_id(key), {}).get("description")):
            if text and runner_only_mentions(text, missing):
                offences[key] = runner_only_mentions(text, missing)
        changed += operation["description"] != " ".join(REGISTRY.actions[key].description.split())
    assert offences == {}
    # The twelve of the issue (nine paged lists, three downloads) and more were rewritten.
    assert changed >= 12


def test_the_module_texts_do_carry_runner_only_promises():
    """The check has something to find: the modules' own texts carry such phrases."""
    texts = " ".join(action.description for action in REGISTRY.actions.values()).lower()
    assert sum(phrase in " ".join(texts.split()) for phrase in RUNNER_ONLY) >= 8


def test_zapier_and_n8n_describe_no_file_saved_here_nor_a_hook_or_warning():
    """The apps run the module's plan (paging, limit, filters hold) but save no file on this
    machine and run no hook, check or warning: their descriptions say nothing of those."""
    from practiceflow.export.descriptions import LOCAL_ONLY
    from practiceflow.export.expression_tree import local_fields

    zapier = json.loads(generate("zapier")["definition.json"])
    node = generate("n8n")["nodes/Practiceflow/Practiceflow.node.ts"]
    seen = 0
    for kind in ("searches", "creates"):
        for key, entry in zapier[kind].items():
            if key not in REGISTRY.actions:
                continue
            local = local_fields(REGISTRY.actions[key])
            text = entry["display"]["description"]
            assert runner_only_mentions(text, local, LOCAL_ONLY) == [], key
            seen += 1
    assert seen >= 40
    for phrase in LOCAL_ONLY:
        assert phrase not in node.lower()
    assert "saveTo" not in node
