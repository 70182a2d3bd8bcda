"""Masking personal data (input fields tagged ``x-pii``) in described requests.

A request value is masked when its template reads a personal field: wholly (``***``) when
it reads the field itself, or field by field when it copies a structure that contains
personal fields (``{{ input.lineItems }}`` with a personal ``narration``, say).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from practiceflow.templating import CompiledTemplate

__all__ = ["MASK", "mask_for_template", "mask_paths", "pii_match"]

MASK = "***"

PiiPaths = frozenset[tuple[str, ...]]


def pii_match(path: Iterable[str | int], pii: PiiPaths) -> bool:
    """Tell whether a JSON path of the input is, or lies inside, a personal field.

    Args:
        path: keys and indexes from the input root.
        pii: the module's personal paths (``*`` matches any index).

    Returns:
        True when the value at ``path`` is personal data.
    """
    parts = tuple(path)
    for candidate in pii:
        if len(candidate) <= len(parts) and all(
            (want == "*" and isinstance(got, int)) or want == got
            for want, got in zip(candidate, parts, strict=False)
        ):
            return True
    return False


def mask_paths(value: Any, pii: PiiPaths, at: tuple[str | int, ...] = ()) -> Any:
    """Return a copy of an input-shaped value with its personal fields masked.

    Args:
        value: a value shaped like (part of) the input.
        pii: personal paths relative to ``value``.
        at: the path of ``value``, when ``pii`` is relative to an outer value.

    Returns:
        The masked copy.
    """
    for key in at:
        below = _descend(pii, key)
        if below is None:
            return MASK
        pii = below
    return _mask_below(value, pii)


def _descend(pii: PiiPaths, key: str | int) -> PiiPaths | None:
    """The personal paths below ``key`` (relative to it); None when ``key`` itself is one.

    Same rule as :func:`pii_match`, one step at a time, so that a value is walked once
    rather than every path of it being matched against every personal path.
    """
    below: set[tuple[str, ...]] = set()
    for candidate in pii:
        if not candidate:
            return None
        head = candidate[0]
        if head == key or (head == "*" and isinstance(key, int)):
            if len(candidate) == 1:
                return None
            below.add(candidate[1:])
    return frozenset(below)


def _mask_below(value: Any, pii: PiiPaths) -> Any:
    if isinstance(value, Mapping):
        masked: dict[Any, Any] = {}
        for key, child in value.items():
            rest = _descend(pii, key) if pii else pii
            masked[key] = MASK if rest is None else _mask_below(child, rest)
        return masked
    if isinstance(value, list):
        items: list[Any] = []
        for index, child in enumerate(value):
            rest = _descend(pii, index) if pii else pii
            items.append(MASK if rest is None else _mask_below(child, rest))
        return items
    return value


def mask_for_template(template: CompiledTemplate, value: Any, pii: PiiPaths) -> Any:
    """Mask a rendered value according to the personal input fields its template reads.

    Args:
        template: the template that produced ``value``.
        value: what it rendered.
        pii: the module's personal paths.

    Returns:
        ``value`` itself when no personal field is read; ``***`` when one is read as a
        whole; otherwise a copy with the personal parts masked.
    """
    if not pii or value is None or "input" not in template.names:
        return value
    fields = template.attributes.get("input")
    if not fields:  # the whole input, as in {{ input }}
        return mask_paths(value, pii)
    if any((name,) in pii for name in fields):
        return MASK
    nested = [path for path in pii if path[0] in fields]
    if not nested:
        return value
    if isinstance(value, Mapping | list) and len(fields) == 1:
        return mask_paths(value, frozenset(path[1:] for path in nested))
    return MASK
