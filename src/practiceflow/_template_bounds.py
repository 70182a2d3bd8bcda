"""Size, loop and recursion limits of the template sandbox (used by :mod:`practiceflow.templating`).

Jinja's sandbox stops attribute escapes but not templates that allocate gigabytes or recurse
without end. Every operation that can build a value much larger than its inputs is checked
*before* it runs against :data:`MAX_SIZE`:

* the size of a value is counted as a tree: characters of a string, plus one per item of a
  list, tuple or mapping and everything inside it (a list holding the same big string twice
  counts it twice, because that is what printing it costs);
* no filter, method or operator receives a value larger than :data:`MAX_SIZE`, and no
  rendered value or text output exceeds it;
* the amplifying operations (padding and centering, printf and ``str.format`` widths and
  precisions, ``*`` and ``+``, ``~``, ``join``, ``replace``, ``indent``, ``wordwrap``,
  ``batch`` and ``slice`` fills, ``translate``, ``expandtabs``, ``tojson`` indentation) are
  refused when their result would exceed it;
* one render runs at most :data:`MAX_ITERATIONS` loop iterations in all, and macros (and
  recursive loops) nest at most :data:`MAX_CALL_DEPTH` deep.

A refusal raises :class:`LimitError` (a :class:`jinja2.exceptions.SecurityError`) whose text
names the operation, the size it would reach and the limit.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import wraps
from typing import Any

from jinja2 import pass_context
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context, LoopContext, Macro

__all__ = [
    "MAX_CALL_DEPTH",
    "MAX_ITERATIONS",
    "MAX_SIZE",
    "LimitError",
    "bounded_filters",
    "check_call",
    "check_size",
    "checked_add",
    "checked_mod",
    "checked_mul",
    "counted_iterations",
    "nested_call",
    "render_budget",
]

#: Largest value (characters plus items, see the module docstring) a template may build.
MAX_SIZE = 1_000_000
#: Loop iterations one render may run, all loops together.
MAX_ITERATIONS = 100_000
#: How deep macro calls (and recursive loops) may nest.
MAX_CALL_DEPTH = 25


class LimitError(SecurityError):
    """A template operation would exceed one of the limits."""


def _refuse(what: str, size: int, unit: str = "characters") -> None:
    if size > MAX_SIZE:
        message = f"{what} would build {size} {unit}; the limit is {MAX_SIZE}"
        raise LimitError(message)


def size_of(value: Any, limit: int = MAX_SIZE) -> int:
    """Count a value as a tree (module docstring), stopping once past ``limit``.

    Args:
        value: any value.
        limit: stop counting beyond this.

    Returns:
        The size, or a number above ``limit`` when it is larger.
    """
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item)
        elif isinstance(item, Context):  # registered as a Mapping; not data
            total += 1
        elif isinstance(item, Mapping):
            total += 1 + len(item)
            for key, child in item.items():
                stack.append(key)
                stack.append(child)
        elif isinstance(item, list | tuple | set | frozenset):
            total += 1
            stack.extend(item)
        else:
            total += 1
    return total


def check_size(value: Any, what: str) -> Any:
    """Refuse a value larger than :data:`MAX_SIZE`; return it otherwise.

    Args:
        value: the value.
        what: what it is, for the message.

    Returns:
        ``value``.

    Raises:
        LimitError: when it is too large.
    """
    size = size_of(value)
    if size > MAX_SIZE:
        message = f"{what} is larger than the limit of {MAX_SIZE} characters and items"
        raise LimitError(message)
    return value


# -- per-render budget -------------------------------------------------------------------


@dataclass
class _Budget:
    iterations: int = 0
    depth: int = 0


_BUDGET: ContextVar[_Budget | None] = ContextVar("practiceflow_template_budget", default=None)


class render_budget:
    """Give one render its own loop and call-depth budget."""

    def __enter__(self) -> None:
        self._token = _BUDGET.set(_Budget())

    def __exit__(self, *exc: object) -> None:
        _BUDGET.reset(self._token)


def _budget() -> _Budget:
    budget = _BUDGET.get()
    if budget is None:  # rendered outside CompiledTemplate.render: a budget of its own
        budget = _Budget()
        _BUDGET.set(budget)
    return budget


def _counted(iterable: Iterable[Any]) -> Iterator[Any]:
    budget = _budget()
    for item in iterable:
        budget.iterations += 1
        if budget.iterations > MAX_ITERATIONS:
            message = f"loops would run more than {MAX_ITERATIONS} iterations in one render"
            raise LimitError(message)
        yield item


@pass_context
def counted_iterations(context: Context, iterable: Any) -> Any:
    """The filter every ``{% for %}`` iterates through: counts against the render's budget.

    Args:
        context: the render's context (makes the filter impossible to fold at compile time).
        iterable: what the loop iterates.

    Returns:
        A counting iterator (an undefined value is passed through for Jinja to report).
    """
    del context
    if not isinstance(iterable, Iterable):
        return iterable
    return _counted(iterable)


def nested_call(call: Callable[[], Any]) -> Any:
    """Run a macro or recursive-loop call one level deeper, refusing past the limit.

    Args:
        call: the call to make.

    Returns:
        What it returns.

    Raises:
        LimitError: past :data:`MAX_CALL_DEPTH`.
    """
    budget = _budget()
    if budget.depth >= MAX_CALL_DEPTH:
        message = f"macro calls nest deeper than {MAX_CALL_DEPTH} levels"
        raise LimitError(message)
    budget.depth += 1
    try:
        return call()
    finally:
        budget.depth -= 1


def is_nested_call(obj: Any) -> bool:
    """Tell whether a call is to a macro or a recursive loop (counted by depth)."""
    return isinstance(obj, Macro | LoopContext)


# -- operators -----------------------------------------------------------------------------


def checked_mul(left: Any, right: Any) -> Any:
    """``*`` refusing a repetition larger than the limit."""
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and isinstance(count, int) and count > 0:
            _refuse("repetition", size_of(seq) * count, "characters and items")
    return left * right


def checked_add(left: Any, right: Any) -> Any:
    """``+`` refusing strings or lists joined beyond the limit."""
    if isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
        _refuse("'+'", size_of(left) + size_of(right), "characters and items")
    return left + right


_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?[a-zA-Z%]")


def _check_printf(text: str, what: str) -> None:
    for width, precision in _PRINTF_SPEC.findall(text):
        if "*" in (width, precision):
            message = f"{what}: a '*' width or precision is not allowed in templates"
            raise LimitError(message)
        for number in (width, precision):
            if number:
                _refuse(what, int(number))


def checked_mod(left: Any, right: Any) -> Any:
    """``%`` with printf widths and precisions checked when the left side is text."""
    if isinstance(left, str):
        _check_printf(left, "'%' formatting")
        check_size(right, "a value formatted with '%'")
    return left % right


# -- str.format ----------------------------------------------------------------------------

_DIGITS = re.compile(r"\d+")


def _check_format_string(text: str, what: str) -> None:
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return  # str.format reports malformed text itself
    for _, _, spec, _ in fields:
        if not spec:
            continue
        if "{" in spec:
            message = f"{what}: a nested field in a format spec is not allowed in templates"
            raise LimitError(message)
        for number in _DIGITS.findall(spec):
            _refuse(what, int(number))


# -- methods -------------------------------------------------------------------------------


def _padded(self: str | bytes, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    width = args[0] if args else kwargs.get("width", 0)
    return max(len(self), width) if isinstance(width, int) else len(self)


def _replaced(
    text: str | bytes, old: Any, new: Any, count: Any = -1, *, what: str = "replace"
) -> None:
    if not isinstance(old, str | bytes) or not isinstance(new, str | bytes):
        return
    if not isinstance(count, int) or isinstance(count, bool):
        return
    hits = text.count(old) if old else len(text) + 1  # type: ignore[arg-type]
    if count >= 0:
        hits = min(hits, count)
    _refuse(what, len(text) + hits * max(len(new) - len(old), 0))


def check_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Check a method call a template makes; return its (possibly materialised) arguments.

    Args:
        obj: the callable.
        args: positional arguments.
        kwargs: keyword arguments.

    Returns:
        The positional arguments to call with (``join``'s iterable is made a list here, so
        that it is counted and still there for the call).

    Raises:
        LimitError: when an argument or the result would be too large.
    """
    for value in (*args, *kwargs.values()):
        check_size(value, "an argument")
    # The sandbox wraps str.format in a function of its own; the method is __wrapped__.
    owner = getattr(getattr(obj, "__wrapped__", obj), "__self__", None)
    if not isinstance(owner, str | bytes):
        return args
    name = getattr(obj, "__name__", "")
    if name in ("center", "ljust", "rjust", "zfill"):
        _refuse(name, _padded(owner, args, kwargs))
    elif name == "expandtabs":
        size = args[0] if args else kwargs.get("tabsize", 8)
        tabs = owner.count(b"\t") if isinstance(owner, bytes) else owner.count("\t")
        if isinstance(size, int):
            _refuse(name, len(owner) + tabs * size)
    elif name == "join" and args:
        items = list(_counted(args[0])) if not isinstance(args[0], str) else args[0]
        lengths = sum(len(item) for item in items if isinstance(item, str | bytes))
        _refuse(name, lengths + len(owner) * max(len(items) - 1, 0))
        return (items, *args[1:])
    elif name == "replace" and len(args) >= 2:
        _replaced(owner, *args[:3])
    elif name in ("format", "format_map") and isinstance(owner, str):
        _check_format_string(owner, f"str.{name}")
    elif name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        _refuse(name, len(owner) * max(longest, 1))
    return args


# -- filters -------------------------------------------------------------------------------


def _checked_inputs(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            check_size(value, f"the input of '{name}'")
        return func(*args, **kwargs)

    return checked


def _bounded(name: str, func: Callable[..., Any], check: Callable[..., None]) -> Callable[..., Any]:
    """Wrap a filter: inputs checked for size, then ``check`` sees the data arguments."""
    inner = _checked_inputs(name, func)
    passes = getattr(func, "jinja_pass_arg", None)

    @wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        data = args[1:] if passes is not None else args
        check(*data, **kwargs)
        return inner(*args, **kwargs)

    return bounded


def _check_center(value: Any, width: Any = 80) -> None:
    if isinstance(width, int):
        _refuse("center", max(len(str(value)), width))


def _check_format(value: Any, *args: Any, **kwargs: Any) -> None:
    del args, kwargs
    _check_printf(str(value), "format")


def _check_indent(text: Any, width: Any = 4, first: bool = False, blank: bool = False) -> None:
    del first, blank
    pad = width if isinstance(width, int) else len(str(width))
    text = str(text)
    _refuse("indent", len(text) + (text.count("\n") + 1) * max(pad, 0))


def _check_replace(text: Any, old: Any, new: Any, count: Any = None) -> None:
    _replaced(str(text), old, new, -1 if count is None else count)


def _check_wordwrap(text: Any, width: Any = 79, *args: Any, **kwargs: Any) -> None:
    del width
    wrap = kwargs.get("wrapstring", args[1] if len(args) > 1 else None)
    if isinstance(wrap, str):
        length = len(str(text))
        _refuse("wordwrap", length + (length + 1) * len(wrap))


def _check_fill(name: str) -> Callable[..., None]:
    def check(value: Any, count: Any, fill_with: Any = None) -> None:
        del value
        if isinstance(count, int) and (fill_with is not None or name == "slice"):
            _refuse(name, count, "items")

    return check


def _check_tojson(value: Any, indent: Any = None) -> None:
    del value
    if isinstance(indent, int) and indent > 16:
        message = f"tojson: an indent of {indent} is over the limit of 16"
        raise LimitError(message)


def _join(filters: Mapping[str, Callable[..., Any]]) -> Callable[..., Any]:
    join = filters["join"]

    @wraps(join)
    def bounded_join(eval_ctx: Any, value: Any, d: str = "", attribute: Any = None) -> Any:
        items = list(_counted(value)) if isinstance(value, Iterable) else value
        check_size(items, "the input of 'join'")
        if isinstance(items, list) and attribute is None:
            lengths = sum(len(str(item)) for item in items)
            _refuse("join", lengths + len(str(d)) * max(len(items) - 1, 0))
        return join(eval_ctx, items, d, attribute)

    return bounded_join


def concat(*parts: Any) -> str:
    """The ``~`` operator: parts turned to text and joined, within the limit."""
    total = 0
    for part in parts:
        check_size(part, "a value joined with '~'")
        total += len(part) if isinstance(part, str) else size_of(part)
    _refuse("'~'", total)
    return "".join(str(part) for part in parts)


def bounded_filters(filters: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Wrap every filter of an environment with the limits (module docstring).

    Args:
        filters: the environment's filters.

    Returns:
        The wrapped filters (the amplifying ones checked for their result, all for inputs).
    """
    checks: dict[str, Callable[..., None]] = {
        "center": _check_center,
        "format": _check_format,
        "indent": _check_indent,
        "replace": _check_replace,
        "wordwrap": _check_wordwrap,
        "batch": _check_fill("batch"),
        "slice": _check_fill("slice"),
        "tojson": _check_tojson,
    }
    wrapped: dict[str, Callable[..., Any]] = {}
    for name, func in filters.items():
        if name == "join":
            wrapped[name] = _join(filters)
        elif name in checks:
            wrapped[name] = _bounded(name, func, checks[name])
        else:
            wrapped[name] = _checked_inputs(name, func)
    return wrapped
