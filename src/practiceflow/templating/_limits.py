"""The limits of the template sandbox (for users: ``docs/recipes-reference.md``, "Limits"),
and Jinja's filters, tests, operators and calls wrapped with them.

Jinja's sandbox stops attribute escapes but not templates that allocate gigabytes or recurse
without end. A value's size is counted as a tree (its strings' characters plus one per item);
each render gets a fresh :class:`RenderBudget` that every wrapped operation charges for its
inputs and result, and an amplifying one (padding, widths, ``*``, ``join``, ``replace``...) is
refused before it runs when its result would exceed :data:`MAX_SIZE`.
"""

from __future__ import annotations

import operator
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, MappingView
from contextvars import ContextVar
from dataclasses import dataclass
from functools import wraps
from types import ModuleType
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.runtime import Context, LoopContext, Macro

#: Units of work (loop iterations and items built or read) one render may do.
MAX_WORK = 500_000
#: Characters of text one render may build or read, all operations together.
MAX_TEXT = 10_000_000
#: Loop iterations one render may run, all loops together.
MAX_ITERATIONS = 100_000
#: How deep macro calls (and recursive loops) may nest.
MAX_CALL_DEPTH = 25

#: Values that are charged nothing (and are checked first, being the commonest).
SCALARS = (int, float, type(None))
# What a result's items are counted in; a string is counted in characters instead.
_COLLECTIONS = (list, tuple, dict, set, frozenset, range, MappingView)


class LimitError(SecurityError):
    """A template operation would exceed one of the limits."""


@dataclass
class RenderBudget:
    """What one render has spent so far: units of work, characters built or read, loop
    iterations, and macro calls in progress."""

    work: int = 0
    text: int = 0
    iterations: int = 0
    depth: int = 0

    def charge(self, what: str, *, work: int = 0, text: int = 0) -> None:
        """Add to the work and text spent by ``what`` (``'map'``, ``str.center``...); a
        LimitError past :data:`MAX_WORK` or :data:`MAX_TEXT`."""
        self.work += work
        self.text += text
        if self.work > MAX_WORK:
            message = (
                f"{what} would take this render past {MAX_WORK} units of work "
                "(loop iterations and items built or read)"
            )
            raise LimitError(message)
        if self.text > MAX_TEXT:
            message = (
                f"{what} would take this render past {MAX_TEXT} characters of text built or read"
            )
            raise LimitError(message)


_CURRENT: ContextVar[RenderBudget | None] = ContextVar("practiceflow_render_budget", default=None)


class render_budget:
    """``with render_budget() as budget:``: a fresh budget for one render (or one template's
    load-time evaluation) until the block ends; the previous one is restored after."""

    def __enter__(self) -> RenderBudget:
        budget = RenderBudget()
        self._token = _CURRENT.set(budget)
        return budget

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


def current_budget() -> RenderBudget:
    """The budget of the render in progress (outside a render: a new one, not kept)."""
    return _CURRENT.get() or RenderBudget()


def charge_result(value: Any, what: str) -> Any:
    """Charge what ``what`` returned: characters, items, or (for an iterator, returned
    wrapped) each item as it is pulled."""
    if isinstance(value, SCALARS):
        return value
    if isinstance(value, Iterator) and not isinstance(value, LoopContext):
        return _charged_items(value, current_budget(), f"the items of {what}")
    charge_length(value, what)
    return value


def charge_length(value: Any, what: str) -> None:
    """Charge a string's characters or a collection's items (anything else is free)."""
    if isinstance(value, str | bytes):
        current_budget().charge(what, text=len(value))
    elif isinstance(value, _COLLECTIONS):
        current_budget().charge(what, work=len(value))


def charge_body(size: int) -> None:
    """Charge one run of a loop's or a macro's body: its ``size`` in nodes (counted when
    the template is compiled)."""
    current_budget().charge("a loop's or macro's body", work=size)


def _charged_items(items: Iterator[Any], budget: RenderBudget, what: str) -> Iterator[Any]:
    for item in items:
        budget.charge(what, work=1)
        yield item


def _counted(iterable: Iterable[Any]) -> Iterator[Any]:
    budget = current_budget()
    for item in iterable:
        budget.iterations += 1
        if budget.iterations > MAX_ITERATIONS:
            message = f"loops would run more than {MAX_ITERATIONS} iterations in one render"
            raise LimitError(message)
        budget.charge("a loop", work=1)
        yield item


def counted_iterations(iterable: Any) -> Any:
    """What every ``{% for %}`` iterates through: counts against the render's budget
    (an undefined value is passed through for Jinja to report)."""
    if not isinstance(iterable, Iterable):
        return iterable
    return _counted(iterable)


def nested_call(call: Callable[[], Any]) -> Any:
    """Run a macro or recursive-loop call one level deeper, refusing past
    :data:`MAX_CALL_DEPTH`."""
    budget = current_budget()
    if budget.depth >= MAX_CALL_DEPTH:
        message = f"macro calls nest deeper than {MAX_CALL_DEPTH} levels"
        raise LimitError(message)
    budget.depth += 1
    try:
        return call()
    finally:
        budget.depth -= 1


#: Largest value (characters plus items, counted as a tree) a template may build.
MAX_SIZE = 1_000_000


def refuse_over(what: str, size: int, unit: str = "characters") -> None:
    """Refuse an operation whose result would be ``size`` (past :data:`MAX_SIZE`)."""
    if size > MAX_SIZE:
        message = f"{what} would build {size} {unit}; the limit is {MAX_SIZE}"
        raise LimitError(message)


def measure(value: Any, limit: int = MAX_SIZE) -> tuple[int, int, int]:
    """Walk a value as a tree, stopping once its size passes ``limit``: its size, the items
    walked and the characters of the strings walked."""
    size = items = chars = 0
    stack = [value]
    while stack and size <= limit:
        item = stack.pop()
        items += 1
        if isinstance(item, str | bytes):
            size += len(item)
            chars += len(item)
        elif isinstance(item, SCALARS):  # the common leaves, before the slower Mapping check
            size += 1
        elif isinstance(item, list | tuple | set | frozenset):
            size += 1
            stack.extend(item)
        elif isinstance(item, Context):  # registered as a Mapping; not data
            size += 1
        elif isinstance(item, Mapping):
            size += 1 + len(item)
            for key, child in item.items():
                stack.append(key)
                stack.append(child)
        else:
            size += 1
    return size, items, chars


def size_of(value: Any, limit: int = MAX_SIZE) -> int:
    """A value's size as a tree (a number above ``limit`` when it is larger)."""
    return measure(value, limit)[0]


def check_size(value: Any, what: str) -> Any:
    """Return ``value``, refusing it when larger than :data:`MAX_SIZE`."""
    size = size_of(value)
    if size > MAX_SIZE:
        message = f"{what} is larger than the limit of {MAX_SIZE} characters and items"
        raise LimitError(message)
    return value


def check_inputs(values: Iterable[Any], what: str) -> None:
    """Check what an operation reads (each argument) for size and charge the render for
    reading it, in one step."""
    work = text = 0
    for value in values:
        size, items, chars = measure(value)
        if size > MAX_SIZE:
            message = (
                f"the input of {what} is larger than the limit of {MAX_SIZE} characters and items"
            )
            raise LimitError(message)
        work += items
        text += chars
    current_budget().charge(what, work=work, text=text)


def checked_mul(left: Any, right: Any) -> Any:
    """``*`` refusing a repetition larger than the limit."""
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and isinstance(count, int) and count > 0:
            refuse_over("repetition", size_of(seq) * count, "characters and items")
    return charge_result(left * right, "'*'")


def checked_add(left: Any, right: Any) -> Any:
    """``+`` refusing strings or lists joined beyond the limit."""
    if isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
        refuse_over("'+'", size_of(left) + size_of(right), "characters and items")
    return charge_result(left + right, "'+'")


_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?[a-zA-Z%]")


def _check_printf(text: str, what: str) -> None:
    for width, precision in _PRINTF_SPEC.findall(text):
        if "*" in (width, precision):
            message = f"{what}: a '*' width or precision is not allowed in templates"
            raise LimitError(message)
        for number in (width, precision):
            if number:
                refuse_over(what, int(number))


def checked_mod(left: Any, right: Any) -> Any:
    """``%`` with printf widths and precisions checked when the left side is text."""
    if isinstance(left, str):
        _check_printf(left, "'%' formatting")
        check_inputs((right,), "'%'")
    return charge_result(left % right, "'%'")


_COMPARISONS: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "eq": ("==", operator.eq),
    "ne": ("!=", operator.ne),
    "gt": (">", operator.gt),
    "gteq": (">=", operator.ge),
    "lt": ("<", operator.lt),
    "lteq": ("<=", operator.le),
    "in": ("in", lambda left, right: left in right),
    "notin": ("not in", lambda left, right: left not in right),
}


def checked_compare(left: Any, op: str, right: Any) -> Any:
    """``left op right`` (``op`` in Jinja's names: ``eq``, ``in``...), charged for reading
    both sides."""
    symbol, compare = _COMPARISONS[op]
    check_inputs((left, right), f"'{symbol}'")
    return compare(left, right)


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
            refuse_over(what, int(number))


def _replaced(text: str | bytes, old: Any, new: Any, count: Any = -1) -> None:
    texts = isinstance(old, str | bytes) and isinstance(new, str | bytes)
    if not texts or not isinstance(count, int) or isinstance(count, bool):
        return
    hits = text.count(old) if old else len(text) + 1
    if count >= 0:
        hits = min(hits, count)
    refuse_over("replace", len(text) + hits * max(len(new) - len(old), 0))


def call_name(obj: Any) -> str:
    """How a message names a call: ``str.center``, ``macro f``, ``'dict'``."""
    if isinstance(obj, Macro):
        return f"macro {obj.name}"
    # The sandbox wraps str.format in a function of its own; the method is __wrapped__.
    target = getattr(obj, "__wrapped__", obj)
    name = getattr(target, "__name__", type(obj).__name__)
    name = "range" if name == "safe_range" else name  # the sandbox's range
    owner = getattr(target, "__self__", None)
    if owner is None or isinstance(owner, ModuleType):
        return f"'{name}'"
    return f"{type(owner).__name__}.{name}"


def check_call(
    obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str
) -> tuple[Any, ...]:
    """Check a call a template makes, charged for reading its arguments and the object it
    is a method of; return the positional arguments to call with (``join``'s iterable made
    a list here, so that it is counted and still there for the call)."""
    check_inputs((*args, *kwargs.values()), what)
    owner = getattr(getattr(obj, "__wrapped__", obj), "__self__", None)
    charge_length(owner, what)
    if not isinstance(owner, str | bytes):
        return args
    name = getattr(obj, "__name__", "")
    if name in ("center", "ljust", "rjust", "zfill"):
        width = args[0] if args else kwargs.get("width", 0)
        refuse_over(name, max(len(owner), width) if isinstance(width, int) else len(owner))
    elif name == "expandtabs":
        size = args[0] if args else kwargs.get("tabsize", 8)
        tabs = owner.count(b"\t") if isinstance(owner, bytes) else owner.count("\t")
        if isinstance(size, int):
            refuse_over(name, len(owner) + tabs * size)
    elif name == "join" and args:
        items = list(args[0]) if not isinstance(args[0], str) else args[0]
        current_budget().charge(what, work=len(items))
        lengths = sum(len(item) for item in items if isinstance(item, str | bytes))
        refuse_over(name, lengths + len(owner) * max(len(items) - 1, 0))
        return (items, *args[1:])
    elif name == "replace" and len(args) >= 2:
        _replaced(owner, *args[:3])
    elif name in ("format", "format_map") and isinstance(owner, str):
        _check_format_string(owner, f"str.{name}")
    elif name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        refuse_over(name, len(owner) * max(longest, 1))
    return args


def _charged(
    name: str, func: Callable[..., Any], check: Callable[..., None] | None = None
) -> Callable[..., Any]:
    """Wrap a filter or test: ``check`` sees the data arguments first, then the inputs are
    checked for size, and reading them and the result are charged."""
    what = f"'{name}'"
    passes = getattr(func, "jinja_pass_arg", None) is not None

    @wraps(func)
    def charged(*args: Any, **kwargs: Any) -> Any:
        if check is not None:
            check(*(args[1:] if passes else args), **kwargs)
        check_inputs((*args, *kwargs.values()), what)
        return charge_result(func(*args, **kwargs), what)

    return charged


def _check_center(value: Any, width: Any = 80) -> None:
    if isinstance(width, int):
        refuse_over("center", max(len(str(value)), width))


def _check_indent(text: Any, width: Any = 4, first: bool = False, blank: bool = False) -> None:
    del first, blank
    pad = width if isinstance(width, int) else len(str(width))
    text = str(text)
    refuse_over("indent", len(text) + (text.count("\n") + 1) * max(pad, 0))


def _check_wordwrap(text: Any, width: Any = 79, *args: Any, **kwargs: Any) -> None:
    del width
    wrap = kwargs.get("wrapstring", args[1] if len(args) > 1 else None)
    if isinstance(wrap, str):
        length = len(str(text))
        refuse_over("wordwrap", length + (length + 1) * len(wrap))


def _check_fill(name: str) -> Callable[..., None]:
    def check(value: Any, count: Any, fill_with: Any = None) -> None:
        del value
        if isinstance(count, int) and (fill_with is not None or name == "slice"):
            refuse_over(name, count, "items")

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
        items = list(value) if isinstance(value, Iterable) else value
        check_inputs((items,), "'join'")
        if isinstance(items, list) and attribute is None:
            lengths = sum(len(str(item)) for item in items)
            refuse_over("join", lengths + len(str(d)) * max(len(items) - 1, 0))
        return charge_result(join(eval_ctx, items, d, attribute), "'join'")

    return bounded_join


def concat(*parts: Any) -> str:
    """The ``~`` operator: parts turned to text and joined, within the limit."""
    check_inputs(parts, "'~'")
    refuse_over("'~'", sum(len(p) if isinstance(p, str) else size_of(p) for p in parts))
    text = "".join(str(part) for part in parts)
    charge_length(text, "'~'")
    return text


def bounded_filters(filters: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Every filter wrapped with the limits (the amplifying ones checked for their result)."""
    checks: dict[str, Callable[..., None]] = {
        "center": _check_center,
        "format": lambda value, *_, **__: _check_printf(str(value), "format"),
        "indent": _check_indent,
        "replace": lambda text, old, new, count=None: _replaced(
            str(text), old, new, -1 if count is None else count
        ),
        "wordwrap": _check_wordwrap,
        "batch": _check_fill("batch"),
        "slice": _check_fill("slice"),
        "tojson": _check_tojson,
    }
    return {
        name: _join(filters) if name == "join" else _charged(name, func, checks.get(name))
        for name, func in filters.items()
    }


def bounded_tests(tests: Mapping[str, Any]) -> dict[str, Callable[..., Any]]:
    """Every test (``is in``, ``is eq``...) wrapped: inputs checked and charged."""
    return {name: _charged(name, func) for name, func in tests.items()}
