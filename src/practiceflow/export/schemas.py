"""JSON Schema helpers shared by the exporters: local ``$ref``, types, form fields, choices.

:func:`portable_schema` spells a list of types as ``anyOf`` (schemathesis and the MCP Inspector
refuse lists of types inside ``anyOf``); :func:`form_fields` flattens input for form-based
platforms; :class:`ChoiceLists` names each ``x-choices`` list once, validly for every platform.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from practiceflow.manifest.choices import ChoiceSource, options_from_rows
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.manifest.module_registry import ModuleRegistry

_SCALARS = ("string", "integer", "number", "boolean")


def resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with its ``#/$defs/`` ref of ``root`` merged under its own keys."""
    merged = dict(schema)
    ref = merged.pop("$ref", None)
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {}))
        target.update(merged)
        return target
    return merged


def main_type(schema: Mapping[str, Any]) -> str:
    """The first non-null type of a resolved schema (``string`` when none is said)."""
    declared = schema.get("type", "string")
    types = [declared] if isinstance(declared, str) else list(declared)
    for name in types:
        if name != "null":
            return str(name)
    return "string"


def help_text(schema: Mapping[str, Any]) -> str:
    """Description plus the first example, as shown next to a form field (may be empty)."""
    parts = [str(schema.get("description", "")).strip()]
    examples = schema.get("examples")
    if examples and not isinstance(examples[0], dict | list):
        parts.append(f"Example: {examples[0]}")
    return " ".join(part for part in parts if part)


@dataclass(frozen=True)
class FormField:
    """One form field from an input property (``key``: ``parent__child`` when flattened;
    ``list``: of scalars; ``children``: the line items of an array of objects)."""

    key: str
    label: str
    help: str
    type: str
    required: bool = False
    list: bool = False
    choices: tuple[Any, ...] = ()
    default: Any = None
    example: Any = None
    children: tuple[FormField, ...] = field(default=())
    source: ChoiceSource | None = None


def _source(schema: Mapping[str, Any]) -> ChoiceSource | None:
    declared = schema.get("x-choices")
    return ChoiceSource.from_data(declared) if isinstance(declared, Mapping) else None


def _scalar_type(schema: Mapping[str, Any]) -> str:
    kind = main_type(schema)
    if kind == "string" and schema.get("format") == "date-time":
        return "datetime"
    return kind if kind in _SCALARS else "json"


def _field(
    key: str, label: str, schema: Mapping[str, Any], root: Mapping[str, Any], required: bool
) -> list[FormField]:
    resolved = resolve(schema, root)
    kind = main_type(resolved)
    title = str(resolved.get("title") or label)
    examples = resolved.get("examples") or [None]
    common: dict[str, Any] = {
        "label": title,
        "help": help_text(resolved),
        "required": required,
        "default": resolved.get("default"),
        "example": examples[0],
        "choices": tuple(resolved.get("enum", ())),
        "source": _source(resolved),
    }
    properties: Mapping[str, Any] = resolved.get("properties") or {}
    if kind == "object" and properties:
        inner = set(resolved.get("required", ()))
        return [
            replace(child, label=f"{title}: {child.label}")
            for name, sub in properties.items()
            for child in _field(f"{key}__{name}", name, sub, root, required and name in inner)
        ]
    if kind == "array":
        items = resolve(resolved.get("items") or {}, root)
        item_props: Mapping[str, Any] = items.get("properties") or {}
        if main_type(items) == "object" and item_props:
            needed = set(items.get("required", ()))
            children = tuple(
                child
                for name, sub in item_props.items()
                for child in _field(name, name, sub, root, name in needed)
            )
            return [FormField(key, type="json", children=children, **common)]
        if main_type(items) in _SCALARS:
            common["choices"] = tuple(items.get("enum", ()))
            common["source"] = _source(items) or common["source"]
            return [FormField(key, type=_scalar_type(items), list=True, **common)]
        return [FormField(key, type="json", **common)]
    return [FormField(key, type=_scalar_type(resolved), **common)]


def form_fields(schema: Mapping[str, Any]) -> list[FormField]:
    """The form fields of an input schema's properties, the required ones first."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = [name for name in schema.get("required", ()) if name in properties]
    order = required + [name for name in properties if name not in required]
    fields: list[FormField] = []
    for name in order:
        fields.extend(_field(name, name, properties[name], schema, name in required))
    return fields


def rewrite_refs(schema: Any, mapping: Mapping[str, str]) -> Any:
    """A copy of ``schema`` with its ``$ref`` values moved by ``mapping`` (old -> new)."""
    if isinstance(schema, Mapping):
        return {
            key: (mapping.get(value, value) if key == "$ref" else rewrite_refs(value, mapping))
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [rewrite_refs(item, mapping) for item in schema]
    return schema


#: Keywords whose value is one subschema.
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
#: Keywords whose value is a list of subschemas.
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
#: Keywords whose value maps names to subschemas.
_NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def portable_schema(schema: Any) -> Any:
    """A copy of a schema with every list of types spelled as ``anyOf`` of single types
    (inside ``allOf`` when it has an ``anyOf`` already; data keywords left as they are)."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ONE:
            out[key] = portable_schema(value)
        elif key in _MANY and isinstance(value, list):
            out[key] = [portable_schema(item) for item in value]
        elif key in _NAMED and isinstance(value, Mapping):
            out[key] = {name: portable_schema(item) for name, item in value.items()}
        else:
            out[key] = value
    kinds = out.get("type")
    if isinstance(kinds, list):
        del out["type"]
        if len(kinds) == 1:
            out["type"] = kinds[0]
        else:
            branches = [{"type": kind} for kind in kinds]
            if "anyOf" in out:
                out["allOf"] = [*out.get("allOf", []), {"anyOf": branches}]
            else:
                out["anyOf"] = branches
    return out


def portable_types(document: Any) -> Any:
    """An OpenAPI 3.1 document with :func:`portable_schema` applied to each of its schemas."""
    if isinstance(document, list):
        return [portable_types(item) for item in document]
    if not isinstance(document, Mapping):
        return document
    out: dict[str, Any] = {}
    for key, value in document.items():
        if key == "schema":
            out[key] = portable_schema(value)
        elif key == "schemas" and isinstance(value, Mapping):
            out[key] = {name: portable_schema(item) for name, item in value.items()}
        elif key in ("example", "examples"):
            out[key] = value
        else:
            out[key] = portable_types(value)
    return out


def source_id(source: ChoiceSource) -> str:
    """A declaration's identity (two fields with the same declaration share one list)."""
    return json.dumps(source.as_data(), sort_keys=True)


class ChoiceLists:
    """The distinct choice lists of some modules, named ``choices_<action>`` (``_by_<value>``
    when one list action serves several, plus ``_<n>`` when filters or input differ)."""

    def __init__(
        self,
        registry: ModuleRegistry,
        actions: Mapping[str, ActionModule],
        triggers: Iterable[TriggerModule],
    ) -> None:
        """Collect the declarations whose list action is one of ``actions``."""
        usable = {key for key, action in actions.items() if action.extensions.list is not None}
        found: dict[str, ChoiceSource] = {}
        modules: list[ActionModule | TriggerModule] = [*actions.values(), *triggers]
        for module in modules:
            for source in module.choices.values():
                if source.action in usable:
                    found.setdefault(source_id(source), source)
        by_action: dict[str, list[str]] = {}
        for ident in sorted(found):
            by_action.setdefault(found[ident].action, []).append(ident)
        self.sources: dict[str, ChoiceSource] = {}
        self.names: dict[str, str] = {}
        for action, idents in sorted(by_action.items()):
            for index, ident in enumerate(idents):
                name = f"choices_{action}"
                if len(idents) > 1:
                    name += f"_by_{found[ident].value or 'value'}"
                if name in self.sources:
                    name += f"_{index + 1}"
                self.names[ident] = name
                self.sources[name] = found[ident]
        self._registry = registry

    def name_of(self, source: ChoiceSource | None) -> str | None:
        """The list's name for a field's declaration; None when it has none on this export."""
        return None if source is None else self.names.get(source_id(source))

    def sample(self, name: str) -> list[tuple[Any, str]]:
        """The ``(value, label)`` options the list action's own sample yields."""
        source = self.sources[name]
        sample: Mapping[str, Any] = self._registry.action(source.action).sample
        rows = sample.get("items")
        return options_from_rows(rows if isinstance(rows, list) else [], source)
