"""Module templates as portable expression trees that the generated JavaScript interprets.

Exported connectors run on Node, where there is no Jinja: each template is parsed with the
project's Jinja environment and translated into a JSON expression tree (the "plan") that the
export's runtime evaluates. Outside the declared subset, a ManifestError names the module's
file, line and field, so an export never silently drops behaviour. Nodes (one-key objects):

* ``{"const": v}``; ``{"now": true}`` (ISO 8601, UTC); ``{"ref": ["input", "entityKey"]}``, a
  lookup on ``input``, ``response``, ``headers``, ``body``, ``data`` (a delivery's ``body.data``
  when an object, else its body) or ``item`` (missing keys: ``undefined``; ``x.get('k', d)`` is
  a lookup with a default); ``{"path": [expr, [key, ...]]}``, a lookup on a computed value;
* ``{"default": [expr, fallback]}`` (a third item ``true``: ``default(fallback, true)``, falsy
  values replaced too); ``{"filter": [name, expr, arg...]}`` for ``pathseg``, ``date``,
  ``datetime``, ``tojson``, ``string``, ``int``, ``float``, ``lower``, ``upper``, ``trim``,
  ``length``, ``omit(keys...)``;
* ``{"concat": [expr, ...]}``: text with expressions (each as a string); ``{% if %}`` blocks
  become ``if`` nodes, ``{% set x = expr %}`` a ``{"let": [name, expr, rest]}``;
* ``{"cmp": [op, left, right]}`` (``== != < <= > >= in``), ``{"and": [..]}``, ``{"or": [..]}``,
  ``{"not": expr}``, ``{"test": [name, expr]}`` (``is defined``, ``is none``, ``is mapping``...),
  ``{"if": [cond, then, else]}``, ``{"list": [..]}``, ``{"dict": {..}}``.

A tree (a body, an output map) keeps its YAML structure with each template leaf as
``{"$pf": expression}``; a leaf that evaluates to null or undefined is left out.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import PurePosixPath
from typing import Any

from jinja2 import TemplateSyntaxError, nodes

from practiceflow.errors import Issue, ManifestError
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.templating import CompiledTemplate, environment, iter_templates

#: Marker key of a template leaf in a translated tree.
LEAF = "$pf"

#: Filters the runtimes implement (``default``/``d`` are handled as their own node).
FILTERS = frozenset(
    {"pathseg", "date", "datetime", "tojson", "string", "int", "float", "lower", "upper"}
    | {"trim", "length", "omit"}
)
_TESTS = frozenset(
    {"defined", "undefined", "none", "mapping", "string", "number", "sequence", "boolean"}
    | {"integer", "float", "true", "false"}
)
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "lteq": "<=", "gt": ">", "gteq": ">=", "in": "in"}
_NAMES = frozenset({"input", "response", "headers", "body", "data", "item"})
#: Names bound by ``{% set %}`` in the template being translated.
_LOCALS: ContextVar[frozenset[str]] = ContextVar("_LOCALS", default=frozenset())


class _Unsupported(Exception):
    """A Jinja construct outside the exportable subset."""


def expression(template: CompiledTemplate) -> dict[str, Any]:
    """Translate one compiled template into an expression node (ManifestError: unsupported)."""
    try:
        parsed = environment().parse(template.source)
        parts = _parts(parsed.body)
    except (_Unsupported, TemplateSyntaxError) as exc:
        message = (
            f"template {template.source!r} cannot be exported: {exc}; exporters support "
            "lookups on input/response/headers/body/data/item, default(...), the filters "
            f"{sorted(FILTERS)}, comparisons, and/or/not, 'is defined'/'is none' and literals"
        )
        raise ManifestError([template.origin.issue(message)]) from None
    return parts[0] if len(parts) == 1 and "const" not in parts[0] else {"concat": parts}


def _parts(body: list[nodes.Node]) -> list[dict[str, Any]]:
    """Text parts of a template body (``{% if %}``: ``if``; ``{% set %}``: ``let``)."""
    parts: list[dict[str, Any]] = []
    for index, statement in enumerate(body):
        if isinstance(statement, nodes.Assign) and isinstance(statement.target, nodes.Name):
            name = statement.target.name
            value = _expr(statement.node)
            token = _LOCALS.set(_LOCALS.get() | {name})
            try:
                rest = _parts(body[index + 1 :])
            finally:
                _LOCALS.reset(token)
            parts.append({"let": [name, value, {"concat": rest}]})
            return parts
        if isinstance(statement, nodes.If):
            otherwise: list[nodes.Node] = list(statement.else_)
            for branch in reversed(statement.elif_):
                otherwise = [nodes.If(branch.test, branch.body, [], otherwise)]
            parts.append(
                {
                    "if": [
                        _expr(statement.test),
                        {"concat": _parts(statement.body)},
                        {"concat": _parts(otherwise)},
                    ]
                }
            )
            continue
        if not isinstance(statement, nodes.Output):
            raise _Unsupported(f"statement {type(statement).__name__} (only expressions and if)")
        for node in statement.nodes:
            if isinstance(node, nodes.TemplateData):
                parts.append({"const": node.data})
            else:
                parts.append(_expr(node))
    return parts


def _expr(node: nodes.Node) -> dict[str, Any]:
    if isinstance(node, nodes.Const):
        return {"const": node.value}
    if isinstance(node, nodes.Name):
        if node.name == "now":
            return {"now": True}
        if node.name in ("true", "false", "none", "True", "False", "None"):
            return {"const": {"true": True, "false": False}.get(node.name.lower())}
        if node.name not in _NAMES and node.name not in _LOCALS.get():
            raise _Unsupported(f"unknown name {node.name!r}")
        return {"ref": [node.name]}
    if isinstance(node, nodes.Getattr | nodes.Getitem):
        return _lookup(node)
    if isinstance(node, nodes.Call):
        return _get_call(node)
    if isinstance(node, nodes.Filter):
        return _filter(node)
    if isinstance(node, nodes.Compare):
        return _compare(node)
    if isinstance(node, nodes.And | nodes.Or):
        word = "and" if isinstance(node, nodes.And) else "or"
        return {word: [_expr(node.left), _expr(node.right)]}
    if isinstance(node, nodes.Not):
        return {"not": _expr(node.node)}
    if isinstance(node, nodes.Test):
        if node.name not in _TESTS or node.args:
            raise _Unsupported(f"test 'is {node.name}'")
        return {"test": [node.name, _expr(node.node)]}
    if isinstance(node, nodes.CondExpr):
        otherwise = _expr(node.expr2) if node.expr2 is not None else {"const": None}
        return {"if": [_expr(node.test), _expr(node.expr1), otherwise]}
    if isinstance(node, nodes.List | nodes.Tuple):
        return {"list": [_expr(item) for item in node.items]}
    if isinstance(node, nodes.Dict):
        pairs: dict[str, Any] = {}
        for pair in node.items:
            if not isinstance(pair.key, nodes.Const) or not isinstance(pair.key.value, str):
                raise _Unsupported("dict literal with a computed key")
            pairs[pair.key.value] = _expr(pair.value)
        return {"dict": pairs}
    raise _Unsupported(f"expression {type(node).__name__}")


def _lookup(node: nodes.Getattr | nodes.Getitem) -> dict[str, Any]:
    path: list[str | int] = []
    current: nodes.Node = node
    while isinstance(current, nodes.Getattr | nodes.Getitem):
        if isinstance(current, nodes.Getattr):
            path.append(current.attr)
        elif isinstance(current.arg, nodes.Const) and isinstance(current.arg.value, str | int):
            path.append(current.arg.value)
        else:
            raise _Unsupported("computed subscript")
        current = current.node
    return _at(_expr(current), path[::-1])


def _at(base: dict[str, Any], path: list[Any]) -> dict[str, Any]:
    """A lookup of ``path`` on ``base`` (a longer ``ref`` when ``base`` is one)."""
    return {"ref": [*base["ref"], *path]} if "ref" in base else {"path": [base, path]}


def _get_call(node: nodes.Call) -> dict[str, Any]:
    """``mapping.get('key')`` or ``mapping.get('key', fallback)``: a lookup with a default."""
    target = node.node
    simple = not node.kwargs and node.dyn_args is None and node.dyn_kwargs is None
    if not (isinstance(target, nodes.Getattr) and target.attr == "get" and simple):
        raise _Unsupported("function or method call (only mapping.get(key[, default]))")
    args = node.args
    if not 1 <= len(args) <= 2 or not isinstance(args[0], nodes.Const):
        raise _Unsupported(".get() needs a literal key and at most a default")
    found = _at(_expr(target.node), [args[0].value])
    fallback = _expr(args[1]) if len(args) == 2 else {"const": None}
    return {"default": [found, fallback]}


def _filter(node: nodes.Filter) -> dict[str, Any]:
    if node.node is None or node.kwargs or node.dyn_args or node.dyn_kwargs:
        raise _Unsupported(f"filter {node.name!r} with keyword or dynamic arguments")
    target = _expr(node.node)
    if node.name in ("default", "d"):
        if len(node.args) == 2 and isinstance(node.args[1], nodes.Const):
            # default(x, true): also replace falsy values, not only undefined ones.
            return {"default": [target, _expr(node.args[0]), bool(node.args[1].value)]}
        if len(node.args) != 1:
            raise _Unsupported("default(...) needs one argument (and an optional literal flag)")
        return {"default": [target, _expr(node.args[0])]}
    if node.name not in FILTERS or (node.args and node.name != "omit"):
        raise _Unsupported(f"filter {node.name!r}")
    return {"filter": [node.name, target, *(_expr(arg) for arg in node.args)]}


def _compare(node: nodes.Compare) -> dict[str, Any]:
    left = _expr(node.expr)
    terms: list[dict[str, Any]] = []
    for operand in node.ops:
        if operand.op not in _COMPARE and operand.op != "notin":
            raise _Unsupported(f"operator {operand.op!r}")
        right = _expr(operand.expr)
        if operand.op == "notin":
            terms.append({"not": {"cmp": ["in", left, right]}})
        else:
            terms.append({"cmp": [_COMPARE[operand.op], left, right]})
        left = right
    return terms[0] if len(terms) == 1 else {"and": terms}


def tree(value: Any) -> Any:
    """A compiled tree with each template leaf as ``{"$pf": expression}``."""
    issues: list[Issue] = []

    def walk(node: Any) -> Any:
        if isinstance(node, CompiledTemplate):
            try:
                return {LEAF: expression(node)}
            except ManifestError as exc:
                issues.extend(exc.issues)
                return None
        if isinstance(node, Mapping):
            return {str(key): walk(child) for key, child in node.items()}
        if isinstance(node, list | tuple):
            return [walk(child) for child in node]
        return node

    result = walk(value)
    if issues:
        raise ManifestError(issues)
    return result


def action_plan(action: ActionModule) -> dict[str, Any]:
    """The request and output of an action in portable form (ManifestError: see :func:`tree`)."""
    request = action.request
    spec = action.extensions.list
    listing = None
    if spec is not None:
        listing = {
            "paged": spec.paged,
            "page_size": spec.page_size,
            "limit": tree(spec.limit),
            "filter": tree(spec.filter),
        }
    return {
        "method": request.method,
        "path": tree(request.path),
        "query": tree(request.query),
        "headers": tree(request.headers),
        "body": tree(request.body),
        "map": tree(action.output.map),
        "passthrough": action.output.passthrough,
        "errors": {str(status): text for status, text in sorted(action.errors.items())},
        "list": listing,
        "download": None
        if action.extensions.download is None
        else {
            "name": tree(action.extensions.download.filename),
            "type": file_media_type(action),
        },
    }


def file_media_type(action: ActionModule) -> str:
    """The media type of a download action's file, from its name's suffix."""
    spec = action.extensions.download
    name = getattr(spec.filename, "source", spec.filename) if spec is not None else None
    guessed = mimetypes.guess_type(f"file{PurePosixPath(str(name)).suffix}")[0] if name else None
    return guessed or "application/octet-stream"


def local_fields(action: ActionModule) -> frozenset[str]:
    """Input fields read only by ``download.to``: a platform carries the file, not a path."""
    spec = action.extensions.download
    if spec is None:
        return frozenset()
    request = action.request
    used: set[str] = set()
    sent = [request.path, request.query, request.headers, request.body, spec.filename]
    for template in iter_templates(sent):
        used |= set(template.attributes.get("input", ()))
    to = spec.to
    saved = set(to.attributes.get("input", ())) if isinstance(to, CompiledTemplate) else set()
    return frozenset(saved - used)


def platform_input(action: ActionModule) -> dict[str, Any]:
    """The action's input schema without its :func:`local_fields`."""
    local = local_fields(action)
    schema = dict(action.input_schema)
    if not local:
        return schema
    schema["properties"] = {
        name: sub for name, sub in (schema.get("properties") or {}).items() if name not in local
    }
    schema["required"] = [name for name in schema.get("required", ()) if name not in local]
    return schema


def trigger_plan(trigger: TriggerModule) -> dict[str, Any]:
    """The webhook and poll sections of a trigger in portable form (None when absent),
    without the poll's ``sweep``: a platform polls on its own schedule, with no downtime."""
    poll = trigger.poll
    if poll is not None and "sweep" in poll:
        poll = {key: value for key, value in poll.items() if key != "sweep"}
    return {"webhook": tree(trigger.webhook), "poll": tree(poll)}
