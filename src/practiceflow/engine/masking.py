"""The one place personal data (fields tagged ``x-pii``) and secrets are masked, by path and
by value (docs/architecture.md, "Privacy and secrets"). A value shorter than :data:`MIN_WHOLE`
is masked only as a whole value (an initial "J" must not blank every J of a message).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from itertools import groupby
from operator import itemgetter
from typing import Any, TypeVar

from practiceflow.errors import ApiError, InDoubtError, PracticeflowError, TransportError
from practiceflow.manifest import lint
from practiceflow.templating import CompiledTemplate

MASK = "***"
#: A fragment of a personal value this long or longer is masked inside any text.
MIN_FRAGMENT = 6
#: A personal value this long or longer is masked where it appears whole inside text.
MIN_WHOLE = 4

ErrorT = TypeVar("ErrorT", bound=BaseException)

PiiPaths = frozenset[tuple[str, ...]]


def pii_match(path: Iterable[str | int], pii: PiiPaths) -> bool:
    """Tell whether a JSON path of the input is, or lies inside, a personal field."""
    parts = tuple(path)
    for candidate in pii:
        if len(candidate) <= len(parts) and all(
            (want == "*" and isinstance(got, int)) or want == got
            for want, got in zip(candidate, parts, strict=False)
        ):
            return True
    return False


def mask_paths(value: Any, pii: PiiPaths, at: tuple[str | int, ...] = ()) -> Any:
    """Return a copy of an input-shaped value with its personal fields masked."""
    for key in at:
        below = _descend(pii, key)
        if below is None:
            return MASK
        pii = below
    return _mask_below(value, pii)


def _descend(pii: PiiPaths, key: str | int) -> PiiPaths | None:
    """The personal paths below ``key`` (relative to it); None when ``key`` itself is one."""
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
    if not isinstance(value, Mapping | list):
        return value
    masked: dict[Any, Any] = {}
    for key, child in value.items() if isinstance(value, Mapping) else enumerate(value):
        rest = _descend(pii, key) if pii else pii
        masked[key] = MASK if rest is None else _mask_below(child, rest)
    return masked if isinstance(value, Mapping) else list(masked.values())


def mask_for_template(template: CompiledTemplate, value: Any, pii: PiiPaths) -> Any:
    """Mask a rendered value according to the personal input fields its template reads."""
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


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        for child in value.values():
            yield from _leaves(child)
    elif isinstance(value, list):
        for child in value:
            yield from _leaves(child)
    elif value is not None and not isinstance(value, bool):
        yield value


def values_at(
    data: Any, path: tuple[str, ...], at: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every ``(json path, value)`` of ``data`` at a field path (``*``: any list index)."""
    if not path:
        if data is not None:
            yield at, data
        return
    head, rest = path[0], path[1:]
    if head == "*":
        if isinstance(data, list):
            for index, item in enumerate(data):
                yield from values_at(item, rest, (*at, index))
        return
    if isinstance(data, Mapping) and head in data:
        yield from values_at(data[head], rest, (*at, head))


def personal_values(data: Any, pii: PiiPaths) -> frozenset[str]:
    """Collect the text of every personal field of a value (an input, an output, a payload)."""
    return frozenset(
        str(leaf)
        for path in pii
        for _, value in values_at(data, path)
        for leaf in _leaves(value)
        if str(leaf)
    )


def named_values(data: Any, text: str) -> frozenset[str]:
    """The text values of the fields of ``data`` whose names appear in ``text``: an API error
    naming a field may echo its value, masked then whether or not the field is tagged."""
    lowered = text.lower()
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for key, child in value.items():
                if isinstance(key, str) and key and key.lower() in lowered:
                    found.update(leaf for leaf in _leaves(child) if isinstance(leaf, str) and leaf)
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    walk(data)
    return frozenset(found)


def _spans(text: str, values: Iterable[str]) -> list[tuple[int, int]]:
    """Where personal values, or fragments of them, sit in ``text`` (case-insensitive)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a letter whose lower case is longer: match as written
        lowered = text
    fold = lowered is not text
    spans: list[tuple[int, int]] = []
    for value in values:
        needle = value.lower() if fold else value
        if len(needle) >= MIN_FRAGMENT:
            grams = {needle[i : i + MIN_FRAGMENT] for i in range(len(needle) - MIN_FRAGMENT + 1)}
            for i in range(len(lowered) - MIN_FRAGMENT + 1):
                if lowered[i : i + MIN_FRAGMENT] in grams:
                    spans.append((i, i + MIN_FRAGMENT))
        elif len(needle) >= MIN_WHOLE:
            start = lowered.find(needle)
            while start >= 0:
                spans.append((start, start + len(needle)))
                start = lowered.find(needle, start + 1)
    return spans


def mask_text(text: str, values: Iterable[str]) -> str:
    """Mask personal values in text: whole, and any fragment of 6 characters or more."""
    values = tuple(values)
    if not values or not text:
        return text
    if text in values:
        return MASK
    spans = _spans(text, values)
    if not spans:
        return text
    hidden = [False] * len(text)
    for start, end in spans:
        hidden[start:end] = [True] * (end - start)
    runs = groupby(zip(text, hidden, strict=True), key=itemgetter(1))
    return "".join(MASK if hide else "".join(char for char, _ in run) for hide, run in runs)


def mask_values(tree: Any, values: Iterable[str]) -> Any:
    """Mask personal values wherever they appear in a JSON-like tree (keys kept)."""
    values = frozenset(values)
    if not values:
        return tree
    if isinstance(tree, Mapping):
        return {key: mask_values(child, values) for key, child in tree.items()}
    if isinstance(tree, list | tuple):
        return [mask_values(child, values) for child in tree]
    if isinstance(tree, str):
        return mask_text(tree, values)
    if isinstance(tree, int | float) and not isinstance(tree, bool) and str(tree) in values:
        return MASK
    return tree


def mask_input(data: Any, pii: PiiPaths) -> Any:
    """Mask the personal fields of an action's input where they sit."""
    return mask_paths(data, pii) if pii else data


def mask_request(request: Mapping[str, Any], data: Any, pii: PiiPaths) -> dict[str, Any]:
    """Mask every personal value in a request (sent, about to be sent or described); the
    journal, the logs and every dry run show requests through this function."""
    shown = {key: value for key, value in request.items() if value is not None}
    masked: dict[str, Any] = mask_values(shown, personal_values(data, pii))
    return masked


def mask_output(output: Any, schema: Mapping[str, Any] | None) -> Any:
    """Mask the fields of an output (or a trigger payload) that its schema tags ``x-pii``."""
    if not schema:
        return output
    pii = output_pii(output, schema)
    return mask_paths(output, pii) if pii else output


def output_pii(output: Any, schema: Mapping[str, Any], tagged: PiiPaths | None = None) -> PiiPaths:
    """The personal paths of one output: its schema's tags, and every undeclared field when
    the schema tags the whole record ``x-pii`` (only declared, untagged fields are safe)."""
    pii = lint.pii_paths(schema) if tagged is None else tagged
    if schema.get("x-pii") is True and isinstance(output, Mapping):
        declared = schema.get("properties")
        known = declared if isinstance(declared, Mapping) else {}
        pii = pii | {(key,) for key in output if isinstance(key, str) and key not in known}
    return pii


def mask_secrets(output: Any, secret: frozenset[tuple[str, ...]]) -> Any:
    """Mask the output fields an action tags ``x-secret``, before the journal stores them:
    a run resumed after a crash sees the mask (a step needing the secret runs in-process)."""
    return mask_paths(output, secret) if secret else output


def _error_text(exc: BaseException) -> str:
    parts = [str(exc)]
    if isinstance(exc, ApiError) and exc.problem:
        parts.append(json.dumps(exc.problem, default=str))
    if isinstance(exc, InDoubtError):
        parts.append(_error_text(exc.cause))
    return "\n".join(parts)


def mask_error(exc: ErrorT, data: Any, pii: PiiPaths) -> ErrorT:
    """Mask an error raised while running an action, in place, and return it: its message,
    problem body, cause and reason lose every personal value of the input (and fragment of one)
    and the value of every input field the error names."""
    values = personal_values(data, pii) | named_values(data, _error_text(exc))
    if values:
        _mask_error_in_place(exc, values, set())
    return exc


def _mask_error_in_place(exc: BaseException, values: frozenset[str], seen: set[int]) -> None:
    if id(exc) in seen:
        return
    seen.add(id(exc))
    if isinstance(exc, ApiError):
        exc.problem = mask_values(exc.problem, values)
    if isinstance(exc, TransportError):
        exc.reason = mask_text(exc.reason, values)
    if isinstance(exc, InDoubtError):
        _mask_error_in_place(exc.cause, values, seen)
    exc.args = tuple(mask_text(a, values) if isinstance(a, str) else a for a in exc.args)
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        notes[:] = [mask_text(note, values) if isinstance(note, str) else note for note in notes]
    for linked in (exc.__cause__, exc.__context__):
        if isinstance(linked, PracticeflowError):
            _mask_error_in_place(linked, values, seen)
