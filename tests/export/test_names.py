"""No generated name collides with another, or with a platform's own, in any export.

Walks every export the way each platform reads it: Zapier's operation keys and field keys
(line-item children included), n8n's node parameters (two parameters of one name must never
be shown together, so a module input can never shadow a node's own selector), and Power
Automate's operations (operationIds, and the parameters and body fields of one operation,
which its designer shows in one form).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from practiceflow.export import generate
from practiceflow.export.n8n import node_descriptions
from practiceflow.manifest import default_registry, load_connector


def _dupes(names: list[str]) -> list[str]:
    return sorted(name for name, count in Counter(names).items() if count > 1)


def test_zapier_keys_are_unique_per_kind_and_fields_per_operation():
    definition = json.loads(generate("zapier")["definition.json"])
    everything: list[str] = []
    for kind in ("creates", "searches", "triggers"):
        items = definition[kind]
        assert all(key == item["key"] for key, item in items.items())
        everything.extend(items)
        for key, item in items.items():
            fields = item["inputFields"]
            assert _dupes([field["key"] for field in fields]) == [], f"{kind}.{key}"
            for field in fields:
                children = [child["key"] for child in field.get("children", [])]
                assert _dupes(children) == [], f"{kind}.{key}.{field['key']}"
            outputs = [field["key"] for field in item["outputFields"]]
            assert _dupes(outputs) == [], f"{kind}.{key} output fields"
    # Zapier's UI and its CLI name operations by key; a search and a create of one key
    # would be told apart only by kind, so keep them apart altogether.
    assert _dupes(everything) == []


def _shown_together(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two n8n parameters can be visible at once (no displayOptions key separates them)."""
    show_a = (a.get("displayOptions") or {}).get("show") or {}
    show_b = (b.get("displayOptions") or {}).get("show") or {}
    for name in set(show_a) & set(show_b):
        if not set(map(str, show_a[name])) & set(map(str, show_b[name])):
            return False
    return True


def _collections(params: list[Mapping[str, Any]]) -> Iterator[tuple[str, list[Any]]]:
    for param in params:
        if param.get("type") in ("collection", "fixedCollection"):
            yield param["name"], list(param.get("options") or [])


def test_n8n_parameters_never_shadow_one_another():
    nodes = node_descriptions(default_registry(), load_connector())
    assert set(nodes) == {"Practiceflow", "PracticeflowTrigger", "PracticeflowPollTrigger"}
    for node, description in nodes.items():
        params = description["properties"]
        for index, first in enumerate(params):
            for second in params[index + 1 :]:
                if first["name"] == second["name"]:
                    assert not _shown_together(first, second), (
                        f"{node}: two parameters named {first['name']!r} can be shown together"
                    )
        for name, options in _collections(params):
            assert _dupes([option["name"] for option in options]) == [], f"{node}.{name}"


def test_the_any_webhook_event_input_is_not_the_trigger_selector():
    description = node_descriptions(default_registry(), load_connector())["PracticeflowTrigger"]
    selector = description["properties"][0]
    assert selector["name"] == "trigger"
    assert "any_webhook_event" in [option["value"] for option in selector["options"]]
    event = [param for param in description["properties"] if param["name"] == "event"]
    shows = [param["displayOptions"]["show"]["trigger"] for param in event]
    assert ["any_webhook_event"] in shows


def _swagger() -> dict[str, Any]:
    return json.loads(generate("openapi")["powerautomate/apiDefinition.swagger.json"])


def test_power_automate_operation_ids_are_unique():
    ids = [
        operation["operationId"]
        for methods in _swagger()["paths"].values()
        for operation in methods.values()
        if isinstance(operation, dict) and "operationId" in operation
    ]
    assert _dupes(ids) == []


def _body_names(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> list[str]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        schema = definitions[ref.rsplit("/", 1)[1]]
    return list((schema.get("properties") or {}).keys())


@pytest.mark.parametrize("case_fold", [False, True])
def test_power_automate_form_fields_are_unique_per_operation(case_fold):
    swagger = _swagger()
    definitions = swagger.get("definitions", {})
    shared = swagger.get("parameters", {})
    for path, methods in swagger["paths"].items():
        for method, operation in methods.items():
            if not isinstance(operation, dict):
                continue
            names: list[str] = []
            for parameter in operation.get("parameters", []):
                if "$ref" in parameter:
                    parameter = shared[parameter["$ref"].rsplit("/", 1)[1]]
                if parameter["in"] == "body":
                    names.extend(_body_names(parameter["schema"], definitions))
                else:
                    names.append(parameter["name"])
            if case_fold:
                names = [name.casefold() for name in names]
            assert _dupes(names) == [], f"{method.upper()} {path}"
