"""The n8n exporter: the templates of ``templates/n8n`` filled in, plus the modules as data.

Nodes ``execute`` the plans rather than use declarative routing: n8n's routing expressions
cannot carry conditionals, ``{% set %}``, the omission rule, paging and output maps; one
interpreter of the plans (as in the Zapier export) keeps every platform faithful.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from practiceflow import __version__
from practiceflow.export.descriptions import plan_description
from practiceflow.export.exporter import template_text, translated
from practiceflow.export.expression_tree import platform_input
from practiceflow.export.n8n_params import (
    camel,
    collision,
    describe,
    first_sentence,
    parameters,
    return_all_parameters,
    sentence_case,
    title_case,
    ts,
)
from practiceflow.export.schemas import ChoiceLists, form_fields
from practiceflow.export.zapier import auth_settings, paging_settings, webhook_settings
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.manifest.module_registry import ModuleRegistry

#: Files copied verbatim from ``templates/n8n``.
_STATIC = (
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "eslint.config.mjs",
    "shared/expr.ts",
    "shared/runtime.ts",
    "shared/methods.ts",
    "nodes/Practiceflow/practiceflow.svg",
    "nodes/Practiceflow/practiceflow.dark.svg",
    "test/package.test.js",
)

#: Pages a list action or a poll reads at most.
MAX_PAGES = 50


def _resource(action: ActionModule) -> str:
    return camel(action.noun)


def _singular(noun: str) -> str:
    """A resource's display name: n8n wants nouns in the singular (``Settings`` -> ``Setting``)."""
    name = title_case(noun)
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def _slim(schema: Any) -> Any:
    """An input schema with only what the runtime reads to type values (no texts, examples)."""
    keep = ("type", "properties", "items", "$defs", "$ref", "required", "enum", "format")
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in ("properties", "$defs") and isinstance(value, Mapping):
                out[key] = {name: _slim(sub) for name, sub in value.items()}
            elif key in keep:
                out[key] = _slim(value) if key == "items" else value
        return out
    return schema


def _returns_all(action: ActionModule) -> bool:
    """A list action with a ``limit`` field: its node offers n8n's *Return All*."""
    spec = action.extensions.list
    fields = action.input_schema.get("properties", {})
    return spec is not None and spec.limit is not None and "limit" in fields


def _selector(
    label: str, name: str, options: list[dict[str, Any]], required: bool = False, **extra: Any
) -> dict[str, Any]:
    """The options parameter choosing a node's resource, operation or event (first: default)."""
    head = {"displayName": label, "name": name, "type": "options"}
    return (
        head
        | ({"required": True} if required else {})
        | {"noDataExpression": True, **extra, "options": options, "default": options[0]["value"]}
    )


def _action_node(
    actions: Mapping[str, ActionModule], lists: ChoiceLists
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Resource, operation and input parameters; and each action's top-level names."""
    by_resource: dict[str, list[ActionModule]] = {}
    nouns: dict[str, str] = {}
    for action in actions.values():
        by_resource.setdefault(_resource(action), []).append(action)
        nouns[_resource(action)] = action.noun
    resources = sorted(by_resource, key=lambda key: nouns[key].lower())
    options = [{"name": _singular(nouns[key]), "value": key} for key in resources]
    params = [_selector("Resource", "resource", options)]
    fields: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    for resource in resources:
        group = sorted(by_resource[resource], key=lambda action: action.title.lower())
        options = [
            {
                "name": title_case(action.title),
                "value": action.key,
                "description": first_sentence(plan_description(action)),
                "action": sentence_case(action.title),
            }
            for action in group
        ]
        shown = {"show": {"resource": [resource]}}
        params.append(_selector("Operation", "operation", options, displayOptions=shown))
        for action in group:
            show = {"resource": [resource], "operation": [action.key]}
            own, names = parameters(form_fields(platform_input(action)), show, lists)
            if _returns_all(action):
                own[len(names) : len(names)] = return_all_parameters(own, show)
            inputs.extend(own)
            fields[action.key] = names
    return params + inputs, fields


def _event_parameters(
    triggers: Mapping[str, TriggerModule], what: str, lists: ChoiceLists
) -> list[dict[str, Any]]:
    ordered = sorted(triggers.values(), key=lambda trigger: trigger.title.lower())
    options = [
        {
            "name": title_case(trigger.title),
            "value": trigger.key,
            "description": first_sentence(trigger.description),
        }
        for trigger in ordered
    ]
    described = {"description": describe(f"Which event {what}")}
    params = [_selector("Trigger On", "trigger", options, required=True, **described)]
    for trigger in ordered:
        own, _names = parameters(
            form_fields(trigger.input_schema), {"trigger": [trigger.key]}, lists
        )
        params.extend(own)
    return params


def _credentials_file(connector: Mapping[str, Any]) -> str:
    """The credential: its template with the regions, headers and credential check filled in."""
    auth = auth_settings(connector)
    regions = auth["regions"]
    published = {key: region["base_url"] for key, region in regions.items() if region["base_url"]}
    base = f"={{{{ ($credentials.baseUrl || {json.dumps(published)}[$credentials.region] || '')"
    values = {
        "REGIONS": ts(
            [{"name": region["title"], "value": key} for key, region in regions.items()], 3
        ),
        "REGION": ts(next(iter(regions))),
        "BASE_URL_REQUIRED": ts(len(published) < len(regions)),
        "CLIENT_ID_HEADER": ts(auth["headers"]["client_id"]),
        "CLIENT_SECRET_HEADER": ts(auth["headers"]["client_secret"]),
        "BASE_URL": ts(base + ".replace(/\\/+$/, '') }}"),
        "VALIDATE_PATH": ts(auth["validate_path"]),
        "VALIDATE_METHOD": ts(connector["auth"]["validate"]["method"]),
    }
    source = template_text("n8n", "credentials/PracticeflowApi.credentials.ts.in")
    for name, value in values.items():
        source = source.replace(f"/*{name}*/", value)
    return source


def n8n_files(modules: ModuleRegistry, connector: Mapping[str, Any]) -> dict[str, str]:
    """The n8n community node package: actions node, webhook trigger, polling trigger."""
    return _build(modules, connector)[0]


def node_descriptions(
    modules: ModuleRegistry, connector: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """The parameters (``properties``) of each generated node's description, by class."""
    return _build(modules, connector)[1]


def _build(
    modules: ModuleRegistry, connector: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    actions, triggers, plans, skipped = translated(modules, collision)
    lists = ChoiceLists(modules, actions, triggers.values())
    hooks = {key: t for key, t in triggers.items() if t.webhook is not None}
    polls = {key: t for key, t in triggers.items() if t.poll is not None}
    properties, fields = _action_node(actions, lists)
    definition = {
        "version": __version__,
        "choices": {name: source.as_data() for name, source in lists.sources.items()},
        "auth": auth_settings(connector),
        "actions": {
            key: {
                "key": key,
                "resource": _resource(action),
                "fields": fields[key],
                "returnAll": _returns_all(action),
                "inputSchema": _slim(platform_input(action)),
                "plan": plans[f"actions/{key}"],
            }
            for key, action in sorted(actions.items())
        },
        "triggers": {
            key: {
                "key": key,
                "title": trigger.title,
                "inputSchema": _slim(trigger.input_schema),
                **plans[f"triggers/{key}"],
            }
            for key, trigger in sorted(triggers.items())
        },
        "skipped": skipped,
        "paging": paging_settings(connector, MAX_PAGES),
        "webhooks": webhook_settings(
            connector, signature_prefix=connector["webhooks"].get("signature_prefix", "sha256=")
        ),
    }
    out = {name: template_text("n8n", name) for name in _STATIC}
    source = template_text("n8n", "shared/definition.ts.in")
    out["shared/definition.ts"] = source.replace("/*DEFINITION*/", ts(definition))
    out["credentials/PracticeflowApi.credentials.ts"] = _credentials_file(connector)
    nodes = {
        "Practiceflow": properties,
        "PracticeflowTrigger": _event_parameters(hooks, "to subscribe to", lists),
        "PracticeflowPollTrigger": _event_parameters(polls, "to watch for (polled)", lists),
    }
    for name, params in nodes.items():
        source = template_text("n8n", f"nodes/Practiceflow/{name}.node.ts.in")
        out[f"nodes/Practiceflow/{name}.node.ts"] = source.replace("/*PROPERTIES*/", ts(params, 2))
    out[".gitignore"] = "node_modules/\ndist/\n"
    return out, {name: {"properties": params} for name, params in nodes.items()}
