"""Loading action modules, trigger modules, recipes and the connector manifest (each loader
raises one ManifestError with every issue of the file: see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final

from practiceflow import hooks
from practiceflow.errors import Issue, ManifestError
from practiceflow.manifest import lint
from practiceflow.manifest.choices import choice_fields
from practiceflow.manifest.models import (
    ActionModule,
    DownloadSpec,
    Extensions,
    ListSpec,
    Module,
    OutputSpec,
    ReadBackSpec,
    Recipe,
    RecipeStep,
    RequestSpec,
    Template,
    TriggerModule,
    WarningSpec,
)
from practiceflow.manifest.references import check_references, input_target
from practiceflow.manifest.resources import data_dir
from practiceflow.manifest.safe_read import FileRefused, read_text_limited
from practiceflow.manifest.validation import compile_validator, issues_for, meta_validator
from practiceflow.manifest.yamlpos import (
    MAX_BYTES,
    JsonPath,
    Located,
    YamlLoadError,
    format_path,
    load_yaml,
)
from practiceflow.templating import CompiledTemplate, Origin, add_filter, compile_tree

#: Names module templates may read: requests, ``list.limit`` and ``download`` read input;
#: ``list.filter`` and polls read rows too; ``output.map`` and ``warn_if`` read the answer.
INPUT_NAMES = frozenset({"input", "now"})
ITEM_NAMES = INPUT_NAMES | {"item"}
ANSWER_NAMES = INPUT_NAMES | {"response", "headers"}

#: Names recipe templates may read.
RECIPE_NAMES = frozenset({"trigger", "steps", "vars", "now", "item"})
#: ``if`` and ``for_each`` are computed from the event: an example of each.
_EXAMPLES: Final = {"if": "{{ trigger.amount > 0 }}", "for_each": "{{ vars.forms }}"}
_WEBHOOK_NAMES = INPUT_NAMES | {"body", "data", "headers"}

PathLike = str | Path | Traversable


def filter_omit(value: Any, *keys: str) -> dict[str, Any]:
    """``{{ input | omit('entityKey') }}``: a copy of a mapping without some keys (TypeError
    for anything else); tolerant modules pass on the input fields they do not use."""
    if not isinstance(value, Mapping):
        message = f"omit: got {type(value).__name__}; expected a mapping"
        raise TypeError(message)
    return {key: item for key, item in value.items() if key not in keys}


add_filter("omit", filter_omit)


def _display(path: PathLike) -> str:
    if isinstance(path, Path):
        try:
            return str(path.resolve().relative_to(Path.cwd()))
        except ValueError:
            return str(path)
    return str(path)


def _stem(path: PathLike) -> str:
    name = path.name if not isinstance(path, str) else Path(path).name
    return name.rsplit(".", 1)[0]


def read_located(path: PathLike, display: str | None = None) -> tuple[Located, str]:
    """Read a YAML (or JSON) file with positions (ManifestError: unreadable, or bad YAML)."""
    file = display or _display(path)
    target = Path(path) if isinstance(path, str) else path
    try:
        if isinstance(target, Path):  # a user's file: checked before it is read
            text = read_text_limited(target, MAX_BYTES)
        else:  # shipped with the package
            text = target.read_text(encoding="utf-8")
    except FileRefused as exc:
        raise ManifestError([Issue(file, 0, 0, "", str(exc))]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError([Issue(file, 0, 0, "", f"cannot read the file: {exc}")]) from None
    try:
        located = load_yaml(text)
    except YamlLoadError as exc:
        raise ManifestError([Issue(file, exc.line, exc.column, "", exc.message)]) from None
    return located, file


def _origins(file: str, located: Located) -> Callable[[JsonPath], Origin]:
    def origin_for(path: JsonPath) -> Origin:
        line, column = located.where(path)
        return Origin(file, line, column, format_path(path))

    return origin_for


def _start(
    kind: str, located: Located, file: str, stem: str | None, shape: str = ""
) -> list[Issue]:
    data = located.data
    if not isinstance(data, Mapping):
        expected = shape or f"a mapping of {kind} fields at the top"
        raise ManifestError([Issue(file, 1, 1, "", f"expected {expected}")])
    issues = issues_for(meta_validator(kind), data, file=file, located=located)
    key = data.get("key")
    if stem is not None and isinstance(key, str) and key != stem:
        message = f"got {key!r}; the key must equal the file name, {stem!r}"
        issues.append(located.issue(file, ("key",), message))
    return issues


def _clean(issues: list[Issue], path: str) -> bool:
    """Whether no issue so far lies at or under a path (its own checks would repeat them)."""
    return not any(
        issue.path == path or issue.path.startswith((path + ".", path + "[")) for issue in issues
    )


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _module_start(
    kind: str, located: Located, file: str, stem: str | None
) -> tuple[list[Issue], dict[str, Any], dict[str, Any], Callable[..., Any]]:
    """The issues of a module's fields, schemas and sample; its schemas; and its template
    compiler (:func:`~practiceflow.manifest.lint.compile_checked`, issues appended)."""
    issues = _start(kind, located, file, stem)
    data = located.data
    input_schema = _as_dict(data.get("input"))
    if kind == "trigger" and not input_schema:
        input_schema = {"type": "object", "properties": {}}
    output_schema = _as_dict(_as_dict(data.get("output")).get("schema"))
    found: list[Issue] = []
    if "input" in data:
        found += lint.check_schema(
            input_schema, ("input",), file=file, located=located, draft=_clean(issues, "input")
        )
    output_ok = _clean(issues, "output.schema")
    found += lint.check_schema(
        output_schema, ("output", "schema"), file=file, located=located, draft=output_ok
    )
    if _clean(issues + found, "output.schema") and "sample" in data:
        validator = compile_validator(output_schema)
        found += issues_for(
            validator, data["sample"], file=file, located=located, prefix=("sample",)
        )
    issues += found
    fields = list(_as_dict(input_schema.get("properties")))
    origin_for = _origins(file, located)
    checked = partial(
        lint.compile_checked, origin_for=origin_for, fields=fields, file=file, issues=issues
    )
    return issues, input_schema, output_schema, checked


def _check_input_reads(issues: list[Issue], input_schema: Mapping[str, Any], *trees: Any) -> None:
    """Check the ``input`` paths of some compiled trees, once the input schema is sound."""
    if _clean(issues, "input"):
        target = {"input": input_target(input_schema)}
        issues += check_references(lint.templates_of(*trees), target)


def load_action(path: PathLike, *, display: str | None = None) -> ActionModule:
    """Load and check one action module."""
    return action_from(*read_located(path, display), _stem(path))


def action_from(located: Located, file: str, stem: str | None) -> ActionModule:
    """Build an action module from an already read document (see :func:`load_action`)."""
    issues, input_schema, output_schema, checked = _module_start("action", located, file, stem)
    data = located.data
    output = _as_dict(data.get("output"))
    request = _as_dict(data.get("request"))
    parts = [part for part in ("path", "query", "headers", "body") if part in request]
    trees = {part: checked(request[part], ("request", part), allowed=INPUT_NAMES) for part in parts}
    out_map = checked(output.get("map"), ("output", "map"), allowed=ANSWER_NAMES)
    _check_input_reads(issues, input_schema, *trees.values(), out_map)
    extensions = compile_extensions(data, checked, issues, file=file, located=located)
    read_back = _as_dict(data.get("read_back"))
    for value, known, what, at in (
        (data.get("checks"), hooks.CHECKS, "check", ("checks",)),
        (data.get("hook"), hooks.HOOKS, "hook", ("hook",)),
        (read_back.get("hook"), hooks.read_backs.READ_BACKS, "read-back", ("read_back", "hook")),
    ):
        issues += lint.check_names(value, known, what=what, at=at, file=file, located=located)
    marked = _as_dict(read_back.get("marker")).get("field")
    fields = list(_as_dict(input_schema.get("properties")))
    if marked is not None and marked not in fields:
        message = f"got {marked!r}; the marker's field must be an input field: {fields}"
        issues.append(located.issue(file, ("read_back", "marker", "field"), message))
    if issues:
        raise ManifestError(issues)

    # The file is sound from here on: the schemas compile.
    return ActionModule(
        key=data["key"],
        title=data["title"],
        description=data["description"],
        noun=data["noun"],
        kind=data.get("kind"),
        input_schema=input_schema,
        input_validator=compile_validator(input_schema),
        request=RequestSpec(
            method=request["method"],
            path=trees["path"],
            query=trees.get("query"),
            headers=trees.get("headers"),
            body=trees.get("body"),
        ),
        output=OutputSpec(
            map=out_map,
            passthrough=bool(output.get("passthrough", False)),
            schema=output_schema,
            validator=compile_validator(output_schema),
        ),
        sample=data["sample"],
        needs_write=data["needs_write"],
        checks=tuple(data.get("checks", ())),
        hook=data.get("hook"),
        errors={int(status): text for status, text in _as_dict(data.get("errors")).items()},
        override=bool(data.get("override", False)),
        source=file,
        pii_paths=lint.pii_paths(input_schema),
        secret_paths=lint.pii_paths(output_schema, marker="x-secret"),
        output_pii_paths=lint.pii_paths(output_schema),
        extensions=extensions,
        choices=choice_fields(input_schema),
        read_back=_read_back(read_back),
        text=located.text,
    )


def _read_back(data: Mapping[str, Any]) -> ReadBackSpec | None:
    if not data:
        return None
    marker = _as_dict(data.get("marker"))
    return ReadBackSpec(
        hook=str(data["hook"]),
        marker_field=marker.get("field"),
        marker_placement=str(marker.get("placement", "when_empty")),
    )


def load_trigger(path: PathLike, *, display: str | None = None) -> TriggerModule:
    """Load and check one trigger module."""
    return trigger_from(*read_located(path, display), _stem(path))


def trigger_from(located: Located, file: str, stem: str | None) -> TriggerModule:
    """Build a trigger module from an already read document (see :func:`load_trigger`)."""
    issues, input_schema, output_schema, checked = _module_start("trigger", located, file, stem)
    data = located.data
    sections: dict[str, dict[str, Any] | None] = {}
    for name, allowed in (("webhook", _WEBHOOK_NAMES), ("poll", ITEM_NAMES)):
        sections[name] = None
        if name in data:
            sections[name] = checked(_as_dict(data[name]), (name,), allowed=allowed)
            _check_input_reads(issues, input_schema, sections[name])
    if issues:
        raise ManifestError(issues)
    return TriggerModule(
        key=data["key"],
        title=data["title"],
        description=data["description"],
        noun=data["noun"],
        input_schema=input_schema,
        output_schema=output_schema,
        output_validator=compile_validator(output_schema),
        sample=data["sample"],
        webhook=sections["webhook"],
        poll=sections["poll"],
        override=bool(data.get("override", False)),
        source=file,
        choices=choice_fields(input_schema),
        text=located.text,
        output_pii_paths=lint.pii_paths(output_schema),
    )


def load_module(path: PathLike, *, display: str | None = None) -> Module:
    """Load an action or a trigger module: a trigger when under a ``triggers`` folder, or with
    a ``webhook`` or ``poll`` section and no ``request``."""
    located, file = read_located(path, display)
    parent = Path(str(path)).parent.name
    data = located.data if isinstance(located.data, Mapping) else {}
    is_trigger = parent == "triggers" or (
        parent != "actions" and "request" not in data and ("webhook" in data or "poll" in data)
    )
    if is_trigger:
        return trigger_from(located, file, _stem(path))
    return action_from(located, file, _stem(path))


def load_recipe(path: PathLike, *, display: str | None = None) -> Recipe:
    """Load a recipe and check the file on its own (running it is the runner's job).

    Checked here: the recipe schema, unique step ids, template syntax, templates reading only
    ``trigger``, ``steps``, ``vars``, ``now`` and ``item``, and ``steps.ID`` naming an earlier
    step. What needs the modules (the trigger and actions exist, literal inputs, ``retry``,
    every template path against the output schemas) is
    :func:`practiceflow.runner.validate_recipe`'s, which starts with this.

    Args:
        path: the recipe file.
        display: the file name to use in messages.

    Returns:
        The loaded recipe.

    Raises:
        ManifestError: with every issue of the file.
    """
    return recipe_from(*read_located(path, display))


def recipe_from(located: Located, file: str) -> Recipe:
    """Build a recipe from an already read document (see :func:`load_recipe`)."""
    issues = _start("recipe", located, file, None, "a mapping with name, trigger, steps")
    if issues:
        raise ManifestError(issues)
    data = located.data
    origin_for = _origins(file, located)
    trigger = data["trigger"]
    trigger_with, found = compile_tree(trigger.get("with", {}), origin_for, ("trigger", "with"))
    issues += found
    if "max_delay" in trigger and (problem := max_delay_problem(trigger["max_delay"])):
        issues.append(located.issue(file, ("trigger", "max_delay"), problem))
    seen: list[str] = []
    steps: list[RecipeStep] = []
    for index, raw in enumerate(data["steps"]):
        at: JsonPath = ("steps", index)
        if raw["id"] in seen:
            message = f"step id {raw['id']!r} is used twice; ids must be unique"
            issues.append(located.issue(file, (*at, "id"), message))
        compiled: dict[str, Any] = {}
        for part in ("with", "if", "for_each"):
            if part in raw:
                compiled[part], found = compile_tree(raw[part], origin_for, (*at, part))
                issues += found
                text = compiled[part]
                if part != "with" and isinstance(text, str) and not found:  # a constant
                    message = (
                        f"got {text[:60]!r}, which is plain text, not a template; {part} is "
                        f"computed from the event, such as {_EXAMPLES[part]!r}"
                    )
                    issues.append(located.issue(file, (*at, part), message))
        for template in lint.templates_of(*compiled.values()):
            found = lint.check_template_names(
                [template], allowed=RECIPE_NAMES, input_fields=(), file=template.origin.file
            )
            # 'input' is not a recipe name: drop the undeclared-input noise of the names check.
            issues += [issue for issue in found if not issue.message.startswith("input.")]
            for name in sorted(template.attributes.get("steps", frozenset()) - set(seen)):
                hint = f"earlier steps are {seen}" if seen else "no step runs before this one"
                issues.append(template.origin.issue(f"steps.{name} is not an earlier step; {hint}"))
        steps.append(
            RecipeStep(
                id=raw["id"],
                use=raw["use"],
                with_=compiled.get("with", {}),
                if_=compiled.get("if"),
                for_each=compiled.get("for_each"),
                on_error=raw.get("on_error", "stop"),
                retry=raw.get("retry"),
            )
        )
        seen.append(raw["id"])
    if issues:
        raise ManifestError(issues)
    return Recipe(
        name=data["name"],
        description=data.get("description", ""),
        profile=data.get("profile"),
        trigger=trigger["use"],
        mode=trigger.get("mode", "auto"),
        trigger_with=trigger_with,
        vars=data.get("vars", {}),
        max_delay=read_max_delay(trigger.get("max_delay")),
        steps=tuple(steps),
        source=file,
        raw=data,
        text=located.text,
    )


#: The ``max_delay`` a recipe may ask for, in seconds: from 10 s (the daily budget allows
#: one request per 8.64 s) to one day.
MAX_DELAY_RANGE: Final = (10.0, 86400.0)
_DURATION_UNITS: Final[Mapping[str, float]] = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def read_max_delay(value: object) -> float | None:
    """Seconds of a ``max_delay`` (a number, or ``90s``, ``15m``, ``2h``, ``1d``)."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip().lower()
        unit = _DURATION_UNITS.get(text[-1])
        number = text[:-1] if unit is not None else text
        try:
            seconds = float(number) * (unit or 1.0)
        except ValueError:
            return None
    low, high = MAX_DELAY_RANGE
    return seconds if seconds is not None and low <= seconds <= high else None


def max_delay_problem(value: object) -> str | None:
    """What is wrong with a ``max_delay`` (got, and what would be valid), or ``None``."""
    if read_max_delay(value) is not None:
        return None
    low, high = MAX_DELAY_RANGE
    return (
        f"got {value!r}; expected a duration from {low:.0f} s to {high:.0f} s, "
        "as seconds or with a unit (90s, 15m, 2h, 1d)"
    )


def load_connector(path: PathLike | None = None) -> dict[str, Any]:
    """Load the connector manifest (default: the shipped ``manifests/connector.yaml``)."""
    target = path if path is not None else data_dir("manifests") / "connector.yaml"
    located, file = read_located(target, None if path is not None else "manifests/connector.yaml")
    issues = _start("connector", located, file, None)
    if issues:
        raise ManifestError(issues)
    return dict(located.data)


def compile_extensions(
    data: Mapping[str, Any],
    checked: Callable[..., Any],
    issues: list[Issue],
    *,
    file: str,
    located: Located,
) -> Extensions:
    """Compile ``list``, ``download`` and ``warn_if`` with ``checked``, appending to ``issues``."""

    def compiled(section: Mapping[str, Any], at: JsonPath, allowed: Iterable[str]) -> Template:
        value = section.get(str(at[-1]))
        tree = None if value is None else checked(value, at, allowed=allowed)
        return tree if isinstance(tree, CompiledTemplate | str) else None

    spec_list: ListSpec | None = None
    spec_download: DownloadSpec | None = None
    raw_list = data.get("list")
    if isinstance(raw_list, Mapping):
        size = raw_list.get("page_size")
        spec_list = ListSpec(
            paged=bool(raw_list.get("paged", False)),
            page_size=size if isinstance(size, int) else None,
            limit=compiled(raw_list, ("list", "limit"), INPUT_NAMES),
            filter=compiled(raw_list, ("list", "filter"), ITEM_NAMES),
        )
        if size is not None and not spec_list.paged:
            issues.append(located.issue(file, ("list", "page_size"), "needs 'paged: true'"))
    raw_download = data.get("download")
    if isinstance(raw_download, Mapping):
        spec_download = DownloadSpec(
            to=compiled(raw_download, ("download", "to"), INPUT_NAMES),
            filename=compiled(raw_download, ("download", "filename"), INPUT_NAMES),
        )
        request = data.get("request")
        method = request.get("method") if isinstance(request, Mapping) else None
        if method not in (None, "GET"):
            message = f"a download is read with GET; got request.method {method!r}"
            issues.append(located.issue(file, ("download",), message))
        if spec_list is not None:
            message = "a module is a list or a download, not both"
            issues.append(located.issue(file, ("download",), message))
    warnings: list[WarningSpec] = []
    raw_warnings = data.get("warn_if")
    # The meta-schema's issues are reported with these; a wrong type is skipped here.
    for index, raw in enumerate(raw_warnings if isinstance(raw_warnings, list) else []):
        if isinstance(raw, Mapping):
            when = compiled(raw, ("warn_if", index, "when"), ANSWER_NAMES)
            message_template = compiled(raw, ("warn_if", index, "message"), ANSWER_NAMES)
            warnings.append(WarningSpec(when=when, message=message_template))
    return Extensions(list=spec_list, download=spec_download, warn_if=tuple(warnings))
