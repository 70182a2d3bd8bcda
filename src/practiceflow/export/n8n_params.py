"""n8n node parameters from form fields: types, defaults, dropdowns, Additional Fields.

Required fields are top-level parameters, optional ones go under *Additional Fields*; a
field with declared choices becomes an options list (``loadOptions``), or a resource
locator with a ``listSearch`` for large lists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from practiceflow.export.dropdowns import ChoiceLists
from practiceflow.export.n8n_text import describe, title_case
from practiceflow.export.schemas import FormField, form_fields
from practiceflow.manifest.models import ActionModule, TriggerModule


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


def parameters(
    fields: list[FormField], show: Mapping[str, list[str]], lists: ChoiceLists
) -> tuple[list[dict[str, Any]], list[str]]:
    """Required fields as parameters, optional ones in an *Additional Fields* collection;
    and the names of the top-level ones (what ``execute`` reads)."""
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
    """n8n's *Return All* switch of a list operation and its *Limit* shown when it is off,
    to put before *Additional Fields*.

    The ``limit`` field leaves *Additional Fields* (``params``, from :func:`parameters`, is
    changed in place) and stands after the switch, n8n's own layout (its lint checks it).
    """
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


def collision(module: ActionModule | TriggerModule, reserved: frozenset[str]) -> str | None:
    """Why a module's input would collide with its node's own parameters, or None."""
    clashes = sorted({field.key for field in form_fields(module.input_schema)} & reserved)
    if not clashes:
        return None
    return (
        f"its input field(s) {clashes} have the names of the n8n node's own parameters "
        f"{sorted(reserved)}; rename the field(s)"
    )
