"""The n8n exporter: the templates of ``templates/n8n`` filled in, plus the modules as data.

Required fields are node parameters, optional ones *Additional Fields*; choices become
``loadOptions`` lists or resource locators; texts are shaped as ``n8n-node lint`` wants them.
Nodes ``execute`` the plans rather than use declarative routing: n8n's routing expressions
cannot carry conditionals, ``{% set %}``, the omission rule, paging and output maps; one
interpreter of the plans (as in the Zapier export) keeps every platform faithful.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from practiceflow import __version__
from practiceflow.export.descriptions import plan_description
from practiceflow.export.exporter import template_text, translated
from practiceflow.export.expression_tree import platform_input
from practiceflow.export.schemas import ChoiceLists, FormField, form_fields
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
#: TypeScript string escapes: control characters as ``\uXXXX`` but for the short ones.
_ESCAPES = {chr(code): f"\\u{code:04x}" for code in range(0x20)}
_ESCAPES |= {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TRANSLATE = str.maketrans(_ESCAPES)


def _string(text: str) -> str:
    """A single-quoted TypeScript string literal (no needless escapes)."""
    return "'" + text.translate(_TRANSLATE) + "'"


def ts(value: Any, indent: int = 0) -> str:
    """A JSON-like value as a TypeScript literal (tabs, single quotes, bare keys)."""
    pad = "\t" * (indent + 1)
    end = "\t" * indent
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
    """Title Case as n8n display names use it: ``Client entity id`` -> ``Client Entity ID``
    (small words lower case but at the edges; ``eForm`` kept; hyphenated parts capitalised)."""
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
    """An operation's ``action`` text: words lower case (acronyms kept), first one capitalised
    (``List practice-management staff`` -> ``List practice management staff``)."""
    words = [word for word in re.split(r"[^A-Za-z0-9]+", text) if word]
    kept = [word if word.isupper() and len(word) > 1 else word.lower() for word in words]
    joined = " ".join(kept)
    return joined[:1].upper() + joined[1:]


def describe(text: str) -> str:
    """A parameter description as n8n's lint wants it: one line, first letter capitalised,
    ``ID`` / ``URL`` / ``JSON`` in capitals, a final period only on several sentences."""
    flat = _acronyms(" ".join(text.split()).strip())
    if not flat:
        return flat
    flat = flat[:1].upper() + flat[1:]
    single = len(flat.replace("e.g.", "", 1).split(". ")) == 1
    if single:
        return flat.rstrip(".")
    return flat if flat.endswith((".", "!", "?")) else flat + "."


def camel(text: str) -> str:
    """``client entities`` -> ``clientEntities``."""
    words = [word for word in re.split(r"[^A-Za-z0-9]+", text) if word]
    return words[0].lower() + "".join(word[:1].upper() + word[1:] for word in words[1:])


def first_sentence(text: str) -> str:
    """The first sentence of a text, as :func:`describe` shapes it."""
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", flat)
    return describe(match.group(1) if match else flat)


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
    "action": frozenset({"resource", "operation", "additionalFields", "returnAll"}),
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
        param.update(type="boolean", default=bool(field.default))
    elif kind in ("integer", "number") and not field.list:
        param.update(
            type="number", default=field.default if isinstance(field.default, int | float) else 0
        )
    elif kind == "datetime" and not field.list:
        param.update(type="dateTime", default="")
    elif kind == "json":
        param.update(type="json", default=_json_default(field))
        if field.children:
            names = ", ".join(child.key for child in field.children)
            description = f"{description} A JSON list of objects with: {names}.".strip()
    else:
        param.update(type="string", default="" if field.default is None else str(field.default))
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


def parameters(
    fields: list[FormField], show: Mapping[str, list[str]], lists: ChoiceLists
) -> tuple[list[dict[str, Any]], list[str]]:
    """Required fields as parameters, optional ones as *Additional Fields*; the required names."""
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


def return_all_parameters(
    params: list[dict[str, Any]], show: Mapping[str, list[str]]
) -> list[dict[str, Any]]:
    """n8n's *Return All* switch and the *Limit* shown when it is off, to put before
    *Additional Fields*, which ``limit`` leaves (``params`` is changed in place)."""
    switch = {
        "displayName": "Return All",
        "name": "returnAll",
        "type": "boolean",
        "default": False,
        "description": "Whether to return all results or only up to a given limit",
        "displayOptions": {"show": dict(show)},
    }
    moved: list[dict[str, Any]] = []
    for param in list(params):
        if param["name"] == "additionalFields":
            moved = [option for option in param["options"] if option["name"] == "limit"]
            param["options"] = [option for option in param["options"] if option["name"] != "limit"]
            if not param["options"]:
                params.remove(param)  # limit was its only field
    limits = [
        {**option, "displayOptions": {"show": {**show, "returnAll": [False]}}} for option in moved
    ]
    return [switch, *limits]


def collision(module: ActionModule | TriggerModule) -> str | None:
    """Why a module's input would collide with its node's own parameters, or None."""
    reserved = RESERVED["trigger" if isinstance(module, TriggerModule) else "action"]
    clashes = sorted({field.key for field in form_fields(module.input_schema)} & reserved)
    if not clashes:
        return None
    return (
        f"its input field(s) {clashes} have the names of the n8n node's own parameters "
        f"{sorted(reserved)}; rename the field(s)"
    )


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
