"""Masking personal data in what the runner shows: journal requests, logs, dry runs.

Two complementary rules, because a request is rendered from the input by templates the
runner does not see through:

* by path: fields tagged ``x-pii`` in an action's input (or output) schema are masked where
  they sit (:func:`mask_input`, :func:`mask_output`);
* by value: every personal value of the input is masked wherever it reappears in the
  request (body, query, headers, path), however the module's templates moved it
  (:func:`mask_request`).

Secrets never reach the runner's data: the client adds credentials itself and masks them
in :meth:`~practiceflow.api.Client.describe_request`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from practiceflow.engine.masking import MASK, mask_paths
from practiceflow.manifest import lint

__all__ = [
    "MASK",
    "mask_input",
    "mask_output",
    "mask_request",
    "mask_secrets",
    "personal_values",
]

PiiPaths = frozenset[tuple[str, ...]]

#: Personal values shorter than this are masked only where they are a whole value, never
#: inside longer text (an initial "J" must not blank every J of a request).
_MIN_INNER = 4


def personal_values(data: Any, pii: PiiPaths) -> frozenset[str]:
    """Collect the text of every personal field of an input.

    Args:
        data: the input.
        pii: the action's personal paths (``*`` matches any index).

    Returns:
        The personal values as strings (numbers included as text), empty strings left out.
    """
    found: set[str] = set()

    def leaves(value: Any) -> Iterable[Any]:
        if isinstance(value, Mapping):
            for child in value.values():
                yield from leaves(child)
        elif isinstance(value, list):
            for child in value:
                yield from leaves(child)
        elif value is not None and not isinstance(value, bool):
            yield value

    def walk(value: Any, path: tuple[str, ...]) -> None:
        if not path:
            found.update(str(leaf) for leaf in leaves(value) if str(leaf))
            return
        head, rest = path[0], path[1:]
        if head == "*" and isinstance(value, list):
            for child in value:
                walk(child, rest)
        elif isinstance(value, Mapping) and head in value:
            walk(value[head], rest)

    for path in pii:
        walk(data, path)
    return frozenset(found)


def _mask_text(text: str, values: frozenset[str]) -> str:
    if text in values:
        return MASK
    for value in values:
        if len(value) >= _MIN_INNER and value in text:
            text = text.replace(value, MASK)
    return text


def _mask_values(tree: Any, values: frozenset[str]) -> Any:
    if isinstance(tree, Mapping):
        return {key: _mask_values(child, values) for key, child in tree.items()}
    if isinstance(tree, list):
        return [_mask_values(child, values) for child in tree]
    if isinstance(tree, str):
        return _mask_text(tree, values)
    if isinstance(tree, int | float) and not isinstance(tree, bool) and str(tree) in values:
        return MASK
    return tree


def mask_input(data: Any, pii: PiiPaths) -> Any:
    """Mask the personal fields of an action's input where they sit.

    Args:
        data: the rendered input.
        pii: the action's personal input paths.

    Returns:
        A masked copy.
    """
    return mask_paths(data, pii) if pii else data


def mask_request(request: Mapping[str, Any], data: Any, pii: PiiPaths) -> dict[str, Any]:
    """Mask, in a request about to be sent, every personal value of the input.

    Args:
        request: ``method``, ``path``, ``params``, ``json``, ``headers`` as the engine sends
            them.
        data: the input the request was rendered from.
        pii: the action's personal input paths.

    Returns:
        A masked copy fit for the journal and logs.
    """
    values = personal_values(data, pii)
    shown = {key: value for key, value in request.items() if value is not None}
    return _mask_values(shown, values) if values else shown


def mask_output(output: Any, schema: Mapping[str, Any] | None) -> Any:
    """Mask the fields of an output that its schema tags ``x-pii``.

    Args:
        output: a step's output.
        schema: the action's output schema.

    Returns:
        A masked copy (the output itself when nothing is personal).
    """
    if not schema:
        return output
    pii = lint.pii_paths(schema)
    return mask_paths(output, pii) if pii else output


def mask_secrets(output: Any, secret: frozenset[tuple[str, ...]]) -> Any:
    """Mask the output fields an action tags ``x-secret`` (before the journal stores them).

    Secrets never reach the journal: a step's stored output has them masked, so a run
    resumed after a crash sees the mask where the secret was (a later step that needs a
    secret must run in the same process as the step that produced it).

    Args:
        output: a step's output.
        secret: the action's secret output paths (computed once, when it is loaded).

    Returns:
        A masked copy (the output itself when nothing is secret).
    """
    return mask_paths(output, secret) if secret else output
