"""Load-time checks a meta-schema cannot express; each returns issues and never raises, so
that all of a file's problems are reported at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from practiceflow.errors import Issue
from practiceflow.manifest.validation import (
    compile_validator,
    draft_validator,
    hint,
    issues_for,
    pattern_problem,
)
from practiceflow.manifest.yamlpos import JsonPath, Located
from practiceflow.templating import CompiledTemplate, Origin, compile_tree, iter_templates


def _subschemas(
    schema: Mapping[str, Any], at: JsonPath
) -> Iterator[tuple[Mapping[str, Any], JsonPath]]:
    """Every schema nested in a schema (itself first) with its path."""
    yield schema, at
    for keyword in ("properties", "$defs"):
        children = schema.get(keyword)
        if isinstance(children, Mapping):
            for name, child in children.items():
                if isinstance(child, Mapping):
                    yield from _subschemas(child, (*at, keyword, name))
    for keyword in ("items", "additionalProperties", "not", "if", "then", "else"):
        child = schema.get(keyword)
        if isinstance(child, Mapping):
            yield from _subschemas(child, (*at, keyword))
    for keyword in ("anyOf", "oneOf", "allOf"):
        children = schema.get(keyword)
        if isinstance(children, list):
            for index, child in enumerate(children):
                if isinstance(child, Mapping):
                    yield from _subschemas(child, (*at, keyword, index))


def check_schema(
    schema: Any, at: JsonPath, *, file: str, located: Located, draft: bool = True
) -> list[Issue]:
    """Check a schema a module declares: valid Draft 2020-12, ``required`` entries declared,
    ``pattern`` RE2 (linear time), no ``$ref`` loop, and ``examples`` fitting their property."""
    if not isinstance(schema, Mapping):
        return []
    issues = (
        issues_for(draft_validator(), schema, file=file, located=located, prefix=at)
        if draft
        else []
    )
    for sub, path in _subschemas(schema, at):
        pattern = sub.get("pattern")
        problem = pattern_problem(pattern) if isinstance(pattern, str) else None
        if problem:
            issues.append(located.issue(file, (*path, "pattern"), problem))
    issues += _ref_loops(schema, at, file=file, located=located)
    sound = draft and not issues
    defs = schema.get("$defs", {})
    for sub, path in _subschemas(schema, at):
        properties = sub.get("properties")
        required = sub.get("required")
        if isinstance(properties, Mapping) and isinstance(required, list):
            for index, name in enumerate(required):
                # A name that is not a string is the draft meta-schema's to report.
                if isinstance(name, str) and name not in properties:
                    near = hint(name, properties, f"declared: {sorted(properties)}")
                    message = f"{name!r} is required but not declared in properties; {near}"
                    issues.append(located.issue(file, (*path, "required", index), message))
        examples = sub.get("examples")
        if sound and isinstance(examples, list) and path != at:
            validator = compile_validator({**sub, "$defs": defs} if defs else sub)
            for index, example in enumerate(examples):
                where = (*path, "examples", index)
                issues += issues_for(validator, example, file=file, located=located, prefix=where)
    return issues


def _refs_here(schema: Any, at: JsonPath) -> Iterator[tuple[str, JsonPath]]:
    """The ``$defs`` names a schema refers to for the same value (without entering a field)."""
    if not isinstance(schema, Mapping):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        yield ref.removeprefix("#/$defs/"), (*at, "$ref")
    for keyword in ("allOf", "anyOf", "oneOf"):
        children = schema.get(keyword)
        if isinstance(children, list):
            for index, child in enumerate(children):
                yield from _refs_here(child, (*at, keyword, index))
    for keyword in ("not", "if", "then", "else"):
        yield from _refs_here(schema.get(keyword), (*at, keyword))


def _ref_loops(
    schema: Mapping[str, Any], at: JsonPath, *, file: str, located: Located
) -> list[Issue]:
    """A ``$ref`` that comes back to itself for the same value would never end a validation."""
    defs = schema.get("$defs")
    if not isinstance(defs, Mapping):
        return []
    edges = {name: list(_refs_here(child, (*at, "$defs", name))) for name, child in defs.items()}
    issues: list[Issue] = []
    for start in edges:
        stack: list[tuple[str, tuple[str, ...]]] = [(start, (start,))]
        seen: set[str] = set()
        while stack:
            name, chain = stack.pop()
            for target, where in edges.get(name, []):
                if target == start:
                    loop = " -> ".join((*chain, target))
                    message = (
                        f"$ref loops back to itself without entering a field ({loop}); "
                        "validating any value would never end"
                    )
                    issues.append(located.issue(file, where, message))
                    stack.clear()
                    break
                if target not in seen:
                    seen.add(target)
                    stack.append((target, (*chain, target)))
    return issues


def check_template_names(
    templates: Iterable[CompiledTemplate],
    *,
    allowed: Iterable[str],
    input_fields: Iterable[str],
    file: str,
) -> list[Issue]:
    """Check that templates read only known names and declared input fields."""
    allowed_names = sorted(allowed)
    fields = sorted(input_fields)
    issues: list[Issue] = []
    for template in templates:
        for name in sorted(template.names - set(allowed_names)):
            near = hint(name, allowed_names, f"templates here may read {allowed_names}")
            issues.append(template.origin.issue(f"unknown name {name!r} in template; {near}"))
        for name in sorted(template.attributes.get("input", frozenset()) - set(fields)):
            near = hint(name, fields, f"declared: {fields}")
            message = f"input.{name} is not declared in input.properties; {near}"
            issues.append(template.origin.issue(message))
    return issues


def compile_checked(
    value: Any,
    at: JsonPath,
    *,
    origin_for: Callable[[JsonPath], Origin],
    allowed: Iterable[str],
    fields: Iterable[str],
    file: str,
    issues: list[Issue],
) -> Any:
    """Compile a tree of templates and check the names they read (issues appended)."""
    tree, found = compile_tree(value, origin_for, at)
    issues += found
    issues += check_template_names(
        templates_of(tree), allowed=allowed, input_fields=fields, file=file
    )
    return tree


def check_names(
    names: Any, known: Iterable[str], *, what: str, at: JsonPath, file: str, located: Located
) -> list[Issue]:
    """Check that names (of checks, hooks, modules) exist in a registry."""
    valid = sorted(known)
    if isinstance(names, str):
        items = [(at, names)]
    elif isinstance(names, list):
        items = [((*at, index), name) for index, name in enumerate(names) if isinstance(name, str)]
    else:  # a wrong type is the meta-schema's to report
        return []
    return [
        located.issue(
            file, path, f"unknown {what} {name!r}; {hint(name, valid, f'valid values are {valid}')}"
        )
        for path, name in items
        if name not in valid
    ]


def field_schemas(
    schema: Mapping[str, Any], *, branches: bool = True, stop: str = ""
) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """Every (field path, schema) of a schema, ``$ref`` followed, ``*`` for any list index, the
    ``anyOf``/``oneOf``/``allOf`` branches with ``branches``; none below a ``stop`` field."""
    defs = schema.get("$defs", {}) if isinstance(schema.get("$defs"), Mapping) else {}

    def walk(node: Any, at: tuple[str, ...], depth: int) -> Iterator[tuple[tuple[str, ...], Any]]:
        if not isinstance(node, Mapping) or depth > 32:
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield from walk(defs.get(ref.removeprefix("#/$defs/")), at, depth + 1)
        yield at, node
        if at and stop and node.get(stop) is True:
            return
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            for name, child in properties.items():
                yield from walk(child, (*at, str(name)), depth + 1)
        yield from walk(node.get("items"), (*at, "*"), depth + 1)
        for keyword in ("anyOf", "oneOf", "allOf") if branches else ():
            for child in node.get(keyword) or []:
                yield from walk(child, at, depth + 1)

    yield from walk(schema, (), 0)


def pii_paths(schema: Mapping[str, Any], marker: str = "x-pii") -> frozenset[tuple[str, ...]]:
    """Collect the paths of fields marked ``x-pii: true`` (or another marker) in a schema."""
    fields = field_schemas(schema, stop=marker)
    return frozenset(at for at, node in fields if at and node.get(marker) is True)


def templates_of(*trees: Any) -> list[CompiledTemplate]:
    """Return every compiled template in some trees."""
    return [template for tree in trees for template in iter_templates(tree)]
