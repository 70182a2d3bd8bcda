"""JSON Schema validation whose every error says where, what it got and what would be valid:
all at once, each an Issue such as ``input:3:5 lineItems[0].amount: got 'ten'; expected a number``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from functools import lru_cache
from typing import Any

import re2
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError as SchemaValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource

from practiceflow.errors import Issue
from practiceflow.manifest.resources import data_dir
from practiceflow.manifest.yamlpos import JsonPath, Located, format_path

FORMAT_CHECKER = FormatChecker()


@FORMAT_CHECKER.checks("date", raises=ValueError)
def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise ValueError(value)
    date.fromisoformat(value)
    return True


@FORMAT_CHECKER.checks("date-time", raises=ValueError)
def _is_datetime(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not re.fullmatch(
        r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?", value
    ):
        raise ValueError(value)
    datetime.fromisoformat(value[:-1] + "+00:00" if value[-1] in "Zz" else value)
    return True


for _name in ("email", "uuid"):
    FORMAT_CHECKER.checkers[_name] = Draft202012Validator.FORMAT_CHECKER.checkers[_name]

_FORMAT_WORDS = {
    "date": "a date as YYYY-MM-DD",
    "date-time": "a UTC ISO 8601 datetime such as 2024-05-01T09:30:00Z",
    "uuid": "a UUID such as 3f2c9a3e-8d7b-4d6a-9a41-2b1f0c7e5d10",
    "email": "an email address",
}

TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # the problem is reported as an Issue, not on stderr


@lru_cache(maxsize=512)
def compile_pattern(text: str) -> Any:
    """Compile a module's ``pattern`` with RE2: the text comes from outside, and Python's
    backtracking engine would hang on ``^(a+)+$`` (meta-schemas, ours, keep Python's)."""
    return re2.compile(text, _RE2_OPTIONS)


def pattern_problem(text: str) -> str | None:
    """Say why a module's pattern cannot be used, or None when it can."""
    try:
        compile_pattern(text)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args else str(exc)
        return (
            f"got {text!r}: {reason}; patterns are matched in linear time (RE2 syntax: "
            "no back-references or look-around)"
        )
    return None


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[SchemaValidationError]:
    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield SchemaValidationError(f"{instance!r} does not match {pattern!r}")


_LinearValidator: Any = validators.extend(  # type: ignore[no-untyped-call]  # jsonschema is untyped here
    Draft202012Validator, {"pattern": _pattern}
)


def compile_validator(schema: Mapping[str, Any]) -> Validator:
    """Build a reusable Draft 2020-12 validator with format checks; ``pattern`` is RE2's."""
    validator: Validator = _LinearValidator(schema, format_checker=FORMAT_CHECKER)
    return validator


@lru_cache(maxsize=8)
def meta_schema(kind: str) -> Mapping[str, Any]:
    """Return one of the meta-schemas shipped in ``manifests/``."""
    text = (data_dir("manifests") / f"{kind}.schema.json").read_text(encoding="utf-8")
    schema: Mapping[str, Any] = json.loads(text)
    return schema


META_KINDS = ("action", "trigger", "recipe", "connector")


@lru_cache(maxsize=1)
def _meta_registry() -> Registry[Any]:
    # Trigger modules reuse the schema dialect defined once in action.schema.json.
    resources = [
        (meta_schema(kind)["$id"], Resource.from_contents(dict(meta_schema(kind))))
        for kind in META_KINDS
    ]
    return Registry().with_resources(resources)


@lru_cache(maxsize=1)
def draft_validator() -> Validator:
    """The Draft 2020-12 meta-schema as a validator (module schemas are checked with it)."""
    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


@lru_cache(maxsize=8)
def meta_validator(kind: str) -> Validator:
    """Return a cached validator for one meta-schema (see :func:`meta_schema`)."""
    return Draft202012Validator(
        meta_schema(kind), format_checker=FORMAT_CHECKER, registry=_meta_registry()
    )


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """Return the candidate closest to a misspelt word, if one is close enough."""
    options = [c for c in candidates if c != word]
    lowered = {c.lower(): c for c in options}
    if word.lower() in lowered:
        return lowered[word.lower()]
    matches = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return matches[0] if matches else None


def hint(word: str, candidates: Iterable[str], otherwise: str) -> str:
    """``did you mean 'x'?`` for a near candidate, else ``otherwise`` (the valid values)."""
    match = did_you_mean(word, candidates)
    return f"did you mean {match!r}?" if match else otherwise


def _edits(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions) of two short words."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other))
            )
        previous = current
    return previous[-1]


def near_misses(schema: Any, data: Any, path: JsonPath = ()) -> list[tuple[JsonPath, str]]:
    """Unknown keys within two edits of a declared one where the schema allows extra keys
    (``mutte`` beside ``mute``): a typo there would otherwise be sent as is."""
    found: list[tuple[JsonPath, str]] = []
    if not isinstance(schema, Mapping):
        return found
    if isinstance(data, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(data):
            found.extend(near_misses(schema["items"], item, (*path, index)))
        return found
    declared = schema.get("properties")
    if not isinstance(data, Mapping) or not isinstance(declared, Mapping):
        return found
    for key, value in data.items():
        if key in declared:
            found.extend(near_misses(declared[key], value, (*path, key)))
            continue
        if schema.get("additionalProperties") is False or not isinstance(key, str):
            continue  # the schema itself refuses it, with its own message
        match = _near_miss(key, tuple(name for name in declared if isinstance(name, str)))
        if match is not None:
            found.append(((*path, key), f"unknown field {key!r}; did you mean {match!r}?"))
    return found


@lru_cache(maxsize=4096)
def _near_miss(key: str, declared: tuple[str, ...]) -> str | None:
    """The declared name ``key`` is a near miss of, or None (remembered: an API's answers
    bring the same unknown keys every time, each checked against every declared name)."""
    # Two edits for longer names, one for names of up to four letters (``code`` and
    # ``mode`` are both real words; ``mutte`` is a typo of ``mute``). A name three or
    # more letters longer or shorter is three edits away or more: never close enough.
    close = sorted(
        (_edits(key.lower(), name.lower()), name)
        for name in declared
        if len(name) > 2 and abs(len(name) - len(key)) <= 2
    )
    if close and close[0][0] <= (1 if len(close[0][1]) <= 4 else 2):
        return close[0][1]
    return None


def _shown(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _expected_types(schema_type: Any) -> str:
    names = [schema_type] if isinstance(schema_type, str) else list(schema_type)
    words = [TYPE_WORDS.get(name, name) for name in names]
    return " or ".join(words)


def _one_of_list(values: Sequence[Any], limit: int = 12) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    more = f", ... ({len(values) - limit} more)" if len(values) > limit else ""
    return f"[{shown}{more}]"


def issues_for(
    validator: Validator,
    data: Any,
    *,
    file: str,
    located: Located | None = None,
    prefix: JsonPath = (),
    redact: Callable[[JsonPath], bool] | None = None,
) -> list[Issue]:
    """Validate and turn every error into a located issue, in document order."""
    explained: list[_Explained] = [(p, m, p) for p, m in near_misses(validator.schema, data)]
    for error in validator.iter_errors(data):
        masked = redact is not None and redact((*prefix, *error.absolute_path))
        explained += _explain(error, masked)
    where = located or Located(None)
    issues: list[Issue] = []
    for path, message, key_path in explained:
        full = (*prefix, *path)
        at, key = (full, False) if key_path is None else ((*prefix, *key_path), True)
        issues.append(Issue(file, *where.where(at, key=key), format_path(full), message))
    issues.sort(key=lambda issue: (issue.line, issue.column, issue.path))
    return list(dict.fromkeys(issues))


_Explained = tuple[JsonPath, str, JsonPath | None]


def _explain(error: SchemaValidationError, masked: bool = False) -> list[_Explained]:
    """Return (path shown, message, path of the key to point at or None) per problem."""
    path: JsonPath = tuple(error.absolute_path)

    def _show(value: Any) -> str:
        return "***" if masked else _shown(value)

    value = error.instance
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    kind = error.validator
    expected: Any = error.validator_value
    if "propertyNames" in error.absolute_schema_path:
        expected_text = f"; expected text matching {expected}" if kind == "pattern" else ""
        message = f"key {_shown(value)} is not allowed here{expected_text}"
        return [(path, message, (*path, str(value)))]
    if kind == "additionalProperties" and isinstance(value, Mapping):
        return _unknown_keys(path, value, schema)
    if kind == "required" and isinstance(value, Mapping):
        missing = [name for name in expected if name not in value]
        # Only a key the schema does not declare can be the missing one misspelt.
        undeclared = _undeclared_keys(value, schema)
        out: list[_Explained] = []
        for name in missing:
            match = None if masked else did_you_mean(name, undeclared)
            note = f" (found {match!r}: a misspelling?)" if match else ""
            out.append(((*path, name), f"required field is missing{note}", None))
        return out
    if kind == "enum":
        options = list(expected)
        message = f"got {_show(value)}; expected one of {_one_of_list(options)}"
        texts = [option for option in options if isinstance(option, str)]
        match = did_you_mean(value, texts) if isinstance(value, str) and not masked else None
        return [(path, message + (f"; did you mean {match!r}?" if match else ""), None)]
    if kind in ("anyOf", "oneOf"):
        return [(path, _alternatives(error, masked), None)]
    if kind == "type":
        wanted = _expected_types(expected)
    elif kind == "format":
        wanted = _FORMAT_WORDS.get(str(expected), f"format {expected}")
    elif error.schema is False:
        return [(path, "is not allowed here", None)]
    elif kind in _WANTED:
        wanted = _WANTED[kind].format(expected)
    else:
        return [(path, error.message, None)]
    return [(path, f"got {_show(value)}; expected {wanted}", None)]


#: What a keyword wants, said with its value.
_WANTED = {
    "const": "{!r}",
    "pattern": "text matching {}",
    "minimum": "at least {}",
    "maximum": "at most {}",
    "exclusiveMinimum": "more than {}",
    "exclusiveMaximum": "less than {}",
    "minLength": "a length of at least {}",
    "maxLength": "a length of at most {}",
    "minItems": "at least this many items: {}",
    "maxItems": "at most this many items: {}",
}


def _undeclared_keys(value: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The keys of a mapping that its schema neither names nor matches by pattern."""
    known = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        key
        for key in value
        if key not in known and not any(re.search(pattern, str(key)) for pattern in patterns)
    ]


def _unknown_keys(
    path: JsonPath, value: Mapping[str, Any], schema: Mapping[str, Any]
) -> list[_Explained]:
    known = list(schema.get("properties", {}))
    extras = _undeclared_keys(value, schema)
    # A misspelt field often sits beside the fields it was meant to join.
    siblings = value.get("properties")
    candidates = known + (list(siblings) if isinstance(siblings, Mapping) else [])
    out: list[_Explained] = []
    for key in extras:
        near = hint(key, candidates, f"valid fields are {_one_of_list(known, 20)}" if known else "")
        message = (
            f"{key!r} is not a known field; {near}" if near else f"{key!r} is not allowed here"
        )
        # The path names the mapping that holds the field; the position is the key's own.
        out.append((path, message, (*path, key)))
    return out


def _alternatives(error: SchemaValidationError, masked: bool) -> str:
    context = list(error.context or [])
    here = [sub for sub in context if not sub.relative_path]
    if context and all(sub.validator == "required" for sub in context):
        names: list[str] = []
        for sub in context:
            wanted: Any = sub.validator_value
            names.extend(n for n in wanted if n not in names)
        if error.validator == "oneOf" and not here:
            return "matches more than one allowed form"
        return "needs " + " or ".join(repr(n) for n in names)
    if here and all(sub.validator == "type" for sub in here) and len(here) == len(context):
        types: list[Any] = [sub.validator_value for sub in here]
        flat = [t for ts in types for t in ([ts] if isinstance(ts, str) else ts)]
        shown = "***" if masked else _shown(error.instance)
        return f"got {shown}; expected {_expected_types(flat)}"
    if error.validator == "oneOf" and not context:
        return "matches more than one allowed form; it must match exactly one"
    description = error.schema.get("description") if isinstance(error.schema, Mapping) else None
    if isinstance(description, str):
        return f"does not fit: {description}"
    best = min(
        context, key=lambda sub: (len(sub.relative_path) * -1, str(sub.message)), default=None
    )
    if best is not None:
        inner = _explain(best, masked)
        if inner:
            sub_path, message, _key = inner[0]
            rel = tuple(sub_path)[len(error.absolute_path) :]
            where = format_path(rel)
            return f"does not fit any allowed form ({where + ': ' if where else ''}{message})"
    return "does not fit any allowed form"
