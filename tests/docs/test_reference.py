"""docs/recipes-reference.md and docs/modules-guide.md: what they show is what happens.

- every template of the reference's table renders, in the context shown, to the value the
  table says;
- every recipe marked ``<!-- example: ... -->`` runs against the sandbox for one event of
  an active client, and each step and the run end as the marker says;
- every filter practiceflow adds and every context name a step reads is documented;
- every YAML module of the guide marked ``<!-- module: PATH -->`` loads and validates;
- the template limits the reference states are the ones enforced, and each example it gives
  of a limit checked at load or at render is refused then.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from jinja2.filters import FILTERS

from practiceflow.api import Client
from practiceflow.errors import TemplateError
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, validate_recipe
from practiceflow.runner.local import LOCAL_STEPS
from practiceflow.runner.validate import build_context
from practiceflow.state import open_store
from practiceflow.templating import compile_template, environment
from practiceflow.templating._limits import MAX_CALL_DEPTH, MAX_ITERATIONS, MAX_TEXT, MAX_WORK
from practiceflow.testing import SandboxHandle

DOCS = Path(__file__).resolve().parents[2] / "docs"
REFERENCE = (DOCS / "recipes-reference.md").read_text(encoding="utf-8")
GUIDE = (DOCS / "modules-guide.md").read_text(encoding="utf-8")
ADDED = {"date", "datetime", "tojson", "pathseg", "omit"}


def _context() -> dict[str, Any]:
    block = REFERENCE.split("<!-- context -->\n```json\n", 1)[1].split("```", 1)[0]
    context: dict[str, Any] = json.loads(block)
    context["now"] = datetime.fromisoformat(context["now"].replace("Z", "+00:00"))
    return context


def _rows() -> list[tuple[str, str]]:
    table = REFERENCE.split("<!-- templates -->\n", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        template, result = (cell.strip("`").replace("\\|", "|") for cell in cells)
        rows.append((template, result))
    return rows


@pytest.mark.parametrize(("template", "expected"), _rows(), ids=[row[0] for row in _rows()])
def test_template_table(template: str, expected: str) -> None:
    assert compile_template(template).render(_context()) == json.loads(expected)


def test_every_added_filter_and_every_context_name_is_documented() -> None:
    load_modules([])  # module loading registers the module filters too
    added = set(environment().filters) - set(FILTERS)
    assert added | {"tojson"} == ADDED  # tojson replaces Jinja's own
    for name in ADDED:
        assert f"| `{name}` |" in REFERENCE
    names = build_context(None, {}, {}, datetime.now().astimezone(), None)
    for name in names:
        assert f"| `{name}" in REFERENCE, name
    for key in LOCAL_STEPS:
        assert f"| `{key}` |" in REFERENCE


LIMITS = REFERENCE.split("### Limits\n", 1)[1].split("\n## ", 1)[0]


def test_the_template_limits_stated_are_the_ones_enforced() -> None:
    for stated in (
        f"| {MAX_WORK:,} units |",
        f"| {MAX_TEXT:,} characters |",
        f"| {MAX_ITERATIONS:,} |",
        f"| {MAX_CALL_DEPTH} deep |",
    ):
        assert stated in LIMITS


def _limit_examples(when: str) -> list[str]:
    """The templates and the expressions (code with a call) the reference gives as examples."""
    paragraph = LIMITS.split(f"**When the {when}**", 1)[1].split("**When", 1)[0]
    return [
        code
        for code in re.findall(r"`([^`]+)`", paragraph.replace("\n", " "))
        if code.startswith("{{") or "(" in code
    ]


@pytest.mark.parametrize("template", _limit_examples("recipe loads"))
def test_the_limits_said_to_be_checked_at_load_are(template: str) -> None:
    with pytest.raises(TemplateError, match="refused by the sandbox"):
        compile_template(template)


@pytest.mark.parametrize("expression", _limit_examples("step renders"))
def test_the_limits_said_to_be_checked_at_render_are_not_checked_at_load(expression: str) -> None:
    template = expression if expression.startswith("{{") else "{{ " + expression + " }}"
    compiled = compile_template(template)  # loads
    with pytest.raises(TemplateError, match="refused by the sandbox"):
        compiled.render({})


def test_every_recipe_key_is_documented() -> None:
    schema = json.loads((DOCS.parent / "manifests" / "recipe.schema.json").read_text())
    keys = set(schema["properties"]) | set(schema["properties"]["trigger"]["properties"])
    keys |= set(schema["$defs"]["step"]["properties"])
    for key in keys:
        assert f"| `{key}` |" in REFERENCE, key


def _examples() -> list[tuple[dict[str, str], str]]:
    pattern = re.compile(r"<!-- example: (?P<expect>[^>]*) -->\n```yaml\n(?P<body>.*?)```", re.S)
    found = []
    for match in pattern.finditer(REFERENCE):
        expect = dict(part.split("=", 1) for part in match["expect"].split())
        found.append((expect, match["body"]))
    return found


@pytest.mark.parametrize(("expect", "text"), _examples(), ids=lambda v: str(v)[:40])
def test_recipe_example_runs_as_documented(
    sandbox: SandboxHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    expect: dict[str, str],
    text: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "example.yaml"
    path.write_text(text, encoding="utf-8")
    recipe = validate_recipe(path, registry=load_modules([]))
    client_id, secret = sandbox.credentials("anz", "rw")
    entity = next(
        row for row in sandbox.admin("GET", "/_admin/records/entities") if row["status"] == "Active"
    )
    fault = expect.pop("fault", None)
    count = int(expect.pop("faults", "1"))
    retried = expect.pop("retry", None)
    if fault is not None:
        body = {"kind": fault, "count": count, "method": "GET", "pathPrefix": "/api/v1/entities"}
        sandbox.admin("POST", "/_admin/faults", body)
    run_status = expect.pop("run")
    payload = {"entityKey": entity["entityKey"], "entityName": entity["entityName"]}
    with (
        open_store(str(tmp_path / "state.db")) as store,
        Client(client_id, secret, base_url=sandbox.base_url("anz")) as client,
    ):
        store.record_event(client_id, recipe.trigger.key, "client.created", "ev-1", payload)
        (outcome,) = Runner(recipe, store, client, practice=client_id).process_pending()
        steps = {step.step_id: step.status for step in store.get_steps(outcome.run_id)}
        scheduled = store.run_retry(outcome.run_id)
    assert outcome.status == run_status
    for step_id, status in expect.items():
        assert steps[step_id] == status, steps
    if retried is not None:  # the run's next attempt is scheduled by the recipe's retry
        assert scheduled is not None
        assert (scheduled.attempts, scheduled.next_at is not None) == (int(retried), True)
    if fault is not None:
        assert sandbox.admin("GET", "/_admin/faults") == []  # the fault was met and ridden out
    if "tags" in text:
        lines = [
            json.loads(line) for line in (tmp_path / "out" / "tags.jsonl").read_text().splitlines()
        ]
        assert [line["tag"] for line in lines] == ["onboarding", "billing"]
        assert all("email" not in line for line in lines)  # the omission rule
    if "notes.jsonl" in text:
        (line,) = (tmp_path / "out" / "notes.jsonl").read_text().splitlines()
        assert json.loads(line)["found"] is False


def _guide_modules() -> list[tuple[str, str]]:
    pattern = re.compile(r"<!-- module: (?P<path>\S+) -->\n```yaml\n(?P<body>.*?)```", re.S)
    return [(match["path"], match["body"]) for match in pattern.finditer(GUIDE)]


def test_the_guide_has_module_examples() -> None:
    paths = [path for path, _ in _guide_modules()]
    assert any(path.startswith("actions/") for path in paths)
    assert any(path.startswith("triggers/") for path in paths)


@pytest.mark.parametrize(("path", "text"), _guide_modules(), ids=lambda v: str(v)[:30])
def test_guide_module_example_validates(tmp_path: Path, path: str, text: str) -> None:
    target = tmp_path / "mine" / path
    target.parent.mkdir(parents=True)
    target.write_text(text, encoding="utf-8")
    registry = load_modules([tmp_path / "mine"])
    key = Path(path).stem
    assert key in registry.actions or key in registry.triggers


def test_every_key_of_the_module_formats_is_in_the_guide() -> None:
    root = DOCS.parent / "manifests"
    action = json.loads((root / "action.schema.json").read_text())
    trigger = json.loads((root / "trigger.schema.json").read_text())
    keys = set(action["properties"]) | set(trigger["properties"])
    for section in ("request", "output", "list", "download", "warning"):
        keys |= set(action["$defs"][section]["properties"])
    for section in ("webhook", "poll"):
        keys |= set(trigger["properties"][section]["properties"])
    keys |= set(trigger["properties"]["poll"]["properties"]["cursor"]["properties"])
    keys |= set(trigger["properties"]["poll"]["properties"]["known"]["properties"])
    keys |= {"x-pii", "x-secret"}
    missing = sorted(key for key in keys if f"`{key}`" not in GUIDE)
    assert missing == []
