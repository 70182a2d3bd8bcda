"""The one Jinja environment of practiceflow: sandboxed, strict, native, compiled once.

Every template in a module or recipe goes through :func:`compile_template` (at load time) and
:meth:`CompiledTemplate.render` (at run time). The environment is a
:class:`jinja2.sandbox.ImmutableSandboxedEnvironment` with :class:`jinja2.StrictUndefined`, no
autoescape, and these extra guards:

* templates cannot change what they read: ``{{ trigger.update(...) }}`` or
  ``{{ steps.x.items.append(...) }}`` is refused (the immutable sandbox), so rendering one
  step can never alter the trigger or another step's output;

* ``*`` and ``**`` are intercepted: no huge powers, no huge repeated strings or lists, and no
  constant folding of them at compile time;
* ``range`` is the sandbox's bounded range; the ``lipsum``, ``cycler`` and ``joiner`` globals
  are removed;
* attribute access to private or internal attributes (``__class__``...) raises.

Native types: a template that is exactly one expression, such as ``{{ input.amount }}``,
renders to that expression's Python value (a number stays a number, a list stays a list, a
string stays a string even when it looks like a number). A template with text around its
expressions renders to a string.

Trees: :func:`compile_tree` turns a YAML structure whose string leaves are templates into a
tree that :func:`render_tree` renders. **Omission rule:** a value that renders to ``None`` is
left out: its key is dropped from a mapping and its item is removed from a list. So
``email: "{{ input.email | default(None) }}"`` sends no ``email`` at all when the input has
none. Strings without ``{{``, ``{%`` or ``{#`` are constants and are not rendered.

Filters: ``date`` (UTC ``YYYY-MM-DD``), ``datetime`` (UTC ISO 8601 ending in ``Z``), ``tojson``
(plain JSON, not HTML-escaped), ``pathseg`` (percent-encode one URL path segment).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.exceptions import TemplateError as JinjaTemplateError
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment
from jinja2.utils import consume

from practiceflow.errors import Issue, TemplateError

__all__ = [
    "CompiledTemplate",
    "Origin",
    "compile_template",
    "compile_tree",
    "environment",
    "is_template",
    "render_tree",
    "set_clock",
    "utcnow",
]

#: Longest string, list or tuple that ``*`` may build in a template.
MAX_REPEAT = 100_000
#: Largest integer, in bits, that ``**`` may build.
MAX_POWER_BITS = 4096


def _utc_clock() -> datetime:
    return datetime.now(UTC)


_clock: Callable[[], datetime] = _utc_clock


def set_clock(clock: Callable[[], datetime] | None) -> None:
    """Replace the clock behind ``now`` (for tests); ``None`` restores the real UTC clock.

    Args:
        clock: a callable returning an aware datetime, or None.
    """
    global _clock
    _clock = clock or _utc_clock


def utcnow() -> datetime:
    """Return the current time in UTC, from the clock set by :func:`set_clock`."""
    return _clock().astimezone(UTC)


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
    """``{{ x | date }}``: the UTC calendar date as ``YYYY-MM-DD``.

    Args:
        value: a datetime (naive means UTC), a date, an ISO 8601 string, or ``"now"``.

    Returns:
        The date in UTC.
    """
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str) and len(value.strip()) == 10:  # a bare date has no zone
        return _as_datetime(value).date().isoformat()
    return _as_datetime(value).astimezone(UTC).date().isoformat()


def filter_datetime(value: Any) -> str:
    """``{{ x | datetime }}``: UTC ISO 8601 with a ``Z`` suffix, to the second.

    Args:
        value: a datetime (naive means UTC), a date, an ISO 8601 string, or ``"now"``.

    Returns:
        Such as ``2024-05-01T09:30:00Z``.
    """
    moment = _as_datetime(value).astimezone(UTC).replace(microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def filter_tojson(value: Any, indent: int | None = None) -> str:
    """``{{ x | tojson }}``: plain JSON text (unlike Jinja's HTML-safe variant).

    Args:
        value: any JSON-compatible value.
        indent: optional indentation.

    Returns:
        The JSON text.
    """
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


def filter_pathseg(value: Any) -> str:
    """``{{ x | pathseg }}``: percent-encode a value for use as one URL path segment.

    Args:
        value: any value; it is turned into a string first.

    Returns:
        The encoded segment (``/`` and every reserved character are encoded).
    """
    return quote(str(value), safe="")


def _checked_mul(left: Any, right: Any) -> Any:
    for seq, count in ((left, right), (right, left)):
        sized = isinstance(seq, str | list | tuple) and isinstance(count, int)
        if sized and len(seq) * count > MAX_REPEAT:
            message = f"repetition would build more than {MAX_REPEAT} items"
            raise SecurityError(message)
    return operator.mul(left, right)


def _checked_pow(left: Any, right: Any) -> Any:
    integers = isinstance(left, int) and isinstance(right, int) and right > 0
    if integers and abs(left) > 1 and left.bit_length() * right > MAX_POWER_BITS:
        message = f"{left!r} ** {right!r} would exceed {MAX_POWER_BITS} bits"
        raise SecurityError(message)
    return operator.pow(left, right)


class _Environment(ImmutableSandboxedEnvironment):
    """The sandbox plus guards on ``*`` and ``**``."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Context, operator_: str, left: Any, right: Any) -> Any:
        if operator_ == "*":
            return _checked_mul(left, right)
        if operator_ == "**":
            return _checked_pow(left, right)
        return super().call_binop(context, operator_, left, right)  # pragma: no cover


def _make_environment() -> _Environment:
    env = _Environment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
    env.filters["date"] = filter_date
    env.filters["datetime"] = filter_datetime
    env.filters["tojson"] = filter_tojson
    env.filters["pathseg"] = filter_pathseg
    return env


_ENV = _make_environment()


def environment() -> SandboxedEnvironment:
    """Return the one shared environment (for adding a filter from a plugin, say)."""
    return _ENV


def is_template(text: str) -> bool:
    """Tell whether a string holds Jinja syntax (``{{``, ``{%`` or ``{#``)."""
    return "{{" in text or "{%" in text or "{#" in text


@dataclass(frozen=True)
class Origin:
    """Where a template was written, for error messages.

    Attributes:
        file: the file as the user named it.
        line: 1-based line of the template's first character (0 when unknown).
        column: 1-based column (0 when unknown).
        path: JSON path of the field, such as ``request.body.entityName``.
    """

    file: str = "<template>"
    line: int = 0
    column: int = 0
    path: str = ""

    def issue(self, message: str, *, line_offset: int = 0) -> Issue:
        """Build an :class:`~practiceflow.errors.Issue` located at this origin.

        Args:
            message: what went wrong.
            line_offset: lines into the template (0 for its first line).

        Returns:
            The issue.
        """
        line = self.line + line_offset if self.line else 0
        column = self.column if not line_offset else 0
        return Issue(self.file, line, column, self.path, message)


@dataclass(frozen=True)
class _Compiled:
    """What compiling one source yields; shared between templates with the same source."""

    run: Callable[[Mapping[str, Any]], Any]
    names: frozenset[str]
    attributes: Mapping[str, frozenset[str]]


@dataclass(frozen=True, eq=False)
class CompiledTemplate:
    """One compiled template and where it was written.

    Attributes:
        source: the template text.
        origin: where it was written.
        names: top-level names it reads (``input``, ``response``...).
        attributes: for each name, the first-level attributes it reads (``input.amount``).
    """

    source: str
    origin: Origin
    names: frozenset[str]
    attributes: Mapping[str, frozenset[str]]
    _run: Callable[[Mapping[str, Any]], Any]

    def render(self, context: Mapping[str, Any]) -> Any:
        """Render against a context.

        Args:
            context: the names the template may read.

        Returns:
            The native value of a single-expression template, else a string.

        Raises:
            TemplateError: on an undefined name, a sandbox refusal or a failing filter;
                the issue names the template's file, line and field.
        """
        try:
            return self._run(context)
        except SecurityError as exc:
            message = f"template refused by the sandbox: {exc}"
            raise TemplateError(self.origin.issue(message)) from None
        except JinjaTemplateError as exc:
            message = f"template {self.source!r} failed: {exc.message or exc}"
            raise TemplateError(self.origin.issue(message)) from None
        except (ValueError, TypeError, ArithmeticError, LookupError) as exc:
            message = f"template {self.source!r} failed: {exc}"
            raise TemplateError(self.origin.issue(message)) from None


def compile_template(source: str, origin: Origin | None = None) -> CompiledTemplate:
    """Compile one template (cached by source).

    Args:
        source: the template text.
        origin: where it was written, for error messages.

    Returns:
        The compiled template.

    Raises:
        TemplateError: on a Jinja syntax error, located at the template's line.
    """
    where = origin or Origin()
    try:
        compiled = _compile_cached(source)
    except TemplateSyntaxError as exc:
        offset = max((exc.lineno or 1) - 1, 0)
        message = f"template syntax: {exc.message}"
        raise TemplateError(where.issue(message, line_offset=offset)) from None
    except SecurityError as exc:
        raise TemplateError(where.issue(f"template refused by the sandbox: {exc}")) from None
    return CompiledTemplate(source, where, compiled.names, compiled.attributes, compiled.run)


@lru_cache(maxsize=8192)
def _compile_cached(source: str) -> _Compiled:
    tree = _ENV.parse(source)
    names, attributes = _references(tree)
    body = tree.body
    if (
        len(body) == 1
        and isinstance(body[0], nodes.Output)
        and len(body[0].nodes) == 1
        and not isinstance(body[0].nodes[0], nodes.TemplateData)
    ):
        expr = body[0].nodes[0]
        return _Compiled(_with_fast_path(expr, _native(expr)), names, attributes)
    template = _ENV.from_string(tree)
    render = template.root_render_func

    def run_text(context: Mapping[str, Any]) -> Any:
        return "".join(render(template.new_context(_with_globals(context), shared=True)))

    return _Compiled(run_text, names, attributes)


def _native(expr: nodes.Expr) -> Callable[[Mapping[str, Any]], Any]:
    assign = nodes.Assign(nodes.Name("result", "store"), expr, lineno=1)
    template = _ENV.from_string(nodes.Template([assign], lineno=1))
    render = template.root_render_func

    def run_native(context: Mapping[str, Any]) -> Any:
        ctx = template.new_context(_with_globals(context), shared=True)
        consume(render(ctx))
        value = ctx.vars["result"]
        if isinstance(value, Undefined):
            value._fail_with_undefined_error()
        if callable(value):
            message = (
                "renders a function, not data (write input['items'] for a key named like a method)"
            )
            raise ValueError(message)
        return value

    return run_native


_FALLBACK = object()
_Step = tuple[str | int, bool]  # (key, written as attribute)


def _with_fast_path(
    expr: nodes.Expr, slow: Callable[[Mapping[str, Any]], Any]
) -> Callable[[Mapping[str, Any]], Any]:
    """Skip Jinja for the commonest shapes: ``{{ a.b.c }}`` and ``{{ a.b | default(K) }}``.

    The fast path only indexes plain dicts and lists of data with public keys that are not
    dict attributes, so it can do nothing the sandbox would refuse; anything else (a missing
    key without a default included) goes through Jinja, which also words the errors.
    """
    default: Any = _FALLBACK
    target = expr
    if (
        isinstance(expr, nodes.Filter)
        and expr.name in ("default", "d")
        and expr.node is not None
        and len(expr.args) == 1
        and isinstance(expr.args[0], nodes.Const)
        and not expr.kwargs
        and expr.dyn_args is None
        and expr.dyn_kwargs is None
    ):
        default = expr.args[0].value
        target = expr.node
    chain = _chain(target)
    if chain is None:
        return slow
    name, steps = chain

    def run(context: Mapping[str, Any]) -> Any:
        value = context.get(name, _FALLBACK)
        for key, _ in steps:
            in_dict = isinstance(value, dict) and isinstance(key, str) and key in value
            in_list = (
                isinstance(value, list) and isinstance(key, int) and -len(value) <= key < len(value)
            )
            if in_dict or in_list:
                value = value[key]
            elif isinstance(value, dict) and default is not _FALLBACK:
                return default
            else:
                return slow(context)
        if value is _FALLBACK:
            return slow(context) if default is _FALLBACK else default
        return value

    return run


def _chain(expr: nodes.Expr) -> tuple[str, list[_Step]] | None:
    steps: list[_Step] = []
    node = expr
    while True:
        if isinstance(node, nodes.Name) and node.ctx == "load":
            steps.reverse()
            return node.name, steps
        if isinstance(node, nodes.Getattr):
            if node.attr.startswith("_") or hasattr(dict, node.attr):
                return None
            steps.append((node.attr, True))
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            key = node.arg.value
            if not isinstance(key, str | int) or isinstance(key, bool):
                return None
            if isinstance(key, str) and key.startswith("_"):
                return None
            steps.append((key, False))
        else:
            return None
        node = node.node


def _with_globals(context: Mapping[str, Any]) -> dict[str, Any]:
    # A shared context skips Jinja's per-render ChainMap merge, the bulk of its overhead.
    merged = dict(_ENV.globals)
    merged.update(context)
    return merged


def _references(tree: nodes.Template) -> tuple[frozenset[str], Mapping[str, frozenset[str]]]:
    """Collect the free names a template reads and, per name, its first-level attributes."""
    names = frozenset(meta.find_undeclared_variables(tree) - set(_ENV.globals))
    attributes: dict[str, set[str]] = {}
    for node in _walk_lookups(tree):
        attributes.setdefault(node[0], set()).add(node[1])
    return names, {name: frozenset(attrs) for name, attrs in attributes.items()}


def _walk_lookups(tree: nodes.Node) -> Iterator[tuple[str, str]]:
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        target = getattr(node, "node", None)
        if not isinstance(target, nodes.Name) or target.ctx != "load":
            continue
        if isinstance(node, nodes.Getattr):
            yield target.name, node.attr
        elif isinstance(node, nodes.Getitem):
            arg = node.arg
            if isinstance(arg, nodes.Const) and isinstance(arg.value, str):
                yield target.name, arg.value


# -- trees -------------------------------------------------------------------------------


OriginFor = Callable[[tuple[str | int, ...]], Origin]


def compile_tree(
    value: Any, origin_for: OriginFor, path: tuple[str | int, ...] = ()
) -> tuple[Any, list[Issue]]:
    """Compile every template leaf of a YAML structure.

    Args:
        value: a dict / list / scalar structure whose string leaves may be templates.
        origin_for: gives the origin of the leaf at a path (for error locations).
        path: the path of ``value`` itself.

    Returns:
        The tree (template leaves replaced by :class:`CompiledTemplate`) and the syntax
        issues found (every one, not just the first).
    """
    issues: list[Issue] = []

    def walk(node: Any, at: tuple[str | int, ...]) -> Any:
        if isinstance(node, str):
            if not is_template(node):
                return node
            try:
                return compile_template(node, origin_for(at))
            except TemplateError as exc:
                issues.extend(exc.issues)
                return node
        if isinstance(node, Mapping):
            return {key: walk(child, (*at, key)) for key, child in node.items()}
        if isinstance(node, list):
            return [walk(child, (*at, index)) for index, child in enumerate(node)]
        return node

    return walk(value, path), issues


def iter_templates(tree: Any) -> Iterator[CompiledTemplate]:
    """Yield every compiled template of a tree, depth first.

    Args:
        tree: a tree from :func:`compile_tree`.

    Yields:
        Each template leaf.
    """
    if isinstance(tree, CompiledTemplate):
        yield tree
    elif isinstance(tree, Mapping):
        for child in tree.values():
            yield from iter_templates(child)
    elif isinstance(tree, list):
        for child in tree:
            yield from iter_templates(child)


def render_tree(tree: Any, context: Mapping[str, Any]) -> Any:
    """Render a compiled tree; values that render to None are omitted (module docstring).

    Args:
        tree: a tree from :func:`compile_tree`.
        context: the names templates may read.

    Returns:
        Plain data.

    Raises:
        TemplateError: when a template fails; nothing has been sent.
    """
    if isinstance(tree, CompiledTemplate):
        return tree.render(context)
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for key, child in tree.items():
            rendered = render_tree(child, context)
            if rendered is not None:
                out[key] = rendered
        return out
    if isinstance(tree, list):
        items = (render_tree(child, context) for child in tree)
        return [item for item in items if item is not None]
    return tree
