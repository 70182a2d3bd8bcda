"""Dynamic choices (``x-choices``): where an input field's allowed values come from, declared once
for :func:`practiceflow.engine.run.check_choices` and every exporter's dropdowns (whose JavaScript
repeats :func:`options_from_rows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from practiceflow.errors import Issue
from practiceflow.manifest.lint import field_schemas

#: A field's place in an input: property names from the root, ``*`` for any list index.
FieldPath = tuple[str, ...]


@dataclass(frozen=True)
class ChoiceSource:
    """One ``x-choices`` declaration."""

    action: str
    value: str | None = None
    label: str | None = None
    also: tuple[str, ...] = ()
    where: Mapping[str, Any] = field(default_factory=dict)
    with_: Mapping[str, Any] = field(default_factory=dict)
    search: bool = False
    collection: str | None = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ChoiceSource:
        """Build one from its (meta-schema valid) YAML mapping."""
        return cls(
            action=str(data["action"]),
            value=data.get("value"),
            label=data.get("label"),
            also=tuple(data.get("also", ())),
            where=dict(data.get("where") or {}),
            with_=dict(data.get("with") or {}),
            search=bool(data.get("search", False)),
            collection=data.get("collection"),
        )

    def as_data(self) -> dict[str, Any]:
        """The declaration as JSON-ready data (what exporters embed)."""
        return {
            "action": self.action,
            "value": self.value,
            "label": self.label or self.value,
            "where": dict(sorted(self.where.items())),
            "with": dict(sorted(self.with_.items())),
            "search": self.search,
            "collection": self.collection,
        }


def choice_fields(schema: Mapping[str, Any]) -> dict[FieldPath, ChoiceSource]:
    """Collect the ``x-choices`` declarations of an input schema."""
    return {
        at: ChoiceSource.from_data(node["x-choices"])
        for at, node in field_schemas(schema, branches=False)
        if at and isinstance(node.get("x-choices"), Mapping)
    }


def check_sources(
    key: str,
    file: str,
    choices: Mapping[FieldPath, ChoiceSource],
    list_actions: Iterable[str],
    all_actions: Iterable[str],
) -> list[Issue]:
    """Check that every declaration names a list action of the registry."""
    lists = set(list_actions)
    known = set(all_actions)
    issues: list[Issue] = []
    for path, source in choices.items():
        where = "input." + ".".join(path) + ".x-choices.action"
        if source.action in lists:
            continue
        if source.action in known:
            message = f"{key}: got {source.action!r}, not a list action (it has no 'list' section)"
        else:
            message = f"{key}: got {source.action!r}; valid values are {sorted(lists)}"
        issues.append(Issue(file, 0, 0, where, message))
    return issues


def row_matches(row: Any, where: Mapping[str, Any]) -> bool:
    """Whether a list row passes a declaration's equality filters."""
    if not where:
        return True
    if not isinstance(row, Mapping):
        return False
    return all(row.get(name) == wanted for name, wanted in where.items())


def _pick(row: Any, name: str | None) -> Any:
    if name is None:
        return None if isinstance(row, Mapping | list) else row
    return row.get(name) if isinstance(row, Mapping) else None


def options_from_rows(rows: Iterable[Any], source: ChoiceSource) -> list[tuple[Any, str]]:
    """The ``(value, label)`` pairs a list offers, in order, without repeats (rows failing
    ``where``, or without a value, left out)."""
    out: list[tuple[Any, str]] = []
    seen: set[str] = set()
    for row in rows:
        if not row_matches(row, source.where):
            continue
        value = _pick(row, source.value)
        if value is None or value == "":
            continue
        label = _pick(row, source.label) if source.label else None
        text = str(value if label is None or label == "" else label)
        if str(value) in seen:
            continue
        seen.add(str(value))
        out.append((value, text))
    return out


def accepted_values(rows: Iterable[Any], source: ChoiceSource) -> set[str]:
    """Every value the API takes for the field (values and ``also`` fields), lower case."""
    accepted: set[str] = set()
    for row in rows:
        if not row_matches(row, source.where):
            continue
        for name in (source.value, *source.also):
            value = _pick(row, name)
            if value is not None and value != "":
                accepted.add(str(value).casefold())
    return accepted
