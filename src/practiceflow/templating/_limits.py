"""The limits of the template sandbox (for users: ``docs/recipes-reference.md``, "Limits").

Jinja's sandbox stops attribute escapes but not templates that allocate gigabytes or recurse
without end. A value's size is counted as a tree (its strings' characters plus one per item);
each render gets a fresh :class:`RenderBudget` that every operation ``_bounded.py`` wraps charges.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MappingView
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.runtime import Context, LoopContext

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
