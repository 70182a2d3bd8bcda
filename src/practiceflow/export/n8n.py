"""The n8n exporter: a community node package (TypeScript) built from the modules.

What is generated (``connectors/n8n/``), in n8n's community-node layout:

* ``credentials/PracticeflowApi.credentials.ts``: Client ID, secret, region and base URL;
  generic header auth (``X-SVC-Auth-ID`` / ``X-SVC-Auth-Key``) and a credential test that
  calls ``GET /api/v1/auth/validate``;
* ``nodes/Practiceflow/Practiceflow.node.ts``: one node, resource (the module's noun) /
  operation (the action), required inputs as parameters and optional ones under
  *Additional Fields*;
* ``nodes/Practiceflow/PracticeflowTrigger.node.ts``: the webhook triggers, with
  ``webhookMethods`` checkExists / create / delete (subscription id and secret kept in the
  node's static data) and a ``webhook`` method that verifies ``X-Svc-Signature``;
* ``nodes/Practiceflow/PracticeflowPollTrigger.node.ts``: the poll triggers, cursor and
  known keys kept in the node's static data;
* ``shared/definition.ts``: the modules as data (input schemas and the portable request
  plans of :mod:`practiceflow.export.plan`);
* fixed files from ``templates/n8n``: ``shared/expr.ts`` and ``shared/runtime.ts`` (the
  interpreter of the plans), ``package.json`` / ``package-lock.json``, ``tsconfig.json``,
  ``eslint.config.mjs`` and the icons.

Why ``execute`` rather than declarative routing: module templates carry conditionals,
``{% set %}``, filters, the omission rule (a leaf that renders null is left out), list
paging with filters and limits, and output maps. n8n's routing expressions could express
only part of that and each module would need its own hand-made ``preSend`` / ``postReceive``
hooks; one small interpreter of the plans (the same one the Zapier export runs) keeps every
platform faithful to the modules. The credential's auth and test *are* declarative, and
every request goes through ``httpRequestWithAuthentication``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from practiceflow import __version__
from practiceflow.errors import ManifestError
from practiceflow.export.base import Exporter, register
from practiceflow.export.dropdowns import ChoiceLists
from practiceflow.export.plan import action_plan, trigger_plan, unsupported
from practiceflow.export.schemas import FormField, form_fields
from practiceflow.export.zapier import TOLERANCE_SECONDS, template_text
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.manifest.registry import ModuleRegistry
from practiceflow.triggers.definition import DELIVERY_PREFIX

__all__ = ["N8nExporter"]

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
)

#: Pages a list action or a poll reads at most.
MAX_PAGES = 50
#: The credential type's name (n8n links nodes to credentials by it).
CREDENTIAL = "practiceflowApi"
_ICON = {"light": "file:practiceflow.svg", "dark": "file:practiceflow.dark.svg"}
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
# n8n's lint checks display names with the npm ``title-case`` package and actions with
# ``sentence-case``; these patterns follow that package's documented rules.
_SMALL_WORDS = re.compile(
    r"\b(?:an?d?|a[st]|because|but|by|en|for|i[fn]|neither|nor|o[fnr]|only|over|per|so|some"
    r"|tha[tn]|the|to|up|upon|vs?\.?|versus|via|when|with|without|yet)\b",
    re.IGNORECASE,
)
_TOKENS = re.compile(r"[^\s:\u2013\u2014-]+|.", re.DOTALL)
_MANUAL_CASE = re.compile(r".(?=[A-Z]|\..)")
_WORD_CHAR = re.compile(r"[A-Za-z0-9\u00C0-\u00FF]")
#: Words n8n wants in capitals wherever they appear (``Id`` -> ``ID``, ``Url`` -> ``URL``).
_ACRONYMS = (
    (re.compile(r"\b[iI]d(s?)\b"), r"ID\1"),
    (re.compile(r"\b[uU]rl(s?)\b"), r"URL\1"),
    (re.compile(r"\b[jJ]son\b"), "JSON"),
)


class _Raw(str):
    """TypeScript source emitted verbatim (an identifier, not a string literal)."""


_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(text: str) -> str:
    """A single-quoted TypeScript string literal (no needless escapes)."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "'" + "".join(out) + "'"


def ts(value: Any, indent: int = 0) -> str:
    """A JSON-like value as a TypeScript literal (tabs, single quotes, bare keys).

    Args:
        value: JSON-compatible data; :class:`_Raw` strings are emitted verbatim.
        indent: the current nesting depth.

    Returns:
        The source text.
    """
    pad = "\t" * (indent + 1)
    end = "\t" * indent
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if value is None:
        return "null"
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        lines = []
        for key, child in value.items():
            name = key if _IDENT.match(key) else _string(key)
            lines.append(f"{pad}{name}: {ts(child, indent + 1)},")
        return "{\n" + "\n".join(lines) + "\n" + end + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        if all(not isinstance(item, Mapping | list | tuple) for item in value):
            inline = "[" + ", ".join(ts(item) for item in value) + "]"
            if len(inline) < 80:
                return inline
        lines = [f"{pad}{ts(item, indent + 1)}," for item in value]
        return "[\n" + "\n".join(lines) + "\n" + end + "]"
    message = f"cannot write {type(value).__name__} as TypeScript"
    raise TypeError(message)


def _acronyms(text: str) -> str:
    for pattern, replacement in _ACRONYMS:
        text = pattern.sub(replacement, text)
    return text


def title_case(text: str) -> str:
    """Title Case as n8n display names use it.

    Small words stay lower case except first and last; words with capitals inside
    (``eForm``, ``ID``) are kept; each part of a hyphenated word is capitalised.

    Args:
        text: a label such as ``Client entity id``.

    Returns:
        ``Client Entity ID``.
    """
    text = _acronyms(" ".join(text.split()))
    out = []
    for match in _TOKENS.finditer(text):
        token, index = match.group(0), match.start()
        small = _SMALL_WORDS.search(token) is not None
        at_edge = index == 0 or index + len(token) == len(text)
        if not _MANUAL_CASE.search(token) and (not small or at_edge):
            token = _WORD_CHAR.sub(lambda m: m.group(0).upper(), token, count=1)
        out.append(token)
    return "".join(out)


def sentence_case(text: str) -> str:
    """An operation's ``action`` text: words lower case (acronyms kept), first one capitalised.

    Args:
        text: a title such as ``List practice-management staff``.

    Returns:
        ``List practice management staff``.
    """
    words = [word for word in re.split(r"[^A-Za-z0-9]+", text) if word]
    kept = [word if word.isupper() and len(word) > 1 else word.lower() for word in words]
    joined = " ".join(kept)
    return joined[:1].upper() + joined[1:]


def describe(text: str) -> str:
    """A parameter description as n8n's lint wants it.

    One line, first letter capitalised, ``ID`` / ``URL`` / ``JSON`` in capitals, no final
    period on a single sentence and a final period on several.

    Args:
        text: the module's description or help text.

    Returns:
        The description.
    """
    flat = _acronyms(" ".join(text.split()).strip())
    if not flat:
        return flat
    flat = flat[:1].upper() + flat[1:]
    single = len(flat.replace("e.g.", "", 1).split(". ")) == 1
    if single:
        return flat.rstrip(".")
    return flat if flat.endswith((".", "!", "?")) else flat + "."


def _camel(text: str) -> str:
    words = re.split(r"[^A-Za-z0-9]+", text)
    words = [word for word in words if word]
    return words[0].lower() + "".join(word[:1].upper() + word[1:] for word in words[1:])


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", flat)
    return describe(match.group(1) if match else flat)


# ---- parameters --------------------------------------------------------------------------


def _json_default(field: FormField) -> str:
    if field.example is not None and isinstance(field.example, dict | list):
        return json.dumps(field.example, ensure_ascii=False)
    return "[]" if field.children else ""


#: n8n's wording for a dynamic option list (its lint checks name and description).
_DYNAMIC_HELP = (
    'Choose from the list, or specify {what} using an <a href="https://docs.n8n.io/code/'
    'expressions/">expression</a>'
)
#: Parameters each node has of its own; a module field of the same name would collide.
RESERVED = {
    "action": frozenset({"resource", "operation", "additionalFields"}),
    "trigger": frozenset({"trigger", "additionalFields"}),
}


def _dynamic(field: FormField, name: str, param: dict[str, Any]) -> None:
    """Make ``param`` a dropdown filled by the ``name`` methods (a search for large lists)."""
    source = field.source
    if source is not None and source.search and not field.list:
        param["type"] = "resourceLocator"
        param["default"] = {"mode": "list", "value": ""}
        param["modes"] = [
            {
                "displayName": "From List",
                "name": "list",
                "type": "list",
                "typeOptions": {"searchListMethod": name, "searchable": True},
            },
            {"displayName": "By ID", "name": "id", "type": "string", "placeholder": "e.g. 12"},
        ]
        return
    param["displayName"] += " Names or IDs" if field.list else " Name or ID"
    param["type"] = "multiOptions" if field.list else "options"
    param["typeOptions"] = {"loadOptionsMethod": name}
    param["default"] = [] if field.list else ""


def _parameter(
    field: FormField, show: Mapping[str, list[str]] | None, lists: ChoiceLists
) -> dict[str, Any]:
    """One input field as an n8n parameter (``show`` is None inside a collection)."""
    param: dict[str, Any] = {"displayName": title_case(field.label), "name": field.key}
    description = field.help
    kind = field.type
    dynamic = lists.name_of(field.source) if not field.children else None
    if dynamic is not None:
        _dynamic(field, dynamic, param)
        if param["type"] != "resourceLocator":
            description = _DYNAMIC_HELP.format(what="IDs" if field.list else "an ID")
    elif field.choices:
        options = [{"name": title_case(str(choice)), "value": choice} for choice in field.choices]
        options.sort(key=lambda option: str(option["name"]).lower())
        param["type"] = "multiOptions" if field.list else "options"
        param["options"] = options
        if field.list:
            param["default"] = []
        elif field.default is not None:
            param["default"] = field.default
        else:
            param["default"] = options[0]["value"]
    elif kind == "boolean":
        param["type"] = "boolean"
        param["default"] = bool(field.default) if field.default is not None else False
    elif kind in ("integer", "number") and not field.list:
        param["type"] = "number"
        param["default"] = field.default if isinstance(field.default, int | float) else 0
    elif kind == "datetime" and not field.list:
        param["type"] = "dateTime"
        param["default"] = ""
    elif kind == "json":
        param["type"] = "json"
        param["default"] = _json_default(field)
        if field.children:
            names = ", ".join(child.key for child in field.children)
            description = f"{description} A JSON list of objects with: {names}.".strip()
    else:
        param["type"] = "string"
        param["default"] = "" if field.default is None else str(field.default)
        if field.list:
            description = f"{description} Separate several values with commas.".strip()
    if param["type"] == "boolean":
        # n8n's convention: a boolean's description starts with "Whether".
        description = f"Whether to set {param['displayName']} (true) or not. {description}"
    if field.key == "limit" and param["type"] == "number":
        # n8n's convention for a result limit (its lint checks all three).
        param["typeOptions"] = {"minValue": 1}
        param["default"] = 50
        description = "Max number of results to return"
    if field.required and show is not None:
        param["required"] = True
    if description and description.startswith("Choose from the list"):
        param["description"] = description
    elif description:
        param["description"] = describe(description)
    example = field.example
    textual = param["type"] in ("string", "dateTime") and dynamic is None
    if textual and example is not None and not isinstance(example, dict | list):
        param["placeholder"] = str(example)
    if show is not None:
        param["displayOptions"] = {"show": dict(show)}
    return param


def _parameters(
    fields: list[FormField], show: Mapping[str, list[str]], lists: ChoiceLists
) -> tuple[list[dict[str, Any]], list[str]]:
    """Required fields as parameters, optional ones in an *Additional Fields* collection.

    Returns:
        The parameters and the names of the top-level ones (what ``execute`` reads).
    """
    required = [field for field in fields if field.required]
    optional = [field for field in fields if not field.required]
    params = [_parameter(field, show, lists) for field in required]
    if optional:
        options = [_parameter(field, None, lists) for field in optional]
        options.sort(key=lambda option: str(option["displayName"]).lower())
        params.append(
            {
                "displayName": "Additional Fields",
                "name": "additionalFields",
                "type": "collection",
                "placeholder": "Add Field",
                "default": {},
                "displayOptions": {"show": dict(show)},
                "options": options,
            }
        )
    return params, [field.key for field in required]


# ---- the action node ---------------------------------------------------------------------


def _resource(action: ActionModule) -> str:
    return _camel(action.noun)


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
    params: list[dict[str, Any]] = [
        {
            "displayName": "Resource",
            "name": "resource",
            "type": "options",
            "noDataExpression": True,
            "options": [{"name": _singular(nouns[key]), "value": key} for key in resources],
            "default": resources[0],
        }
    ]
    fields: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    for resource in resources:
        group = sorted(by_resource[resource], key=lambda action: action.title.lower())
        params.append(
            {
                "displayName": "Operation",
                "name": "operation",
                "type": "options",
                "noDataExpression": True,
                "displayOptions": {"show": {"resource": [resource]}},
                "options": [
                    {
                        "name": title_case(action.title),
                        "value": action.key,
                        "description": _first_sentence(action.description),
                        "action": sentence_case(action.title),
                    }
                    for action in group
                ],
                "default": group[0].key,
            }
        )
        for action in group:
            show = {"resource": [resource], "operation": [action.key]}
            own, names = _parameters(form_fields(action.input_schema), show, lists)
            inputs.extend(own)
            fields[action.key] = names
    return params + inputs, fields


def _node_file(actions: Mapping[str, ActionModule], lists: ChoiceLists) -> str:
    properties, _fields = _action_node(actions, lists)
    description = {
        "displayName": "Practiceflow",
        "name": "practiceflow",
        "icon": dict(_ICON),
        "group": ["transform"],
        "version": 1,
        "subtitle": '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
        "description": "Clients, bills, proposals and onboarding in the practice-management "
        "Partner Integration API",
        "defaults": {"name": "Practiceflow"},
        "usableAsTool": True,
        "inputs": [_Raw("NodeConnectionTypes.Main")],
        "outputs": [_Raw("NodeConnectionTypes.Main")],
        "credentials": [{"name": CREDENTIAL, "required": True}],
        "properties": properties,
    }
    return template_text("n8n", "nodes/Practiceflow/Practiceflow.node.ts.in").replace(
        "/*DESCRIPTION*/", ts(description, 1)
    )


# ---- the trigger nodes --------------------------------------------------------------------


def _event_parameters(
    triggers: Mapping[str, TriggerModule], what: str, lists: ChoiceLists
) -> list[dict[str, Any]]:
    ordered = sorted(triggers.values(), key=lambda trigger: trigger.title.lower())
    params: list[dict[str, Any]] = [
        {
            "displayName": "Trigger On",
            "name": "trigger",
            "type": "options",
            "required": True,
            "noDataExpression": True,
            "description": describe(f"Which event {what}"),
            "options": [
                {
                    "name": title_case(trigger.title),
                    "value": trigger.key,
                    "description": _first_sentence(trigger.description),
                }
                for trigger in ordered
            ],
            "default": ordered[0].key,
        }
    ]
    for trigger in ordered:
        own, _names = _parameters(
            form_fields(trigger.input_schema), {"trigger": [trigger.key]}, lists
        )
        params.extend(own)
    return params


def _trigger_file(
    name: str, triggers: Mapping[str, TriggerModule], polling: bool, lists: ChoiceLists
) -> str:
    what = "to watch for (polled)" if polling else "to subscribe to"
    description: dict[str, Any] = {
        "displayName": "Practiceflow Poll Trigger" if polling else "Practiceflow Trigger",
        "name": "practiceflowPollTrigger" if polling else "practiceflowTrigger",
        "icon": dict(_ICON),
        "group": ["trigger"],
        "version": 1,
        "subtitle": '={{$parameter["trigger"]}}',
        "description": (
            "Starts the workflow when the practice-management API lists a new or changed record"
            if polling
            else "Starts the workflow when the practice-management API sends a webhook event"
        ),
        "defaults": {"name": "Practiceflow Poll Trigger" if polling else "Practiceflow Trigger"},
        "inputs": [],
        "outputs": [_Raw("NodeConnectionTypes.Main")],
        "credentials": [{"name": CREDENTIAL, "required": True}],
    }
    if polling:
        description["polling"] = True
    else:
        hook = {"name": "default", "httpMethod": "POST", "responseMode": "onReceived"}
        description["webhooks"] = [{**hook, "path": "webhook"}]
    description["properties"] = _event_parameters(triggers, what, lists)
    source = template_text("n8n", f"nodes/Practiceflow/{name}.node.ts.in")
    return source.replace("/*DESCRIPTION*/", ts(description, 1))


# ---- credentials ------------------------------------------------------------------------


def _credentials_file(connector: Mapping[str, Any]) -> str:
    regions = sorted(connector["regions"].items())
    published = {
        key: region["base_url"]
        for key, region in regions
        if str(region["base_url"]).startswith("https://")
    }
    header = connector["auth"]["methods"]["header"]
    base = (
        "={{ ($credentials.baseUrl || "
        + json.dumps(published)
        + "[$credentials.region] || '').replace(/\\/+$/, '') }}"
    )
    properties = [
        {
            "displayName": "Client ID",
            "name": "clientId",
            "type": "string",
            "required": True,
            "default": "",
            "description": "The API client's Client ID (a GUID) from the practice settings",
        },
        {
            "displayName": "Client Secret",
            "name": "clientSecret",
            "type": "string",
            "typeOptions": {"password": True},
            "required": True,
            "default": "",
            "description": "The API client's secret; ask the practice administrator",
        },
        {
            "displayName": "Region",
            "name": "region",
            "type": "options",
            "options": [{"name": region["title"], "value": key} for key, region in regions],
            "default": regions[0][0],
            "description": "The region the practice is tied to; each region has its own host",
        },
        {
            "displayName": "Base URL",
            "name": "baseUrl",
            "type": "string",
            "required": len(published) < len(regions),
            "default": "",
            "placeholder": "https://api.example.com",
            "description": "The practice's regional base URL (without /api/v1). The API does "
            "not publish the regional hosts, so ask the practice for it.",
        },
    ]
    authenticate = {
        "type": "generic",
        "properties": {
            "headers": {
                header["client_id_header"]: "={{$credentials.clientId}}",
                header["client_secret_header"]: "={{$credentials.clientSecret}}",
            }
        },
    }
    validate = connector["auth"]["validate"]
    test = {
        "request": {"baseURL": base, "url": validate["path"], "method": validate["method"]},
        "rules": [
            {
                "type": "responseSuccessBody",
                "properties": {
                    "key": "authenticated",
                    "value": False,
                    "message": "The API refused these credentials",
                },
            }
        ],
    }
    source = template_text("n8n", "credentials/PracticeflowApi.credentials.ts.in")
    return (
        source.replace("/*PROPERTIES*/", ts(properties, 1))
        .replace("/*AUTHENTICATE*/", ts(authenticate, 1))
        .replace("/*TEST*/", ts(test, 1))
    )


# ---- the definition ---------------------------------------------------------------------


def _definition(
    connector: Mapping[str, Any],
    actions: Mapping[str, ActionModule],
    plans: Mapping[str, dict[str, Any]],
    triggers: Mapping[str, TriggerModule],
    trigger_plans: Mapping[str, dict[str, Any]],
    skipped: Mapping[str, str],
    lists: ChoiceLists,
) -> dict[str, Any]:
    _properties, fields = _action_node(actions, lists)
    paging = connector["paging"]
    hooks = connector["webhooks"]
    regions = {
        key: {
            "title": region["title"],
            "base_url": region["base_url"] if region["base_url"].startswith("https://") else None,
        }
        for key, region in sorted(connector["regions"].items())
    }
    header = connector["auth"]["methods"]["header"]
    return {
        "version": __version__,
        "choices": {name: source.as_data() for name, source in lists.sources.items()},
        "auth": {
            "headers": {
                "client_id": header["client_id_header"],
                "client_secret": header["client_secret_header"],
            },
            "regions": regions,
            "validate_path": connector["auth"]["validate"]["path"],
        },
        "actions": {
            key: {
                "key": key,
                "resource": _resource(action),
                "fields": fields[key],
                "inputSchema": _slim(action.input_schema),
                "plan": plans[key],
            }
            for key, action in sorted(actions.items())
        },
        "triggers": {
            key: {
                "key": key,
                "title": trigger.title,
                "inputSchema": _slim(trigger.input_schema),
                "webhook": trigger_plans[key]["webhook"],
                "poll": trigger_plans[key]["poll"],
            }
            for key, trigger in sorted(triggers.items())
        },
        "skipped": dict(sorted(skipped.items())),
        "paging": {
            "cursor_param": paging.get("cursor_param", "lastUpdated"),
            "fixed_size": sorted(paging["fixed_size"]),
            "has_more_field": paging.get("has_more_field", "hasMore"),
            "max_pages": MAX_PAGES,
            "page_param": paging["page_param"],
            "size_param": paging["size_param"],
        },
        "webhooks": {
            "delivery_prefix": DELIVERY_PREFIX,
            "headers": hooks["headers"],
            "subscribe": hooks["subscribe"],
            "signature_prefix": hooks.get("signature_prefix", "sha256="),
            "tolerance_seconds": TOLERANCE_SECONDS,
        },
    }


def _collision(module: ActionModule | TriggerModule, reserved: frozenset[str]) -> str | None:
    """Why a module's input would collide with its node's own parameters, or None."""
    clashes = sorted({field.key for field in form_fields(module.input_schema)} & reserved)
    if not clashes:
        return None
    return (
        f"its input field(s) {clashes} have the names of the n8n node's own parameters "
        f"{sorted(reserved)}; rename the field(s)"
    )


_DEFINITION_HEAD = """\
// The practiceflow modules as data: input schemas and portable request plans (see
// src/practiceflow/export/plan.py). Generated by 'practiceflow export n8n'; do not edit by
// hand: change the modules in actions/ and triggers/ and export again.

import type { Definition } from './runtime';

export const DEFINITION: Definition = """


@register
class N8nExporter(Exporter):
    """n8n community node package (actions node, webhook trigger, polling trigger)."""

    name = "n8n"
    summary = "n8n community node package (TypeScript, n8n-workflow)"

    def files(self, modules: ModuleRegistry, connector: Mapping[str, Any]) -> dict[str, str]:
        """Build the package (see the module docstring for the layout and mapping).

        Args:
            modules: the loaded actions and triggers.
            connector: the connector manifest as data.

        Returns:
            Relative path -> text.

        Raises:
            ManifestError: a module template cannot be exported.
        """
        skipped: dict[str, str] = {}
        actions: dict[str, ActionModule] = {}
        plans: dict[str, dict[str, Any]] = {}
        for key, action in sorted(modules.actions.items()):
            reason = unsupported(action) or _collision(action, RESERVED["action"])
            if reason is None:
                try:
                    plans[key] = action_plan(action)
                    actions[key] = action
                    continue
                except ManifestError as exc:
                    reason = str(exc.issues[0])
            skipped[f"actions/{key}"] = reason
        triggers: dict[str, TriggerModule] = {}
        trigger_plans: dict[str, dict[str, Any]] = {}
        for key, trigger in sorted(modules.triggers.items()):
            reason = _collision(trigger, RESERVED["trigger"])
            try:
                if reason is not None:
                    raise ManifestError([])
                trigger_plans[key] = trigger_plan(trigger)
                triggers[key] = trigger
            except ManifestError as exc:
                skipped[f"triggers/{key}"] = reason or str(exc.issues[0])
        lists = ChoiceLists(
            modules,
            [*actions.values(), *triggers.values()],
            [key for key, action in actions.items() if action.extensions.list is not None],
        )
        hooks = {key: t for key, t in triggers.items() if t.webhook is not None}
        polls = {key: t for key, t in triggers.items() if t.poll is not None}
        definition = _definition(connector, actions, plans, triggers, trigger_plans, skipped, lists)
        out = {name: template_text("n8n", name) for name in _STATIC}
        out["shared/definition.ts"] = _DEFINITION_HEAD + ts(definition) + ";\n"
        out["credentials/PracticeflowApi.credentials.ts"] = _credentials_file(connector)
        out["nodes/Practiceflow/Practiceflow.node.ts"] = _node_file(actions, lists)
        out["nodes/Practiceflow/PracticeflowTrigger.node.ts"] = _trigger_file(
            "PracticeflowTrigger", hooks, polling=False, lists=lists
        )
        out["nodes/Practiceflow/PracticeflowPollTrigger.node.ts"] = _trigger_file(
            "PracticeflowPollTrigger", polls, polling=True, lists=lists
        )
        out[".gitignore"] = "node_modules/\ndist/\n"
        return out
