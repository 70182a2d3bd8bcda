"""The per-render budget of the template sandbox (used by :mod:`practiceflow.templating._bounded`).

The size limits of :mod:`practiceflow.templating._bounded` hold for each value; this module
bounds what one render does in all, so that no template (nor a short one repeated by a
loop) can hold a process for long or fill its memory. Each render of a template, and the
load-time evaluation of its constant expressions, gets a fresh :class:`RenderBudget` (see
:class:`render_budget`), which every bounded operation charges as it goes:

* **work**, in units: one per loop iteration plus one per node of the loop's body (and a
  macro's body its nodes at each call), one per item of each collection that a filter,
  method, global (``range``) or operator returns, one per item pulled from a lazy result
  (``map``, ``select``, ``reject``, ``batch``... are charged item by item, so a chain of
  them is charged as it runs), and one per item of every argument a filter, test, method or
  comparison reads;
* **text**, in characters: every character of every string such an operation returns or
  reads;
* **iterations**: loop iterations, all loops together;
* **depth**: macro calls (and recursive loops) in progress.

A charge past a limit raises :class:`LimitError` before the operation goes on, so a render
stops after a bounded amount of work and memory whatever the template. A unit stands for one
small step of interpreted work, so :data:`MAX_WORK` keeps a render well under a second, and
with :data:`MAX_TEXT` what it allocates well under 100 MB; ordinary recipes use a small
fraction of either.

Outside a render (a plugin rendering through the environment itself) each operation is
charged to a budget of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MappingView
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.runtime import LoopContext, Macro

__all__ = [
    "MAX_CALL_DEPTH",
    "MAX_ITERATIONS",
    "MAX_TEXT",
    "MAX_WORK",
    "SCALARS",
    "LimitError",
    "RenderBudget",
    "charge_body",
    "charge_length",
    "charge_result",
    "counted_iterations",
    "current_budget",
    "is_nested_call",
    "nested_call",
    "render_budget",
]

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
    """What one render has spent so far.

    Attributes:
        work: units of work (module docstring).
        text: characters built or read.
        iterations: loop iterations.
        depth: macro calls in progress.
    """

    work: int = 0
    text: int = 0
    iterations: int = 0
    depth: int = 0

    def charge(self, what: str, *, work: int = 0, text: int = 0) -> None:
        """Add to the work and text spent, refusing past a limit.

        Args:
            what: the operation, for the message (``'map'``, ``str.center``, ``a loop``).
            work: units of work.
            text: characters.

        Raises:
            LimitError: when the render would pass :data:`MAX_WORK` or :data:`MAX_TEXT`.
        """
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
    """Give one render (or one template's load-time evaluation) a fresh budget.

    ``with render_budget() as budget:`` makes ``budget`` the one every operation charges
    until the block ends; the previous one (if any) is restored after.
    """

    def __enter__(self) -> RenderBudget:
        budget = RenderBudget()
        self._token = _CURRENT.set(budget)
        return budget

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


def current_budget() -> RenderBudget:
    """The budget of the render in progress (outside a render: a new one, not kept)."""
    budget = _CURRENT.get()
    return budget if budget is not None else RenderBudget()


def charge_result(value: Any, what: str) -> Any:
    """Charge what an operation returned: characters, items, or items as they are pulled.

    Args:
        value: the result.
        what: the operation, for the message.

    Returns:
        ``value``, or for an iterator one that charges each item as it is pulled.

    Raises:
        LimitError: past a limit of the render's budget.
    """
    if isinstance(value, SCALARS):
        return value
    if isinstance(value, Iterator) and not isinstance(value, LoopContext):
        return _charged_items(value, current_budget(), f"the items of {what}")
    charge_length(value, what)
    return value


def charge_length(value: Any, what: str) -> None:
    """Charge a string's characters or a collection's items (anything else is free).

    Args:
        value: any value.
        what: the operation, for the message.

    Raises:
        LimitError: past a limit of the render's budget.
    """
    if isinstance(value, str | bytes):
        current_budget().charge(what, text=len(value))
    elif isinstance(value, _COLLECTIONS):
        current_budget().charge(what, work=len(value))


def charge_body(size: int) -> None:
    """Charge one run of a loop's or a macro's body: one unit per node of its template code.

    Args:
        size: the body's nodes (counted when the template is compiled).

    Raises:
        LimitError: past :data:`MAX_WORK`.
    """
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
    """What every ``{% for %}`` iterates through: counts against the render's budget.

    Args:
        iterable: what the loop iterates.

    Returns:
        A counting iterator (an undefined value is passed through for Jinja to report).
    """
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
    budget = current_budget()
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
