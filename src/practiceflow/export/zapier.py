"""The Zapier exporter: ``definition.json`` (the modules as data) beside the fixed JavaScript
of ``templates/zapier`` that makes it the app Zapier loads (mapping: connectors/README.md).
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from typing import Any

from practiceflow import __version__
from practiceflow.errors import TemplateError
from practiceflow.export.descriptions import plan_description
from practiceflow.export.exporter import dump_json, template_text, translated
from practiceflow.export.expression_tree import action_plan, file_media_type, platform_input
from practiceflow.export.schemas import ChoiceLists, FormField, form_fields, main_type, resolve
from practiceflow.manifest.choices import ChoiceSource
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.manifest.module_registry import ModuleRegistry
from practiceflow.triggers.definition import DELIVERY_PREFIX

#: Files copied verbatim from ``templates/zapier``.
_STATIC = (
    "index.js",
    "lib/expr.js",
    "lib/runtime.js",
    "package.json",
    "package-lock.json",
    # The app's own tests travel with it, so `zapier-platform test` on an export runs them.
    "test/validate.test.js",
    "test/sandbox.test.js",
)

#: Pages a polling trigger reads per poll at most.
MAX_PAGES = 10
#: Seconds a webhook delivery's timestamp may be away from now.
TOLERANCE_SECONDS = 300


def is_create(action: ActionModule) -> bool:
    """Whether an action is exported as a create (it writes) rather than a search."""
    return action.kind == "create" or (action.kind is None and action.needs_write)


def _field(field: FormField, lists: ChoiceLists) -> dict[str, Any]:
    out: dict[str, Any] = {"key": field.key, "label": field.label, "required": field.required}
    if field.children:  # Zapier line items: children exclude helpText
        out["children"] = [_field(child, lists) for child in field.children]
        return out
    if field.help:
        out["helpText"] = field.help
    out["type"] = "text" if field.type == "json" else field.type
    if field.list:
        out["list"] = True
    dynamic = lists.name_of(field.source)
    if dynamic is not None:
        # A dynamic dropdown: the hidden trigger's results, value in id, label in label.
        out["dynamic"] = f"{dynamic}.id.label"
        out["altersDynamicFields"] = False
    elif field.choices:
        out["choices"] = [str(choice) for choice in field.choices]
    if field.default is not None and field.default != "":
        out["default"] = (
            str(field.default).lower() if field.type == "boolean" else str(field.default)
        )
    if field.example is not None and not isinstance(field.example, dict | list):
        out["placeholder"] = str(field.example)
    return out


_SAMPLE_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"))


def _sample_type(value: Any) -> str | None:
    return next((name for python, name in _SAMPLE_TYPES if isinstance(value, python)), None)


def _output_fields(schema: Mapping[str, Any], sample: Any) -> list[dict[str, Any]]:
    """Zapier output fields: the schema's scalar properties (an untyped one only where the
    sample shows a scalar, so the two never disagree), else the sample's scalar keys."""
    fields = []
    example = sample if isinstance(sample, Mapping) else {}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name, sub in properties.items():
        resolved = resolve(sub, schema)
        kind: str
        if "type" not in resolved and "$ref" not in sub:
            kind = _sample_type(example.get(name)) or "object"
        else:
            kind = main_type(resolved)
        if kind not in ("string", "integer", "number", "boolean"):
            continue
        zapier_type = "datetime" if resolved.get("format") == "date-time" else kind
        fields.append(
            {"key": name, "label": str(resolved.get("title") or name), "type": zapier_type}
        )
    for name, value in example.items():
        found = _sample_type(value)
        if name not in properties and found is not None:
            fields.append({"key": name, "label": name, "type": found})
    return fields


def _row_schema(action: ActionModule) -> Mapping[str, Any]:
    """The schema of one row of a list action's ``items`` (an empty object when unsaid)."""
    schema = action.output.schema
    items = resolve((schema.get("properties") or {}).get("items") or {}, schema)
    row = resolve(items.get("items") or {}, schema)
    return {**row, "$defs": schema.get("$defs", {})} if row.get("properties") else {}


def _action(action: ActionModule, lists: ChoiceLists, search: bool) -> dict[str, Any]:
    sample: Any = dict(action.sample)
    schema: Mapping[str, Any] = action.output.schema
    listed = search and action.extensions.list is not None and action.output.map is None
    if listed:
        # Zapier's searches return records ([] when nothing matches): the rows themselves,
        # plain values as {value}.
        row = (sample.get("items") or [{}])[0]
        sample = dict(row) if isinstance(row, Mapping) else {"value": row}
        schema = _row_schema(action)
    outputs = _output_fields(schema, sample)
    if action.extensions.download is not None:
        # The file travels as a Zapier file (a hydrated pointer), not as a local path.
        media = file_media_type(action)
        name = f"{action.key}{mimetypes.guess_extension(media) or ''}"
        sample = {"id": name, "fileName": name, "contentType": media, "file": name}
        outputs = [
            {"key": "file", "label": "File", "type": "file"},
            {"key": "fileName", "label": "File name", "type": "string"},
            {"key": "contentType", "label": "Content type", "type": "string"},
        ]
    return {
        "key": action.key,
        "noun": action.noun,
        "display": {"label": action.title, "description": plan_description(action)},
        "inputFields": [_field(field, lists) for field in form_fields(platform_input(action))],
        "outputFields": outputs,
        "sample": sample,
        "input_schema": platform_input(action),
        "plan": action_plan(action),
        "records": listed,
    }


def _sample_id(trigger: TriggerModule) -> str:
    """The id a trigger's sample would carry: its dedupe key, when the sample has the fields."""
    sample = dict(trigger.sample)
    if "id" in sample:
        return str(sample["id"])
    dedupe = (trigger.poll or {}).get("dedupe")
    if dedupe is not None and not isinstance(dedupe, str):
        try:
            value = dedupe.render({"item": sample, "input": {}, "now": "now"})
        except TemplateError:
            value = None
        if value is not None:
            return str(value)
    return f"{trigger.key}-sample"


def _choices_trigger(
    name: str, source: ChoiceSource, lists: ChoiceLists, modules: ModuleRegistry
) -> dict[str, Any]:
    """A hidden trigger that feeds a dynamic dropdown from a list action."""
    action = modules.action(source.action)
    options = lists.sample(name) or [("1", "Example")]
    value, label = options[0]
    return {
        "key": name,
        "noun": action.noun,
        "display": {
            "label": f"{action.title} (choices)",
            "description": f"Feeds the dropdowns that take a value from {action.title}.",
            "hidden": True,
        },
        "type": "choices",
        "inputFields": [],
        "outputFields": [
            {"key": "id", "label": "Value", "type": "string"},
            {"key": "label", "label": "Label", "type": "string"},
        ],
        "sample": {"id": str(value), "label": label},
        "choices": source.as_data(),
    }


def _trigger_unsupported(module: ActionModule | TriggerModule) -> str | None:
    """Why a trigger cannot be a Zapier trigger, or None (every action can be)."""
    if not isinstance(module, TriggerModule):
        return None
    known = (module.poll or {}).get("known")
    if module.webhook is None and known is not None and known.get("fire") == "known":
        return (
            "it fires for keys remembered by earlier polls (poll.known.fire: known); Zapier "
            "polling triggers keep no state between polls"
        )
    return None


def _trigger(trigger: TriggerModule, lists: ChoiceLists, plan: Any) -> dict[str, Any]:
    sample = {**trigger.sample, "id": _sample_id(trigger)}
    return {
        "key": trigger.key,
        "noun": trigger.noun,
        "display": {"label": trigger.title, "description": " ".join(trigger.description.split())},
        "type": "hook" if trigger.webhook else "polling",
        "inputFields": [_field(field, lists) for field in form_fields(trigger.input_schema)],
        "outputFields": [
            {"key": "id", "label": "Event id", "type": "string"},
            *(
                field
                for field in _output_fields(trigger.output_schema, trigger.sample)
                if field["key"] != "id"
            ),
        ],
        "sample": sample,
        "input_schema": dict(trigger.input_schema),
        "plan": plan,
    }


def auth_settings(connector: Mapping[str, Any]) -> dict[str, Any]:
    """The auth settings the JavaScript runtimes of Zapier and n8n read."""
    header = connector["auth"]["methods"]["header"]
    regions = sorted(connector["regions"].items())
    return {
        "headers": {
            "client_id": header["client_id_header"],
            "client_secret": header["client_secret_header"],
        },
        "regions": {
            key: {
                "title": region["title"],
                "base_url": url if (url := region["base_url"]).startswith("https://") else None,
            }
            for key, region in regions
        },
        "validate_path": connector["auth"]["validate"]["path"],
    }


def paging_settings(connector: Mapping[str, Any], max_pages: int, *also: str) -> dict[str, Any]:
    """The paging settings the runtimes read (``also``: more keys of the manifest's paging)."""
    paging = connector["paging"]
    settings = {
        "cursor_param": paging.get("cursor_param", "lastUpdated"),
        "fixed_size": sorted(paging["fixed_size"]),
        "has_more_field": paging.get("has_more_field", "hasMore"),
        "max_pages": max_pages,
        "page_max": paging["page_max"],
        "page_param": paging["page_param"],
        "size_param": paging["size_param"],
    } | {key: paging[key] for key in also}
    return dict(sorted(settings.items()))


def webhook_settings(connector: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """The webhook settings the runtimes read."""
    hooks = connector["webhooks"]
    return {
        "delivery_prefix": DELIVERY_PREFIX,
        "headers": hooks["headers"],
        "subscribe": hooks["subscribe"],
        **extra,
        "tolerance_seconds": TOLERANCE_SECONDS,
    }


def _auth(connector: Mapping[str, Any]) -> dict[str, Any]:
    settings = auth_settings(connector)
    regions = settings["regions"]
    published = all(region["base_url"] for region in regions.values())
    return {
        **settings,
        "connection_label": "{{bundle.inputData.clientName}}",
        "fields": [
            {
                "key": "client_id",
                "label": "Client ID",
                "required": True,
                "type": "string",
                "helpText": "The API client's Client ID (a GUID) from the practice settings.",
            },
            {
                "key": "client_secret",
                "label": "Client secret",
                "required": True,
                "type": "password",
                "helpText": "The API client's secret; ask the practice administrator.",
            },
            {
                "key": "region",
                "label": "Region",
                "required": True,
                "type": "string",
                "default": next(iter(regions)),
                "choices": {key: region["title"] for key, region in regions.items()},
                "helpText": "The region the practice is tied to; each region has its own host.",
            },
            {
                "key": "base_url",
                "label": "Base URL",
                "required": not published,
                "type": "string",
                "helpText": "The practice's regional base URL (without /api/v1). The API does "
                "not publish the regional hosts, so ask the practice for it.",
            },
        ],
    }


def zapier_files(modules: ModuleRegistry, connector: Mapping[str, Any]) -> dict[str, str]:
    """The Zapier CLI app: creates, searches, REST hook and polling triggers."""
    actions, kept, plans, skipped = translated(modules, _trigger_unsupported)
    lists = ChoiceLists(modules, actions, kept.values())
    creates = {k: _action(a, lists, False) for k, a in actions.items() if is_create(a)}
    searches = {k: _action(a, lists, True) for k, a in actions.items() if not is_create(a)}
    triggers = {
        key: _trigger(trigger, lists, plans[f"triggers/{key}"]) for key, trigger in kept.items()
    }
    for name, source in lists.sources.items():
        triggers[name] = _choices_trigger(name, source, lists, modules)
    definition = {
        "title": connector["title"],
        "version": __version__,
        "auth": _auth(connector),
        "creates": creates,
        "searches": searches,
        "skipped": skipped,
        "triggers": triggers,
        "paging": paging_settings(connector, MAX_PAGES, "size_default"),
        "webhooks": webhook_settings(connector),
    }
    out = {name: template_text("zapier", name) for name in _STATIC}
    out["definition.json"] = dump_json(definition)
    out[".gitignore"] = "node_modules/\n"
    return out
