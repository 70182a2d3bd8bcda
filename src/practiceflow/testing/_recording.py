"""A module's recorded exchanges made into a cassette, with its personal values scrubbed.

Personal values follow the engine's masking rules (``x-pii`` input and output fields, in
every answer's rows too, and ``x-secret``); the cassette is then checked to hold none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from practiceflow.api.paging import extract_items
from practiceflow.engine.masking import MIN_FRAGMENT, personal_values
from practiceflow.errors import BugError, ConfigError
from practiceflow.manifest import lint
from practiceflow.testing._cassette import (
    Cassette,
    Exchange,
    cassette_from_dict,
    scrub,
    scrubbable,
)

PiiPaths = frozenset[tuple[str, ...]]


def _answer_rows(body: Any) -> list[Any]:
    if not isinstance(body, list | dict):
        return []
    try:
        rows, _ = extract_items(body)
    except ConfigError:
        return []
    return rows


def named_values(tree: Any, names: frozenset[str]) -> set[str]:
    """The text of every value under a key named in ``names``, anywhere in a tree."""
    found: set[str] = set()

    def walk(node: Any, inside: bool) -> None:
        if isinstance(node, Mapping):
            for key, child in node.items():
                walk(child, inside or key in names)
        elif isinstance(node, list):
            for child in node:
                walk(child, inside)
        elif inside and isinstance(node, str) and node:
            found.add(node)

    walk(tree, False)
    return found


def registry_personal_names(registry: Any) -> frozenset[str]:
    """The names of the fields any module of a registry tags ``x-pii`` or ``x-secret``
    (inputs, outputs, events): personal or secret wherever they appear.
    """
    schemas: list[Mapping[str, Any]] = []
    secrets: set[str] = set()
    for action in registry.actions.values():
        schemas += [action.input_schema, action.output.schema]
        secrets |= {path[-1] for path in action.secret_paths if path and path[-1] != "*"}
    schemas += [trigger.output_schema for trigger in registry.triggers.values()]
    return personal_names(schemas) | frozenset(secrets)


def personal_names(schemas: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The names of the fields tagged ``x-pii`` in modules' input and output schemas (the last
    name of each path, such as ``email`` or ``physicalAddress``)."""
    names: set[str] = set()
    for schema in schemas:
        for path in lint.pii_paths(schema):
            named = [part for part in path if part != "*"]
            if named:
                names.add(named[-1])
    return frozenset(names)


def _texts(tree: Any) -> list[str]:
    """Every string value of a tree (keys left out: a field name is not a value)."""
    if isinstance(tree, Mapping):
        return [text for child in tree.values() for text in _texts(child)]
    if isinstance(tree, list):
        return [text for child in tree for text in _texts(child)]
    return [tree] if isinstance(tree, str) else []


def _row_paths(pii: PiiPaths) -> PiiPaths:
    """The personal paths of one row of a list output (``items.*.email`` -> ``email``)."""
    rows = {path[2:] for path in pii if len(path) > 2 and path[1] == "*"}
    return frozenset(rows) if rows else pii


def make_cassette(
    module: str,
    kind: Literal["action", "trigger", "recipe"],
    preset: str,
    data: Mapping[str, Any],
    exchanges: Iterable[Exchange],
    *,
    output: Any = None,
    input_pii: PiiPaths = frozenset(),
    output_schema: Mapping[str, Any] | None = None,
    secret_paths: PiiPaths = frozenset(),
    names: frozenset[str] = frozenset(),
    extra: Iterable[str] = (),
) -> Cassette:
    """Build a scrubbed cassette from what a recording saw.

    Args:
        module: the action or trigger key.
        kind: ``action``, ``trigger`` or ``recipe``.
        preset: the sandbox preset recorded under.
        data: the module's input.
        exchanges: the recorded exchanges, in order.
        output: what the module returned (its personal fields name values to scrub).
        input_pii: the module's personal input paths.
        output_schema: its output (a trigger's: event) schema, read for ``x-pii``.
        secret_paths: its output paths tagged ``x-secret``.
        names: field names personal wherever they appear (:func:`personal_names` of every
            module): an answer may hold a record another module describes.
        extra: more values to scrub (a case's personal values, the secret).

    Returns:
        The cassette, personal values and secrets replaced by stable tokens.

    Raises:
        BugError: a personal value is still in the cassette after scrubbing.
    """
    recorded = tuple(exchanges)
    output_pii = lint.pii_paths(output_schema) if output_schema else frozenset()
    row_pii = _row_paths(output_pii)
    values = set(personal_values(data, input_pii)) | set(personal_values(output, output_pii))
    values |= set(personal_values(output, secret_paths)) | named_values(data, names)
    values |= {value for value in extra if isinstance(value, str)}
    for exchange in recorded:
        body = exchange.response.body
        if exchange.response.json:
            values |= personal_values(body, output_pii)
            values |= {v for row in _answer_rows(body) for v in personal_values(row, row_pii)}
        values |= named_values(body, names) | named_values(exchange.request.body, names)
    raw = Cassette(module, kind, preset, dict(data), recorded).as_dict()
    cleaned = scrub(raw, values)
    # Checked for values of MIN_FRAGMENT characters or more: a shorter one may turn up by
    # chance inside another value's token.
    texts = [text.lower() for text in _texts(cleaned)]
    checked = [v for v in values if scrubbable(v) and len(v) >= MIN_FRAGMENT]
    left = [v for v in checked if any(v.lower() in text for text in texts)]
    if left:
        # The values themselves stay out of the message: it may be shown anywhere.
        message = f"{module} ({preset}): {len(left)} personal value(s) left after scrubbing"
        raise BugError(message)
    return cassette_from_dict(cleaned, f"{module} ({preset})")
