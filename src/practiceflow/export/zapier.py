"""The Zapier exporter: a Zapier CLI app (``zapier-platform-core``) built from the modules.

What is generated (``connectors/zapier/``):

* ``definition.json``: the modules as data: auth fields, every create/search/trigger with its
  display text, input fields, output fields, sample and portable request plan
  (:mod:`practiceflow.export.plan`);
* ``index.js``, ``lib/runtime.js``, ``lib/expr.js``: the fixed JavaScript that turns the
  definition into the app object Zapier loads (shipped with this package under
  ``templates/zapier``);
* ``package.json`` and ``package-lock.json`` pinning ``zapier-platform-core``.

Mapping: an action that writes (``needs_write`` or ``kind: create``) becomes a *create*; any
other action becomes a *search* (its result as a one-item list). A trigger with a ``webhook``
section becomes a REST hook (``performSubscribe`` posts ``bundle.targetUrl``,
``performUnsubscribe`` deletes the subscription, ``perform`` verifies the signature and maps
the delivery, ``performList`` reads the poll definition); a poll-only trigger becomes a
polling trigger. Every trigger result carries ``id`` (the poll ``dedupe`` key or the delivery's
event id), which is what Zapier deduplicates on.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.resources import files
from typing import Any

from practiceflow import __version__
from practiceflow.errors import ManifestError, TemplateError
from practiceflow.export.base import Exporter, dump_json, register
from practiceflow.export.plan import action_plan, trigger_plan, unsupported
from practiceflow.export.schemas import FormField, form_fields, main_type, resolve
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.manifest.registry import ModuleRegistry
from practiceflow.triggers.definition import DELIVERY_PREFIX

__all__ = ["ZapierExporter", "is_create"]

#: Files copied verbatim from ``templates/zapier``.
_STATIC = ("index.js", "lib/expr.js", "lib/runtime.js", "package.json", "package-lock.json")

#: Pages a polling trigger reads per poll at most.
MAX_PAGES = 10
#: Seconds a webhook delivery's timestamp may be away from now.
TOLERANCE_SECONDS = 300

_FIELD_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "datetime": "datetime",
    "json": "text",
}


def template_text(platform: str, name: str) -> str:
    """Read one static file shipped under ``practiceflow/export/templates/PLATFORM``.

    Args:
        platform: the template folder (``zapier``, ``n8n``).
        name: the relative path inside it.

    Returns:
        The text.
    """
    node = files("practiceflow.export").joinpath("templates", platform, *name.split("/"))
    return node.read_text(encoding="utf-8")


def is_create(action: ActionModule) -> bool:
    """Whether an action is exported as a create (it writes) rather than a search."""
    return action.kind == "create" or (action.kind is None and action.needs_write)


def _field(field: FormField) -> dict[str, Any]:
    out: dict[str, Any] = {"key": field.key, "label": field.label, "required": field.required}
    if field.children:  # Zapier line items: children exclude helpText
        out["children"] = [_field(child) for child in field.children]
        return out
    if field.help:
        out["helpText"] = field.help
    out["type"] = _FIELD_TYPES[field.type]
    if field.list:
        out["list"] = True
    if field.choices:
        out["choices"] = [str(choice) for choice in field.choices]
    if field.default is not None and field.default != "":
        out["default"] = (
            str(field.default).lower() if field.type == "boolean" else str(field.default)
        )
    if field.example is not None and not isinstance(field.example, dict | list):
        out["placeholder"] = str(field.example)
    return out


def _output_fields(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    fields = []
    for name, sub in (schema.get("properties") or {}).items():
        resolved = resolve(sub, schema)
        kind = main_type(resolved)
        if kind not in ("string", "integer", "number", "boolean"):
            continue
        zapier_type = "datetime" if resolved.get("format") == "date-time" else kind
        fields.append(
            {"key": name, "label": str(resolved.get("title") or name), "type": zapier_type}
        )
    return fields


def _display(module: ActionModule | TriggerModule) -> dict[str, Any]:
    return {"label": module.title, "description": " ".join(module.description.split())}


def _action(action: ActionModule) -> dict[str, Any]:
    return {
        "key": action.key,
        "noun": action.noun,
        "display": _display(action),
        "inputFields": [_field(field) for field in form_fields(action.input_schema)],
        "outputFields": _output_fields(action.output.schema),
        "sample": dict(action.sample),
        "input_schema": dict(action.input_schema),
        "plan": action_plan(action),
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


def _trigger_unsupported(trigger: TriggerModule) -> str | None:
    """Why a trigger cannot be a Zapier trigger, or None."""
    known = (trigger.poll or {}).get("known")
    if trigger.webhook is None and known is not None and known.get("fire") == "known":
        return (
            "it fires for keys remembered by earlier polls (poll.known.fire: known); Zapier "
            "polling triggers keep no state between polls"
        )
    return None


def _trigger(trigger: TriggerModule) -> dict[str, Any]:
    sample = {**trigger.sample, "id": _sample_id(trigger)}
    return {
        "key": trigger.key,
        "noun": trigger.noun,
        "display": _display(trigger),
        "type": "hook" if trigger.webhook else "polling",
        "inputFields": [_field(field) for field in form_fields(trigger.input_schema)],
        "outputFields": [
            {"key": "id", "label": "Event id", "type": "string"},
            *_output_fields(trigger.output_schema),
        ],
        "sample": sample,
        "input_schema": dict(trigger.input_schema),
        "plan": trigger_plan(trigger),
    }


def _auth(connector: Mapping[str, Any]) -> dict[str, Any]:
    regions = {
        key: {
            "title": region["title"],
            "base_url": region["base_url"] if region["base_url"].startswith("https://") else None,
        }
        for key, region in sorted(connector["regions"].items())
    }
    published = all(region["base_url"] for region in regions.values())
    header = connector["auth"]["methods"]["header"]
    return {
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
        "headers": {
            "client_id": header["client_id_header"],
            "client_secret": header["client_secret_header"],
        },
        "regions": regions,
        "validate_path": connector["auth"]["validate"]["path"],
    }


@register
class ZapierExporter(Exporter):
    """Zapier CLI app (creates, searches, REST hook and polling triggers)."""

    name = "zapier"
    summary = "Zapier CLI app on zapier-platform-core"

    def files(self, modules: ModuleRegistry, connector: Mapping[str, Any]) -> dict[str, str]:
        """Build the app (see the module docstring for the layout and mapping).

        Args:
            modules: the loaded actions and triggers.
            connector: the connector manifest as data.

        Returns:
            Relative path -> text.

        Raises:
            ManifestError: a module template cannot be exported.
        """
        skipped: dict[str, str] = {}
        creates: dict[str, Any] = {}
        searches: dict[str, Any] = {}
        triggers: dict[str, Any] = {}
        for key, action in sorted(modules.actions.items()):
            reason = unsupported(action)
            if reason is None:
                try:
                    table = creates if is_create(action) else searches
                    table[key] = _action(action)
                    continue
                except ManifestError as exc:
                    reason = str(exc.issues[0])
            skipped[f"actions/{key}"] = reason
        for key, trigger in sorted(modules.triggers.items()):
            reason = _trigger_unsupported(trigger)
            if reason is None:
                try:
                    triggers[key] = _trigger(trigger)
                    continue
                except ManifestError as exc:
                    reason = str(exc.issues[0])
            skipped[f"triggers/{key}"] = reason
        paging = connector["paging"]
        hooks = connector["webhooks"]
        definition = {
            "title": connector["title"],
            "version": __version__,
            "auth": _auth(connector),
            "creates": creates,
            "searches": searches,
            "skipped": skipped,
            "triggers": triggers,
            "paging": {
                "cursor_param": paging.get("cursor_param", "lastUpdated"),
                "fixed_size": sorted(paging["fixed_size"]),
                "has_more_field": paging.get("has_more_field", "hasMore"),
                "max_pages": MAX_PAGES,
                "page_max": paging["page_max"],
                "page_param": paging["page_param"],
                "size_default": paging["size_default"],
                "size_param": paging["size_param"],
            },
            "webhooks": {
                "delivery_prefix": DELIVERY_PREFIX,
                "headers": hooks["headers"],
                "subscribe": hooks["subscribe"],
                "tolerance_seconds": TOLERANCE_SECONDS,
            },
        }
        out = {name: template_text("zapier", name) for name in _STATIC}
        out["definition.json"] = dump_json(definition)
        out[".gitignore"] = "node_modules/\n"
        return out
