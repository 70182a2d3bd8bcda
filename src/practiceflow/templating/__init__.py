"""The one Jinja environment of practiceflow: sandboxed, strict, native, compiled once.

Templates are compiled by :func:`compile_template` at load time and rendered by
:meth:`CompiledTemplate.render`; the rules users see are in ``docs/recipes-reference.md``
("Templates", "Limits"). The sandbox is immutable, so rendering one step can never alter the
trigger or another step's output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from jinja2 import TemplateSyntaxError, meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.exceptions import TemplateError as JinjaTemplateError
from jinja2.runtime import Undefined
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import consume

from practiceflow.errors import Issue, TemplateError
from practiceflow.templating import _environment as sandbox
from practiceflow.templating import _limits as budget
from practiceflow.templating._environment import filter_pathseg, set_clock, utcnow

__all__ = [
    "CompiledTemplate",
    "Origin",
    "add_filter",
    "compile_template",
    "compile_tree",
    "environment",
    "filter_pathseg",
    "is_template",
    "render_tree",
    "set_clock",
    "utcnow",
]

_ENV = sandbox.make_environment()


def environment() -> SandboxedEnvironment:
    """Return the one shared environment (add filters with :func:`add_filter`)."""
    return _ENV


def add_filter(name: str, func: Callable[..., Any]) -> None:
    """Add a filter ``name`` to the shared environment, bounded like the built-in ones (a
    filter of that name already there is kept)."""
    _ENV.filters.setdefault(name, budget.bounded_filters({name: func})[name])


def is_template(text: str) -> bool:
    """Tell whether a string holds Jinja syntax (``{{``, ``{%`` or ``{#``)."""
    return "{{" in text or "{%" in text or "{#" in text


@dataclass(frozen=True)
class Origin:
    """Where a template was written, for error messages: file, 1-based line and column of
    its first character (0 when unknown) and the field's path (``request.body.entityName``)."""

    file: str = "<template>"
    line: int = 0
    column: int = 0
    path: str = ""

    def issue(self, message: str, *, line_offset: int = 0) -> Issue:
        """An :class:`~practiceflow.errors.Issue` at this origin, ``line_offset`` lines in."""
        line = self.line + line_offset if self.line else 0
        column = self.column if not line_offset else 0
        return Issue(self.file, line, column, self.path, message)


@dataclass(frozen=True, eq=False)
class CompiledTemplate:
    """One compiled template, where it was written, the top-level names it reads
    (``input``...) and per name the first-level attributes it reads (``input.amount``)."""

    source: str
    origin: Origin
    names: frozenset[str]
    attributes: Mapping[str, frozenset[str]]
    _run: Callable[[Mapping[str, Any]], Any]

    def render(self, context: Mapping[str, Any]) -> Any:
        """The native value of a single-expression template, else a string. Raises
        TemplateError (an undefined name, a sandbox refusal, a failing filter) located at the
        template's file, line and field."""
        try:
            with budget.render_budget():
                return budget.check_size(self._run(context), "the rendered value")
        except Exception as exc:
            message = f"template {_shown(self.source)} {_render_failure(exc)}"
            issue = self.origin.issue(message, line_offset=_template_line(exc) - 1)
            raise TemplateError(issue) from None


def _render_failure(exc: Exception) -> str:
    if isinstance(exc, SecurityError):
        return f"refused by the sandbox: {exc}"
    if isinstance(exc, JinjaTemplateError):
        return f"failed: {exc.message or exc}"
    if isinstance(exc, RecursionError):
        return "refused: it recurses too deeply"
    if isinstance(exc, MemoryError):
        return "refused: it ran out of memory"
    return f"failed: {type(exc).__name__}: {exc}"


def _shown(source: str) -> str:
    """The template's text for an error message, shortened when long."""
    return repr(source if len(source) <= 120 else source[:117] + "...")


def _template_line(exc: BaseException) -> int:
    """The line of the template (1-based) where a render failed, from the traceback."""
    line = 1
    tb = exc.__traceback__
    while tb is not None:
        template = tb.tb_frame.f_globals.get("__jinja_template__")
        if template is not None:
            line = template.get_corresponding_lineno(tb.tb_lineno) or line
        tb = tb.tb_next
    return line


def compile_template(source: str, origin: Origin | None = None) -> CompiledTemplate:
    """Compile one template (cached by source). Raises TemplateError: a syntax error or a
    constant over the limits, located at its line."""
    where = origin or Origin()
    try:
        compiled = _compile_cached(source)
    except TemplateSyntaxError as exc:
        offset = max((exc.lineno or 1) - 1, 0)
        message = f"template syntax: {exc.message}"
        raise TemplateError(where.issue(message, line_offset=offset)) from None
    except SecurityError as exc:  # a LimitError of a constant carries its line
        offset = max(getattr(exc, "lineno", 1) - 1, 0)
        message = f"template {_shown(source)} refused by the sandbox: {exc}"
        raise TemplateError(where.issue(message, line_offset=offset)) from None
    except (RecursionError, MemoryError):
        message = f"template {_shown(source)} refused: it is nested too deeply"
        raise TemplateError(where.issue(message)) from None
    return replace(compiled, origin=where)


@lru_cache(maxsize=8192)
def _compile_cached(source: str) -> CompiledTemplate:
    tree = _ENV.parse(source)
    names, attributes = _references(tree)
    sandbox.bound_tree(tree)
    sandbox.check_constants(tree, _ENV)
    body = tree.body
    if (
        len(body) == 1
        and isinstance(body[0], nodes.Output)
        and len(body[0].nodes) == 1
        and not isinstance(body[0].nodes[0], nodes.TemplateData)
    ):
        expr = body[0].nodes[0]
        run = _with_fast_path(expr, _native(expr))
        return CompiledTemplate(source, Origin(), names, attributes, run)
    template = _ENV.from_string(tree)
    render = template.root_render_func

    def run_text(context: Mapping[str, Any]) -> Any:
        chunks: list[str] = []
        size = 0
        for chunk in render(template.new_context(_with_globals(context), shared=True)):
            size += len(chunk)
            if size > budget.MAX_SIZE:
                message = f"the text would exceed {budget.MAX_SIZE} characters"
                raise budget.LimitError(message)
            chunks.append(chunk)
        return "".join(chunks)

    return CompiledTemplate(source, Origin(), names, attributes, run_text)


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


def _with_fast_path(
    expr: nodes.Expr, slow: Callable[[Mapping[str, Any]], Any]
) -> Callable[[Mapping[str, Any]], Any]:
    """Skip Jinja for ``{{ a.b.c }}`` and ``{{ a.b | default(K) }}``: only plain dicts and
    lists indexed by public keys that are not dict attributes, so nothing the sandbox would
    refuse; anything else goes through Jinja, which also words the errors."""
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
        for key in steps:
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


def _chain(expr: nodes.Expr) -> tuple[str, list[str | int]] | None:
    steps: list[str | int] = []
    node = expr
    while True:
        if isinstance(node, nodes.Name) and node.ctx == "load":
            steps.reverse()
            return node.name, steps
        if isinstance(node, nodes.Getattr):
            if node.attr.startswith("_") or hasattr(dict, node.attr):
                return None
            steps.append(node.attr)
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            key = node.arg.value
            if not isinstance(key, str | int) or isinstance(key, bool):
                return None
            if isinstance(key, str) and key.startswith("_"):
                return None
            steps.append(key)
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
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        target = getattr(node, "node", None)
        if not isinstance(target, nodes.Name) or target.ctx != "load":
            continue
        arg = getattr(node, "arg", None)  # a Getitem's subscript
        if isinstance(node, nodes.Getattr):
            attributes.setdefault(target.name, set()).add(node.attr)
        elif isinstance(arg, nodes.Const) and isinstance(arg.value, str):
            attributes.setdefault(target.name, set()).add(arg.value)
    return names, {name: frozenset(attrs) for name, attrs in attributes.items()}


OriginFor = Callable[[tuple[str | int, ...]], Origin]


def compile_tree(
    value: Any, origin_for: OriginFor, path: tuple[str | int, ...] = ()
) -> tuple[Any, list[Issue]]:
    """Compile every template leaf of a YAML structure (``origin_for`` locates a leaf): the
    tree with :class:`CompiledTemplate` leaves, and every issue found."""
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
    """Yield every compiled template of a tree from :func:`compile_tree`, depth first."""
    if isinstance(tree, CompiledTemplate):
        yield tree
    elif isinstance(tree, Mapping):
        for child in tree.values():
            yield from iter_templates(child)
    elif isinstance(tree, list):
        for child in tree:
            yield from iter_templates(child)


def render_tree(tree: Any, context: Mapping[str, Any]) -> Any:
    """Render a compiled tree to plain data; a value that renders to None is left out.
    Raises TemplateError when a template fails (nothing has been sent)."""
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
