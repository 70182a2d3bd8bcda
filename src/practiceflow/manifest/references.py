"""Static checks of the paths templates read, against JSON Schemas (never against samples).

Each chain of lookups (``steps.bill.billTotl``) is followed through the schema of its root name;
what is refused and what is not judged is told in docs/recipes-reference.md. An API may send
more than it declares, so an open schema is never a reason to refuse.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes

from practiceflow.errors import Issue
from practiceflow.manifest.validation import TYPE_WORDS, did_you_mean
from practiceflow.templating import CompiledTemplate, environment


class _AnyIndex:
    """A lookup whose key is computed (``x[i]``) or a slice: any element."""

    def __repr__(self) -> str:
        return "[*]"


#: The segment of a computed subscript or a slice.
ANY_INDEX = _AnyIndex()

Segment = str | int | _AnyIndex
#: Where a path stands in some schemas: (schema, the document its ``$ref`` resolve in) per
#: alternative; None when nothing is known (every path below is accepted).
Position = tuple[tuple[Mapping[str, Any], Mapping[str, Any]], ...] | None


@dataclass(frozen=True)
class Target:
    """What a top-level name reads, for the checker."""

    where: str
    position: Position = None
    members: Mapping[str, Target] | None = None


@dataclass(frozen=True)
class Reference:
    """One chain of lookups on a name in a template."""

    name: str
    segments: tuple[Segment, ...]
    line: int


def position(schema: Mapping[str, Any] | None) -> Position:
    """The position at the root of a schema (None for no schema)."""
    return None if schema is None else ((schema, schema),)


def union(*positions: Position) -> Position:
    """A position standing for any of several (open when any of them is)."""
    out: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
    for one in positions:
        if one is None:
            return None
        out.extend(one)
    return tuple(out) if out else None


def input_target(schema: Mapping[str, Any]) -> Target:
    """What ``input`` reads in a module's templates: its declared fields, checked below them
    (an undeclared one is :func:`~practiceflow.manifest.lint.check_template_names`'s)."""
    properties = schema.get("properties")
    fields = properties if isinstance(properties, Mapping) else {}
    where = "in the module's input schema"
    members = {
        str(name): Target(where, ((child, schema),))
        for name, child in fields.items()
        if isinstance(child, Mapping)
    }
    return Target(where, members=members)


def literal_schema(value: Any) -> Mapping[str, Any]:
    """A closed schema for literal data, such as a recipe's ``vars``; a list's elements of
    differing shapes (a mapping beside a string, a null) give an open one."""
    return _schema_of([value])


def _schema_of(values: Sequence[Any]) -> dict[str, Any]:
    if not values:
        return {}
    if all(isinstance(value, Mapping) for value in values):
        fields: dict[str, list[Any]] = {}
        for value in values:
            for key, child in value.items():
                fields.setdefault(str(key), []).append(child)
        properties = {key: _schema_of(children) for key, children in fields.items()}
        return {"type": "object", "additionalProperties": False, "properties": properties}
    if all(isinstance(value, list | tuple) for value in values):
        return {"type": "array", "items": _schema_of([item for value in values for item in value])}
    kinds = {_scalar_type(value) for value in values}
    if None in kinds:
        return {}
    names = sorted(str(kind) for kind in kinds)
    return {"type": names[0] if len(names) == 1 else names}


def _scalar_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


_PROBES = frozenset({"defined", "undefined"})
#: Filters whose result holds the same elements as their input.
_SAME_ITEMS = frozenset(
    {"list", "sort", "unique", "reverse", "select", "reject", "selectattr", "rejectattr"}
)


def _chain(node: nodes.Expr) -> tuple[str, list[Segment], list[nodes.Expr]] | None:
    """Split ``a.b[c][0]`` into its name, its segments and its computed keys."""
    segments: list[Segment] = []
    computed: list[nodes.Expr] = []
    current: nodes.Node = node
    while True:
        if isinstance(current, nodes.Name):
            if current.ctx != "load":
                return None
            segments.reverse()
            return current.name, segments, computed
        if isinstance(current, nodes.Getattr):
            segments.append(current.attr)
        elif isinstance(current, nodes.Getitem):
            arg = current.arg
            if isinstance(arg, nodes.Const) and isinstance(arg.value, str | int):
                segments.append(arg.value if not isinstance(arg.value, bool) else ANY_INDEX)
            else:
                segments.append(ANY_INDEX)
                computed.append(arg)
        else:
            return None
        current = current.node


def references_of(template: CompiledTemplate) -> list[Reference]:
    """Every chain of lookups on a free name in a template, outermost chains only."""
    tree = environment().parse(template.source)
    assigned = {name.name for name in tree.find_all(nodes.Name) if name.ctx in ("store", "param")}
    found: list[Reference] = []

    def visit(node: nodes.Node, *, call: bool = False, probe: bool = False) -> None:
        if isinstance(node, nodes.Getattr | nodes.Getitem):
            chain = _chain(node)
            if chain is not None:
                name, segments, computed = chain
                if call and segments and isinstance(segments[-1], str):
                    segments = segments[:-1]  # the method called, not a field
                if segments and not probe and name not in assigned:
                    found.append(Reference(name, tuple(segments), node.lineno or 1))
                for expr in computed:
                    visit(expr)
                return
        if isinstance(node, nodes.Call):
            visit(node.node, call=True)
            arguments: list[nodes.Node | None] = [*node.args, *node.kwargs]
            for argument in (*arguments, node.dyn_args, node.dyn_kwargs):
                if argument is not None:
                    visit(argument)
            return
        if isinstance(node, nodes.Test) and node.name in _PROBES:
            visit(node.node, probe=True)
            return
        for child in node.iter_child_nodes():
            visit(child)

    visit(tree)
    return found


def _resolve(
    schema: Any, root: Mapping[str, Any], depth: int = 0
) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]] | None]:
    """The concrete alternatives of a schema (``$ref`` followed, ``anyOf``... expanded)."""
    if not isinstance(schema, Mapping) or depth > 16:
        yield None
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _local_ref(ref, root)
        if target is None:
            yield None
            return
        yield from _resolve(target, root, depth + 1)
    combined = False
    for keyword in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            combined = True
            for branch in branches:
                yield from _resolve(branch, root, depth + 1)
    shape = {"type", "properties", "items", "additionalProperties", "prefixItems", "enum"}
    if (ref is None and not combined) or shape & set(schema):
        yield schema, root


def _local_ref(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(kind) for kind in declared}
    if "properties" in schema or "additionalProperties" in schema:
        return {"object"}
    if "items" in schema or "prefixItems" in schema:
        return {"array"}
    return None


def step_into(here: Position, segment: Segment) -> Position | str:
    """The position one lookup below another, or (a str) why there is none."""
    if here is None:
        return None
    below: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
    declared: list[str] = []
    closed = True
    kinds: set[str] = set()
    for alternative in (alt for schema, root in here for alt in _resolve(schema, root)):
        if alternative is None:
            return None
        schema, root = alternative
        types = _types(schema)
        if types is None:
            return None
        kinds |= types
        if "array" in types and not isinstance(segment, str):
            items = schema.get("items")
            if items is None or items is True:
                return None
            if isinstance(items, Mapping):
                below.append((items, root))
        if "object" not in types:
            continue
        properties = schema.get("properties")
        extra = schema.get("additionalProperties", True)
        if not isinstance(properties, Mapping) or not properties:
            if extra is not False:
                return None  # an open mapping
            continue
        if not isinstance(segment, str):
            return None  # a computed key on a mapping
        if segment in properties:
            below.append((properties[segment], root))
            continue
        if isinstance(extra, Mapping) or schema.get("patternProperties"):
            return None
        declared.extend(str(name) for name in properties)
        closed = closed and extra is False
    if below:
        return tuple(below)
    if declared:
        match = did_you_mean(str(segment), declared)
        if match is None and not closed:
            return None  # perhaps an undeclared field the API sends
        hint = f"did you mean {match!r}?" if match else f"declared: {sorted(set(declared))}"
        field = "field" if closed else "declared field"
        return f"has no {field} {segment!r}; {hint}"
    if isinstance(segment, str) and kinds:
        shown = " or ".join(TYPE_WORDS.get(kind, kind) for kind in sorted(kinds))
        return f"is {shown}, it has no field {segment!r}"
    return None  # an index into a string, say: not judged


def _shown(name: str, segments: Sequence[Segment]) -> str:
    text = name
    for segment in segments:
        if isinstance(segment, str) and segment.isidentifier():
            text += f".{segment}"
        elif isinstance(segment, str):
            text += f"[{segment!r}]"
        elif isinstance(segment, int):
            text += f"[{segment}]"
        else:
            text += "[...]"
    return text


def _follow(target: Target, name: str, segments: Sequence[Segment]) -> Position | str:
    """Where one reference leads, or (a str) why the schemas cannot hold it."""
    at = 0
    if target.members is not None:
        first = segments[0]
        member = target.members.get(first) if isinstance(first, str) else None
        if member is None:
            return None
        target, at = member, 1
    here: Position = target.position
    for index in range(at, len(segments)):
        result = step_into(here, segments[index])
        if isinstance(result, str):
            return f"{_shown(name, segments[:index])} {result} ({target.where})"
        if result is None:
            return None
        here = result
    return here


def check_references(
    templates: Sequence[CompiledTemplate], targets: Mapping[str, Target]
) -> list[Issue]:
    """Check every reference of some templates against the schemas of the names they read."""
    issues: list[Issue] = []
    for template in templates:
        for reference in references_of(template):
            target = targets.get(reference.name)
            if target is None:
                continue
            problem = _follow(target, reference.name, reference.segments)
            if isinstance(problem, str):
                issue = template.origin.issue(problem, line_offset=reference.line - 1)
                if issue not in issues:
                    issues.append(issue)
    return issues


def items_position(template: CompiledTemplate, targets: Mapping[str, Target]) -> Position:
    """The schema of the elements a ``for_each`` template yields, when it can be told (paths,
    literals, ``a if c else b``, filters keeping the elements); else None, open."""
    tree = environment().parse(template.source)
    body = tree.body
    if len(body) != 1 or not isinstance(body[0], nodes.Output) or len(body[0].nodes) != 1:
        return None
    return _items(body[0].nodes[0], targets) or None


def _constant(expr: nodes.Node) -> tuple[Any, ...] | None:
    """The value of a literal node (``'a'``, ``[1, 2]``, ``{'k': 'v'}``) as a 1-tuple."""
    if not isinstance(expr, nodes.Const | nodes.List | nodes.Tuple | nodes.Dict):
        return None
    try:
        return (expr.as_const(),)
    except nodes.Impossible:
        return None  # a literal holding a name or a call


def _value(expr: nodes.Node, targets: Mapping[str, Target]) -> Position:
    constant = _constant(expr)
    if constant is not None:
        return position(literal_schema(constant[0]))
    if isinstance(expr, nodes.Name) and expr.ctx == "load":
        target = targets.get(expr.name)
        return None if target is None or target.members is not None else target.position
    chain = _chain(expr) if isinstance(expr, nodes.Getattr | nodes.Getitem) else None
    if chain is None:
        return None
    name, segments, _ = chain
    target = targets.get(name)
    reached = None if target is None else _follow(target, name, segments)
    return None if isinstance(reached, str) else reached


def _items(expr: nodes.Node, targets: Mapping[str, Target]) -> Position:
    if isinstance(expr, nodes.List | nodes.Tuple):
        if not expr.items:
            return ()  # no element: adds nothing to the alternatives beside it
        if _constant(expr) is None:
            return union(*(_value(item, targets) for item in expr.items))
    if isinstance(expr, nodes.CondExpr):
        other = _items(expr.expr2, targets) if expr.expr2 is not None else ()
        return union(_items(expr.expr1, targets), other)
    if isinstance(expr, nodes.Filter) and expr.name in _SAME_ITEMS and expr.node is not None:
        return _items(expr.node, targets)
    whole = _value(expr, targets)
    result = step_into(whole, ANY_INDEX)
    return None if isinstance(result, str) else result
