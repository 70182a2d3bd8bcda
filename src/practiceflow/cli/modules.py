"""``practiceflow modules`` (list, show, validate, new, docs) and ``practiceflow action``:
thin over :mod:`practiceflow.manifest` and :mod:`practiceflow.engine`."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from practiceflow.api import Client
from practiceflow.cli.common import (
    ApiOptions,
    api_options,
    build_client,
    echo_json,
    modules_option,
    terminal,
)
from practiceflow.engine import run_action, validate_input
from practiceflow.engine.run import check_choices
from practiceflow.errors import ConfigError, InputError, Issue, ManifestError
from practiceflow.manifest import (
    ActionModule,
    Module,
    ModuleRegistry,
    load_connector,
    load_module,
    load_modules,
    load_recipe,
)
from practiceflow.manifest.loader import read_located
from practiceflow.manifest.safe_read import FileRefused, read_text_limited
from practiceflow.manifest.validation import hint
from practiceflow.manifest.yamlpos import MAX_BYTES, Located, YamlLoadError, load_yaml
from practiceflow.runner import validate_recipe


def _console() -> Console:
    return terminal(soft_wrap=False, highlight=False)


@click.group()
def modules() -> None:
    """List, show and validate action and trigger modules.

    \b
    Examples:
      practiceflow modules list
      practiceflow modules new my_action --dir my-modules
    """


def _kind(module: Module) -> str:
    return "action" if isinstance(module, ActionModule) else "trigger"


def _row(module: Module) -> dict[str, Any]:
    writes = module.needs_write if isinstance(module, ActionModule) else False
    return {
        "key": module.key,
        "type": _kind(module),
        "noun": module.noun,
        "title": module.title,
        "needs_write": writes,
        "source": module.source,
    }


@modules.command("list")
@modules_option
@click.option("--json", "as_json", is_flag=True, help="Print the modules as JSON.")
def list_modules(modules_dirs: Sequence[Path], as_json: bool) -> None:
    """List the actions and triggers, grouped by what they are about.

    \b
    Examples:
      practiceflow modules list
      practiceflow modules list --modules ./my-modules --json
    """
    registry = load_modules(modules_dirs)
    rows = sorted(
        (_row(module) for module in registry), key=lambda r: (r["noun"], r["type"], r["key"])
    )
    if as_json:
        echo_json(rows)
        return
    table = Table(title="practiceflow modules", box=box.SIMPLE_HEAD, show_edge=False)
    longest = max((len(row["key"]) for row in rows), default=3)
    table.add_column("Noun", max_width=12, overflow="fold")  # words: these wrap at spaces
    table.add_column("Key", no_wrap=True, min_width=longest)  # identifiers never break
    table.add_column("Type", max_width=8)  # "action (writes)" wraps at its space
    table.add_column("Title", ratio=1, min_width=12, overflow="fold")
    if modules_dirs:  # shipped modules' source is their key: worth a column only for yours
        table.add_column("Source", overflow="fold")
    for index, row in enumerate(rows):
        first = index == 0 or rows[index - 1]["noun"] != row["noun"]
        last = index == len(rows) - 1 or rows[index + 1]["noun"] != row["noun"]
        cells = [
            row["noun"] if first else "",
            row["key"],
            f"{row['type']} (writes)" if row["needs_write"] else row["type"],
            row["title"],
        ]
        if modules_dirs:
            cells.append(row["source"])
        table.add_row(*(escape(cell) for cell in cells), end_section=last)
    _console().print(table)


def find_module(registry: ModuleRegistry, key: str, where: str = "") -> Module:
    """The action or trigger ``key``, else a ConfigError (``where``: its option)."""
    found = registry.actions.get(key) or registry.triggers.get(key)
    if found is None:
        known = sorted([*registry.actions, *registry.triggers])
        message = f"{where}no module named {key!r}; {hint(key, known, f'valid values are {known}')}"
        raise ConfigError(message)
    return found


def _type_of(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _type_of(
            {**defs.get(ref.removeprefix("#/$defs/"), {}), **schema, "$ref": None}, defs
        )
    kind = schema.get("type", "any")
    text = " or ".join(kind) if isinstance(kind, list) else str(kind)
    if "format" in schema:
        text += f" ({schema['format']})"
    if "enum" in schema:
        text += " one of " + ", ".join(map(str, schema["enum"]))
    return text


def _field_rows(
    schema: Mapping[str, Any], defs: Mapping[str, Any], prefix: str = ""
) -> list[tuple[str, str, str, str]]:
    rows: list[tuple[str, str, str, str]] = []
    required = set(schema.get("required", ()))
    for name, field in schema.get("properties", {}).items():
        ref = field.get("$ref")
        resolved = defs.get(ref.removeprefix("#/$defs/"), {}) if isinstance(ref, str) else {}
        merged = {**resolved, **field}
        pii = " [personal data]" if merged.get("x-pii") else ""
        description = (merged.get("description") or merged.get("title") or "") + pii
        mark = "yes" if name in required else ""
        rows.append((prefix + name, _type_of(field, defs), mark, description))
        items = merged.get("items")
        if merged.get("type") == "array" and isinstance(items, Mapping) and "properties" in items:
            rows.extend(_field_rows(items, defs, f"{prefix}{name}[]."))
        elif merged.get("type") == "object" and "properties" in merged:
            rows.extend(_field_rows(merged, defs, f"{prefix}{name}."))
    return rows


@modules.command("show")
@click.argument("key")
@modules_option
@click.option("--json", "as_json", is_flag=True, help="Print the module's form as JSON.")
def show(key: str, modules_dirs: Sequence[Path], as_json: bool) -> None:
    """Show a module's input form, an example input and its sample output.

    \b
    Examples:
      practiceflow modules show create_bill
      practiceflow modules show create_client --json
    """
    module = find_module(load_modules(modules_dirs), key)
    schema = module.input_schema
    example = module.example_input() if isinstance(module, ActionModule) else {}
    if as_json:
        payload = {**_row(module), "description": module.description, "input": schema}
        payload["example_input"] = example
        payload["sample"] = module.sample
        echo_json(payload)
        return
    console = _console()
    title = escape(f"{module.title}  ({_kind(module)} {module.key}, {module.noun})")
    console.print(f"[bold]{title}[/bold]")
    console.print(escape(module.description))
    if isinstance(module, ActionModule):
        notes = ["needs write access (canWrite)" if module.needs_write else "read-only"]
        if module.checks:
            notes.append("checks: " + ", ".join(module.checks))
        if module.hook:
            notes.append(f"hook: {module.hook}")
        console.print(escape("; ".join(notes)))
    table = Table(title="Input")
    fields = _field_rows(schema, schema.get("$defs", {}))
    longest = max((len(row[0]) for row in fields), default=5)
    table.add_column("Field", no_wrap=True, min_width=longest)  # identifiers never break
    table.add_column("Type")
    table.add_column("Required", no_wrap=True)
    table.add_column("Description", ratio=1)
    for row in fields:  # examples: the example input below (a key would not fit whole)
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    if isinstance(module, ActionModule):
        console.print("[bold]Example input[/bold]")
        click.echo(json.dumps(example, indent=2, ensure_ascii=False))
    console.print("[bold]Sample output[/bold]")
    click.echo(json.dumps(module.sample, indent=2, ensure_ascii=False))


def _validate_file(path: Path, registry: Callable[[], ModuleRegistry | None]) -> list[str]:
    """Check one file; return the notes of what could not be checked."""
    located, _ = read_located(path)
    data = located.data if isinstance(located.data, Mapping) else {}
    if "steps" in data:
        modules = registry()
        if modules is None:  # the modules themselves have problems, already reported
            load_recipe(path)
            return []
        return list(validate_recipe(path, registry=modules).notes)
    if path.name == "connector.yaml" or "paging" in data:
        load_connector(path)
    else:
        load_module(path)
    return []


def _warn_untested(files: Sequence[Path], modules_dirs: Sequence[Path]) -> None:
    """Name each recipe or module no test file names (a warning; the exit code stays)."""
    from practiceflow.testing import untested

    for folder in modules_dirs:
        for kind in ("actions", "triggers", "."):
            if (folder / kind).is_dir():
                files = [*files, *sorted((folder / kind).glob("*.yaml"))]
    for file in untested(dict.fromkeys(files)):
        click.echo(
            f"warning: {file} has no test (a *.test.yaml naming it, beside it or in tests/);"
            " see docs/testing.md",
            err=True,
        )


@modules.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@modules_option
def validate(paths: Sequence[Path], modules_dirs: Sequence[Path]) -> None:
    """Check module, recipe and connector files; print every problem as file:line:col.

    Without PATH, checks the shipped modules, the connector manifest and every --modules
    folder. Exit code 0 when all is well, 1 when problems were found.

    \b
    Examples:
      practiceflow modules validate
      practiceflow modules validate actions/create_bill.yaml recipes/
      practiceflow modules validate --modules ./my-modules
    """
    issues: list[Issue] = []
    notes: list[str] = []
    checked = 0

    @functools.cache
    def registry() -> ModuleRegistry | None:
        """The modules recipes are checked against, loaded once (None when they fail)."""
        try:
            return load_modules(modules_dirs)
        except ManifestError as exc:
            issues.extend(exc.issues)
            return None

    if not paths:
        registry()
        try:
            load_connector()
        except ManifestError as exc:
            issues.extend(exc.issues)
        checked = -1
    validated: list[Path] = []
    for path in paths:
        files = (
            sorted(
                p
                for p in path.rglob("*")
                if p.suffix in (".yaml", ".yml")
                # tests and their cassettes are checked by 'practiceflow test'
                and not p.name.endswith((".test.yaml", ".test.yml"))
                and "cassettes" not in p.relative_to(path).parts
            )
            if path.is_dir()
            else [path]
        )
        validated += files
        for file in files:
            checked += 1
            try:
                notes += _validate_file(file, registry)
            except ManifestError as exc:
                issues.extend(exc.issues)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    _warn_untested(validated, modules_dirs)
    for issue in issues:
        click.echo(str(issue), err=True)
    if issues:
        count = len(issues)
        click.echo(f"{count} problem{'s' if count != 1 else ''} found", err=True)
        click.get_current_context().exit(1)
    what = "all modules" if checked < 0 else f"{checked} file{'s' if checked != 1 else ''}"
    click.echo(f"ok: {what} valid")


@modules.command("new")
@click.argument("key")
@click.option(
    "--from",
    "copy_from",
    metavar="EXISTING",
    help="Start from a copy of this shipped module (an action or a trigger).",
)
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("modules"),
    show_default=True,
    help="Your modules folder (use it as --modules DIR); the file goes to DIR/actions/.",
)
@click.option("--force", is_flag=True, help="Replace an existing file.")
def new(key: str, copy_from: str | None, folder: Path, force: bool) -> None:
    """Write a new, commented module file that validates as written.

    \b
    Examples:
      practiceflow modules new read_client --dir my-modules
      practiceflow modules new my_new_client --from new_client --dir my-modules
    """
    from practiceflow.cli.scaffold import new_module

    path = new_module(key, folder, copy_from=copy_from, force=force)
    click.echo(f"wrote {path}; check it with: practiceflow modules validate --modules {folder}")
    test = folder / "tests" / f"{key}.test.yaml"
    click.echo(f"wrote {test}; run it with: practiceflow test {test}")


@modules.command("docs")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the Markdown here instead of printing it (docs/modules.md in this repo).",
)
@click.option("--check", is_flag=True, help="Exit 1 when --out differs from a fresh render.")
@modules_option
def docs(out: Path | None, check: bool, modules_dirs: Sequence[Path]) -> None:
    """Render the Markdown reference of every module (input form, sample, errors).

    \b
    Examples:
      practiceflow modules docs --out docs/modules.md
      practiceflow modules docs --out docs/modules.md --check
    """
    from practiceflow.manifest.docs import render_docs

    text = render_docs(load_modules(modules_dirs))
    if out is None:
        click.echo(text, nl=False)
        return
    if check:
        current = out.read_text(encoding="utf-8") if out.exists() else ""
        if current != text:
            click.echo(f"{out} is stale: run practiceflow modules docs --out {out}", err=True)
            click.get_current_context().exit(1)
        click.echo(f"ok: {out} is current")
        return
    out.write_text(text, encoding="utf-8")
    click.echo(f"wrote {out}")


def _read_input(source: str, key: str) -> tuple[Located, str]:
    """The action's input and how errors name it (an InputError when it is not YAML)."""
    if source == "-":
        text, display = sys.stdin.read(MAX_BYTES + 1), "<stdin>"
        if len(text) > MAX_BYTES:
            message = f"--input -: the input is larger than the limit of {MAX_BYTES} bytes"
            raise ConfigError(message)
    else:
        path = Path(source)
        display = source
        try:
            text = read_text_limited(path, MAX_BYTES)
        except FileRefused as exc:
            message = f"--input {source}: {exc}"
            raise ConfigError(message) from None
    try:
        return load_yaml(text), display
    except YamlLoadError as exc:
        raise InputError(key, [Issue(display, exc.line, exc.column, "", exc.message)]) from None


@click.command("action")
@click.argument("key")
@click.option(
    "--input",
    "input_source",
    metavar="FILE|-",
    help="The action's input as YAML or JSON, from a file or '-' for standard input "
    "(leave it out for an action whose input is all optional, such as list_entity_types).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the exact request (secrets and personal data masked); send nothing.",
)
@click.option(
    "--show-pii",
    is_flag=True,
    help="With --dry-run: show your own input's personal data unmasked, on this terminal "
    "only (credentials stay masked; nothing is journaled or logged).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@modules_option
@api_options
def action(
    key: str,
    input_source: str | None,
    dry_run: bool,
    show_pii: bool,
    as_json: bool,
    modules_dirs: Sequence[Path],
    api: ApiOptions,
) -> None:
    """Run one action with input from a file; --dry-run shows the request instead.

    Bad input is reported with its file, line and field, and nothing is sent. Online, a
    field whose choices come from a list (entity types, lead sources, eForm templates...)
    is checked against that list first, and a value it does not offer is refused with the
    valid values. Exit codes:
    0 done, 2 bad input or configuration, 3 credentials or write access, 4 transient
    (rate limit, server, network), 5 a write is in doubt.

    \b
    Examples:
      practiceflow action list_entity_types
      practiceflow action create_lead --input lead.yaml --dry-run --show-pii
      echo '{"entityKey": "6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01"}' | \\
        practiceflow action convert_lead --input - --json
    """
    if show_pii and not dry_run:
        raise click.UsageError("--show-pii only goes with --dry-run")
    registry = load_modules(modules_dirs)
    module = registry.action(key)
    if input_source is None:
        if module.required:
            message = (
                f"{module.key} needs --input FILE (or '-' for standard input) with "
                f"{', '.join(module.required)}; 'practiceflow modules show {module.key}' "
                "prints an example input"
            )
            raise ConfigError(message)
        located, display = load_yaml("{}"), "<no input>"
    else:
        located, display = _read_input(input_source, module.key)
    issues = validate_input(module, located.data, file=display, located=located)
    if issues:
        raise InputError(module.key, issues)
    client: Client | None
    try:
        client = build_client(api)
    except ConfigError:
        if not dry_run:
            raise
        client = None
        click.echo(
            "warning: no credentials configured: the request is shown without the base URL "
            "and the authentication headers",
            err=True,
        )
    try:
        if client is not None and not dry_run and module.choices:
            # Online: the declared lists (x-choices) say which values the API offers.
            wrong = check_choices(
                module, located.data, client, registry, file=display, located=located
            )
            if wrong:
                raise InputError(module.key, wrong)
        result = run_action(
            module, located.data, client, dry_run=dry_run, registry=registry, show_personal=show_pii
        )
    finally:
        if client is not None:
            client.close()
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if show_pii:
        click.echo("personal data shown unmasked: for this terminal only", err=True)
    if as_json:
        payload = asdict(result)
        if not dry_run:
            del payload["request"]
        echo_json(payload)
    elif dry_run:
        click.echo("dry run: this request would be sent (nothing was sent):", err=True)
        request = result.request
        click.echo(f"{request.get('method')} {request.get('url')}")
        for name, value in (request.get("headers") or {}).items():
            click.echo(f"{name}: {value}")
        if request.get("json") is not None:
            click.echo("")
            click.echo(json.dumps(request["json"], indent=2, ensure_ascii=False))
    else:
        click.echo(f"{module.title}: done (HTTP {result.status})", err=True)
        click.echo(json.dumps(result.output, indent=2, ensure_ascii=False))


COMMANDS: list[click.Command] = [modules, action]
