"""``practiceflow modules new`` and ``recipes new``: commented files that validate as written
(YAML written as text, for its comments; one that would not validate is a bug, exit 70)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import click

from practiceflow.cli.common import modules_option
from practiceflow.cli.modules import find_module
from practiceflow.cli.versions import check
from practiceflow.errors import BugError, ConfigError, ManifestError
from practiceflow.manifest import ActionModule, ModuleRegistry, TriggerModule, load_modules
from practiceflow.manifest.resources import data_dir

_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


def _write_checked(path: Path, text: str, force: bool, check: Callable[[], object]) -> None:
    """Write a scaffold (an existing file only with --force); one ``check`` refuses is a bug."""
    if path.exists() and not force:
        message = f"{path} exists; pass --force to replace it"
        raise ConfigError(message)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    try:
        check()
    except ManifestError as exc:  # pragma: no cover - the scaffold's own test keeps it valid
        path.unlink()
        message = f"the scaffold {path} does not validate: {exc}"
        raise BugError(message) from None


def _action_text(key: str) -> str:
    title = key.replace("_", " ").title()
    return f"""\
# An action module: one operation of the Partner API, declared rather than coded.
# Every key is described in docs/modules-guide.md; check this file with
#   practiceflow modules validate --modules DIR
key: {key}                      # must equal the file name without .yaml
title: {json.dumps(title)}
description: >-
  What this action does, for the people who pick it in a recipe or a connector.
noun: Client                    # what it is about; groups it in 'modules list'
kind: read                      # create, search or read (exporters use it)
needs_write: false              # true when the route needs canWrite (POST, PUT, DELETE)

# The input, as JSON Schema: titles, descriptions and examples build forms and examples.
input:
  type: object
  additionalProperties: false
  required: [entityKey]
  properties:
    entityKey:
      type: string
      format: uuid
      title: Client
      description: entityKey of the client (from Find Clients).
      examples: [0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58]

# The request: path, query, headers and body are templates over input.
request:
  method: GET
  path: "/api/v1/entities/{{{{ input.entityKey | pathseg }}}}"

# The output: map picks fields of the response (templates over response, headers and
# input); schema says what a recipe may read as steps.<id>.<field>.
output:
  map:
    entityKey: "{{{{ response.entityKey }}}}"
    entityName: "{{{{ response.entityName | default(None) }}}}"
    status: "{{{{ response.status | default(None) }}}}"
  schema:
    type: object
    required: [entityKey]
    properties:
      entityKey: {{type: string, title: Entity key}}
      entityName: {{type: [string, "null"], title: Name, x-pii: true}}
      status: {{type: [string, "null"], title: Status}}

# An example output: dry runs render later steps with it; it must fit output.schema.
sample:
  entityKey: 0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58
  entityName: Acme Pty Ltd
  status: Active

# What the user should do about an error status (shown with the API's own message).
errors:
  "404": "no client with this entityKey; check the key and the region"
"""


def _from_text(key: str, source: Path, existing: str) -> str:
    text = source.read_text(encoding="utf-8")
    pattern = re.compile(rf"^key:\s*{re.escape(existing)}\s*$", re.MULTILINE)
    if not pattern.search(text):  # pragma: no cover - every module has its key line
        message = f"{source}: no 'key: {existing}' line to replace"
        raise BugError(message)
    header = (
        f"# Copied from {existing} by 'practiceflow modules new {key} --from {existing}'.\n"
        "# Every key is described in docs/modules-guide.md.\n"
    )
    line = f"key: {key}"
    if key == existing:
        line += "\noverride: true   # replaces the shipped module of the same key"
    return header + pattern.sub(line, text, count=1)


def new_module(
    key: str, folder: Path, *, copy_from: str | None = None, force: bool = False
) -> Path:
    """Write a module that validates into ``folder/actions`` (``triggers`` for a copied
    trigger): the commented template, or a copy of shipped ``copy_from`` (else a ConfigError)."""
    if not _KEY.match(key):
        message = (
            f"KEY: got {key!r}; expected lower-case letters, digits and '_', "
            "starting with a letter (such as read_client)"
        )
        raise ConfigError(message)
    kind: Literal["actions", "triggers"] = "actions"
    if copy_from is None:
        text = _action_text(key)
    else:
        found = find_module(load_modules([]), copy_from, "--from: ")
        kind = "actions" if isinstance(found, ActionModule) else "triggers"
        text = _from_text(key, Path(str(data_dir(kind))) / f"{copy_from}.yaml", copy_from)
    path = folder / kind / f"{key}.yaml"
    _write_checked(path, text, force, lambda: load_modules([folder]))
    from practiceflow.testing import write_module_test

    write_module_test(path, folder / "tests", key)  # a passing first test, in DIR/tests/
    return path


def _fields(schema: Mapping[str, Any]) -> set[str]:
    properties = schema.get("properties", {})
    return set(properties) if isinstance(properties, Mapping) else set()


def _value_for(
    name: str,
    field: Mapping[str, Any],
    trigger: TriggerModule,
    earlier: Sequence[tuple[str, ActionModule]],
) -> tuple[str, str]:
    """A template or literal for one required input field, and a comment saying whence."""
    if name in _fields(trigger.output_schema):
        return json.dumps(f"{{{{ trigger.{name} }}}}"), f"from the {trigger.key} event"
    for step_id, module in reversed(earlier):
        if name in _fields(module.output.schema):
            return json.dumps(f"{{{{ steps.{step_id}.{name} }}}}"), f"from step {step_id}"
    examples = field.get("examples")
    if examples:
        return json.dumps(examples[0]), "TODO: the input's example; replace it"
    if "default" in field:
        return json.dumps(field["default"]), "TODO: the input's default; replace it"
    return "null", "TODO: required; give a value or a template"


def _note(line: str, comment: str) -> str:
    """A YAML line with its comment in a column of its own."""
    return f"{line.ljust(40)} # {comment}"


def _wanted_fields(
    module: ActionModule, trigger: TriggerModule, earlier: Sequence[tuple[str, ActionModule]]
) -> list[str]:
    """A step's inputs: the required ones, those supplied by name by the event or an earlier
    step, and the first ``anyOf``/``oneOf`` branch of required sets when none is met."""
    schema = module.input_schema
    properties = schema.get("properties", {})
    supplied = _fields(trigger.output_schema)
    for _, earlier_module in earlier:
        supplied |= _fields(earlier_module.output.schema)
    wanted = [name for name in schema.get("required", []) if name in properties]
    wanted += [name for name in properties if name in supplied and name not in wanted]
    for keyword in ("anyOf", "oneOf"):
        branches = [b.get("required", []) for b in schema.get(keyword, []) if "required" in b]
        if branches and not any(set(branch) <= set(wanted) for branch in branches):
            wanted += [name for name in branches[0] if name not in wanted]
    return wanted


def recipe_text(
    name: str, trigger_key: str, action_keys: Sequence[str], registry: ModuleRegistry
) -> str:
    """The commented YAML of a new recipe: a trigger and one step per action, required
    inputs wired as ``recipes new --help`` says (a ConfigError for an unknown key)."""
    trigger = registry.trigger(trigger_key)
    lines = [
        "# A recipe: for each event of the trigger, run the steps in order.",
        "# Every key is described in docs/recipes-reference.md; check this file with",
        "#   practiceflow run THIS_FILE --dry-run",
        f"name: {json.dumps(name)}",
        "description: What this recipe is for, in a sentence.",
        "trigger:",
        _note(f"  use: {trigger.key}", "a trigger module ('practiceflow triggers list')"),
        _note("  mode: auto", "webhook when a public URL is configured, else poll"),
        _note("vars: {}", "named values the steps read as vars.NAME"),
        "steps:",
    ]
    earlier: list[tuple[str, ActionModule]] = []
    used: set[str] = set()
    for key in action_keys:
        module = registry.action(key)
        step_id, count = key, 2
        while step_id in used:
            step_id, count = f"{key}_{count}", count + 1
        used.add(step_id)
        lines.append(f"  - id: {step_id}")
        lines.append(_note(f"    use: {module.key}", module.title))
        if module.needs_write:
            lines.append("    # a write: never retried blindly; an unclear answer holds the run")
        else:
            lines.append(_note("    # retry: {attempts: 3, backoff: 2}", "reads may retry"))
        lines.append(_note('    # if: "{{ ... }}"', "run only when this renders true"))
        properties = module.input_schema.get("properties", {})
        required = _wanted_fields(module, trigger, earlier)
        if required:
            lines.append("    with:")
            for field in required:
                value, whence = _value_for(field, properties[field], trigger, earlier)
                lines.append(_note(f"      {field}: {value}", whence))
        else:
            lines.append("    with: {}")
        earlier.append((step_id, module))
    return "\n".join(lines) + "\n"


@click.group("recipes")
def recipes() -> None:
    """Start new recipes, and check a new version against the runs in flight.

    \b
    Example:
      practiceflow recipes new welcome --trigger proposal_accepted \\
          --step get_client --step create_bill --out welcome.yaml
      practiceflow recipes check recipes/proposal_to_bill_and_eform.yaml --migrate
    """


@recipes.command("new")
@click.argument("name")
@click.option("--trigger", "trigger_key", required=True, help="A trigger module key.")
@click.option(
    "--step", "steps", multiple=True, required=True, help="An action key, in order (repeatable)."
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The file to write (default: recipes/NAME.yaml, NAME in lower case with '_').",
)
@modules_option
@click.option("--force", is_flag=True, help="Replace an existing file.")
def new_recipe(
    name: str,
    trigger_key: str,
    steps: tuple[str, ...],
    out: Path | None,
    modules_dirs: tuple[Path, ...],
    force: bool,
) -> None:
    """Write a commented recipe: the trigger and one step per --step, inputs wired.

    Each step's required inputs are wired to a same-named field of the event or of an
    earlier step's output, else to the input's example and marked TODO. The file
    validates as written ('practiceflow run FILE --dry-run').

    \b
    Examples:
      practiceflow recipes new welcome --trigger proposal_accepted \\
          --step get_client --step create_bill --step send_eform
      practiceflow recipes new "new leads" --trigger new_lead --step get_lead --out leads.yaml
    """
    from practiceflow.runner import validate_recipe

    registry = load_modules(list(modules_dirs))
    path = out or Path("recipes") / (re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") + ".yaml")
    text = recipe_text(name, trigger_key, steps, registry)
    _write_checked(path, text, force, lambda: validate_recipe(path, registry=registry))
    flags = [part for folder in modules_dirs for part in ("--modules", str(folder))]
    hint = shlex.join(["practiceflow", "run", str(path), *flags, "--dry-run"])
    click.echo(f"wrote {path}; try it with: {hint}")
    from practiceflow.testing import write_recipe_test

    modules = modules_dirs[0] if modules_dirs else None
    test = write_recipe_test(path, path.parent / "tests", modules)
    click.echo(f"wrote {test}; run it with: practiceflow test {test}")


recipes.add_command(check)  # it lives with the versions commands

COMMANDS: list[click.Command] = [recipes]
