"""The ``pattern`` of a module's schema, matched in linear time with RE2.

The pattern is the user's and the text comes from outside: Python's backtracking engine would
hang on ``^(a+)+$``. A pattern RE2 cannot compile is refused at load time with its location.
Meta-schemas shipped in ``manifests/`` are ours and keep Python's engine.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import re2
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the problem is reported as an Issue, not on stderr
    return options


@lru_cache(maxsize=512)
def compile_pattern(text: str) -> Any:
    """Compile a module's pattern with RE2 (linear-time matching).

    Raises:
        re2.error: when RE2 cannot compile it (see :func:`pattern_problem`).
    """
    return re2.compile(text, _options())


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
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


#: Draft 2020-12 whose ``pattern`` keyword matches with RE2 (a module's schemas only).
LinearValidator: Any = validators.extend(  # type: ignore[no-untyped-call]  # jsonschema is untyped here
    Draft202012Validator, {"pattern": _pattern}
)
