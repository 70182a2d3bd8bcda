"""The sandboxed Jinja environment, its filters and clock, and the rewrites that bound every
template: :func:`bound_tree` routes loops, macro bodies, ``~`` and comparisons through the
budget; :func:`check_constants` refuses at load time a constant operation over the limits.
"""

from __future__ import annotations

import copy
import json
import operator
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any, cast
from urllib.parse import quote

from jinja2 import StrictUndefined, nodes
from jinja2.nodes import EvalContext
from jinja2.runtime import Context, LoopContext, Macro, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from practiceflow.templating import _limits as budget

#: Largest integer, in bits, that ``**`` may build.
MAX_POWER_BITS = 4096


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox whose operators, calls, filters and tests are bounded."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    # Called by every loop, ``~`` and comparison (not filters: templates cannot name them).
    pf_counted_iterations = staticmethod(budget.counted_iterations)
    pf_concat = staticmethod(budget.concat)
    pf_compare = staticmethod(budget.checked_compare)
    pf_charge_body = staticmethod(budget.charge_body)

    def getattr(self, obj: Any, attribute: str) -> Any:
        # A mapping's keys come before Python's attributes: ``steps.find.items`` is the
        # list a search returned (every list action's output field), never ``dict.items``.
        if isinstance(obj, Mapping):
            try:
                return obj[attribute]
            except (KeyError, TypeError):
                pass
        return super().getattr(obj, attribute)

    def call_binop(self, context: Context, operator_: str, left: Any, right: Any) -> Any:
        return _BINOPS[operator_](left, right)  # Jinja calls it for intercepted_binops only

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if __obj in _OWN_CALLS:
            # Calls the compiler inserted (see bound_tree): positional arguments only (the
            # keywords are Jinja's bookkeeping); they check and charge for themselves.
            return __obj(*args)
        what = budget.call_name(__obj)
        args = budget.check_call(__obj, args, kwargs, what)
        call = super().call
        if isinstance(__obj, Macro | LoopContext):  # counted by depth
            result = budget.nested_call(lambda: call(__context, __obj, *args, **kwargs))
        else:
            result = call(__context, __obj, *args, **kwargs)
        return budget.charge_result(result, what)


def _checked_pow(left: Any, right: Any) -> Any:
    integers = isinstance(left, int) and isinstance(right, int) and right > 0
    if integers and abs(left) > 1 and left.bit_length() * right > MAX_POWER_BITS:
        message = f"{left!r} ** {right!r} would exceed {MAX_POWER_BITS} bits"
        raise budget.LimitError(message)
    return operator.pow(left, right)


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "*": budget.checked_mul,
    "**": _checked_pow,
    "+": budget.checked_add,
    "%": budget.checked_mod,
}
_OWN_CALLS = frozenset(
    {budget.counted_iterations, budget.concat, budget.checked_compare, budget.charge_body}
)


_clock: Callable[[], datetime] | None = None


def set_clock(clock: Callable[[], datetime] | None) -> None:
    """Replace the clock behind ``now`` (for tests); ``None`` restores the real UTC clock."""
    global _clock
    _clock = clock


def utcnow() -> datetime:
    """Return the current time in UTC, from the clock set by :func:`set_clock`."""
    return (_clock() if _clock is not None else datetime.now(UTC)).astimezone(UTC)


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, Undefined):
        value._fail_with_undefined_error()
    if isinstance(value, str) and value.strip().lower() == "now":
        return utcnow()
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            message = f"got {value!r}; expected an ISO 8601 date or datetime, or 'now'"
            raise ValueError(message) from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    message = f"got {value!r}; expected a date, a datetime, an ISO 8601 string or 'now'"
    raise ValueError(message)


def filter_date(value: Any) -> str:
    """``{{ x | date }}``: a datetime (naive means UTC), date, ISO 8601 string or ``"now"``
    as the UTC calendar date ``YYYY-MM-DD``."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str) and len(value.strip()) == 10:  # a bare date has no zone
        return _as_datetime(value).date().isoformat()
    return _as_datetime(value).astimezone(UTC).date().isoformat()


def filter_datetime(value: Any) -> str:
    """``{{ x | datetime }}``: the same inputs as ``date`` as UTC ISO 8601 to the second,
    such as ``2024-05-01T09:30:00Z``."""
    moment = _as_datetime(value).astimezone(UTC).replace(microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def filter_tojson(value: Any, indent: int | None = None) -> str:
    """``{{ x | tojson }}``: plain JSON text (unlike Jinja's HTML-safe variant)."""
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


def filter_pathseg(value: Any) -> str:
    """``{{ x | pathseg }}``: a value as one URL path segment (``/`` and every reserved
    character percent-encoded)."""
    return quote(str(value), safe="")


def make_environment() -> BoundedEnvironment:
    """Build the sandboxed environment with the limits and the filters of practiceflow."""
    env = BoundedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        finalize=lambda value: budget.check_size(value, "an output value"),
    )
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
    env.filters.update(
        date=filter_date, datetime=filter_datetime, tojson=filter_tojson, pathseg=filter_pathseg
    )
    env.filters = budget.bounded_filters(env.filters)
    env.tests.update(budget.bounded_tests(env.tests))
    return env


def bound_tree(tree: nodes.Template) -> None:
    """Route every loop, ``~`` and comparison of a parsed template (in place) through the
    budget. Each run of a loop's, macro's or ``{% call %}`` body is charged its size by a first
    statement added to it, so a long body repeated costs in proportion (recursive runs too)."""
    blocks: list[nodes.For | nodes.Macro | nodes.CallBlock] = [
        *tree.find_all(nodes.For),
        *tree.find_all(nodes.Macro),
        *tree.find_all(nodes.CallBlock),
    ]
    for block in blocks:
        charge = _environment_call("pf_charge_body", [nodes.Const(_size(block.body))], block.lineno)
        block.body.insert(0, nodes.ExprStmt(charge, lineno=block.lineno))
    for loop in tree.find_all(nodes.For):
        loop.iter = _environment_call(
            "pf_counted_iterations", [cast(nodes.Expr, loop.iter)], loop.lineno
        )
    for parent in tree.find_all(nodes.Node):
        for field, child in parent.iter_fields():
            if isinstance(child, nodes.Node):
                setattr(parent, field, _as_checked_call(child))
            elif isinstance(child, list):
                child[:] = [_as_checked_call(c) if isinstance(c, nodes.Node) else c for c in child]


def _size(body: list[nodes.Node]) -> int:
    return sum(1 + sum(1 for _ in node.find_all(nodes.Node)) for node in body)


def _as_checked_call(node: nodes.Node) -> nodes.Node:
    if isinstance(node, nodes.Concat):
        return _environment_call("pf_concat", list(node.nodes), node.lineno)
    if isinstance(node, nodes.Compare):
        return _as_compare_calls(node)
    return node


def _as_compare_calls(node: nodes.Compare) -> nodes.Expr:
    """``a < b < c`` as ``compare(a, 'lt', b) and compare(b, 'lt', c)``, as Python chains."""
    calls: list[nodes.Expr] = []
    left = node.expr
    for operand in node.ops:
        args = [left, nodes.Const(operand.op), operand.expr]
        calls.append(_environment_call("pf_compare", args, node.lineno))
        left = copy.deepcopy(operand.expr)  # a node sits at one place in the tree
    result = calls[-1]
    for call in reversed(calls[:-1]):
        result = nodes.And(call, result, lineno=node.lineno)
    return result


def _environment_call(name: str, args: list[nodes.Expr], lineno: int) -> nodes.Call:
    target = nodes.EnvironmentAttribute(name, lineno=lineno)
    return nodes.Call(target, args, [], None, None, lineno=lineno)


def check_constants(tree: nodes.Template, env: BoundedEnvironment) -> None:
    """Refuse, at load time, a constant filter or ``*``, ``**``, ``+``, ``%`` over the limits
    (Jinja would fold it), sharing one budget as a render does: LimitError with ``lineno``."""
    with budget.render_budget():
        eval_ctx = EvalContext(env)
        for node in tree.find_all((nodes.Filter, nodes.BinExpr)):
            try:
                if isinstance(node, nodes.BinExpr) and node.operator in _BINOPS:
                    left, right = node.left.as_const(eval_ctx), node.right.as_const(eval_ctx)
                    try:
                        _BINOPS[node.operator](left, right)
                    except (TypeError, ValueError, ArithmeticError):
                        continue  # not folded by Jinja either: the render reports it, located
                else:
                    node.as_const(eval_ctx)
            except nodes.Impossible as exc:
                cause = exc.__cause__
                if isinstance(cause, budget.LimitError):
                    cause.lineno = node.lineno  # type: ignore[attr-defined]
                    raise cause from None
            except budget.LimitError as exc:
                exc.lineno = node.lineno  # type: ignore[attr-defined]
                raise
