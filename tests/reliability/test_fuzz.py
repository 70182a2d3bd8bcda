"""Fuzzing (hypothesis): generated recipes, modules and event payloads go through the
loaders and a dry run, in process and through the CLI.

Every case ends in success or in a clear error: exit code 0 (or 1 for ``modules
validate`` finding problems) or 2 with a message naming the file; never a traceback, an
internal error (exit 70), a hang or a huge allocation. Templates are drawn from a table
that mixes ordinary ones with hostile ones (bombs, recursion, escapes, syntax errors).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from practiceflow.cli import cli
from practiceflow.errors import PracticeflowError
from practiceflow.manifest import default_registry
from practiceflow.runner import dry_run, validate_recipe
from reliability._support import FULL, REPO

# Each example runs the CLI in-process; a loaded machine is slower, never wrong: the bound
# is against a hang, far above the time of the examples on an idle machine.
pytestmark = pytest.mark.timeout(900)

# 15 examples a test in make test; 60 in make test-faults (PRACTICEFLOW_RELIABILITY_FULL=1).
FUZZ = settings(
    max_examples=60 if FULL else 15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

REGISTRY = default_registry()
ACTIONS = sorted(REGISTRY.actions)
TRIGGERS = sorted(REGISTRY.triggers)

TEMPLATES = [
    "{{ trigger.entityKey }}",
    "{{ trigger.entityName | default('x') | upper }}",
    "{{ now | date }}",
    "{{ steps.a.entityKey }}",
    "{{ trigger.x.y.z }}",
    "{{ 1 / 0 }}",
    "{{ 'x' | center(2000000000) }}",
    "{{ '%2000000000s' | format(1) }}",
    "{{ '{:>2000000000}'.format(1) }}",
    "{{ range(100000) | join(' ' * 99999) }}",
    "{{ ('a' * 99999) | replace('a', 'a' * 99999) }}",
    "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
    "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(trigger.entityKey) }}",
    "{{ 'x' * 10**9 }}",
    "{{ ''.__class__.__mro__ }}",
    "{{ trigger | tojson(indent=99999) }}",
    "{{ (trigger.entityKey ~ 'x') | int }}",
    "{{ 'a' ~ }}",
    "{% for x in %}",
    "{{ " + "(" * 400 + "1" + ")" * 400 + " }}",
    "{{ [1, 2] | batch(2000000000, 0) | list }}",
    "{{ trigger.entityKey | datetime }}",
    "plain text",
]

leaf = (
    st.sampled_from(TEMPLATES)
    | st.integers(-(10**12), 10**12)
    | st.booleans()
    | st.none()
    | st.text(max_size=12)
    | st.text(alphabet="{}%#abc .|'()", max_size=20).map(lambda s: "{{ " + s + " }}")
)
values = st.recursive(
    leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@st.composite
def recipes(draw: st.DrawFn) -> dict[str, Any]:
    steps = []
    for index in range(draw(st.integers(0, 3))):
        use = draw(st.sampled_from([*ACTIONS, "nope", "write_jsonl"]))
        fields = (
            [*(REGISTRY.actions[use].input_schema.get("properties") or {})]
            if use in REGISTRY.actions
            else []
        )
        names = st.sampled_from([*fields, "junk"]) if fields else st.just("junk")
        step: dict[str, Any] = {
            "id": draw(st.sampled_from(["a", "b", f"s{index}", "", "has space", 7])),
            "use": use,
            "with": draw(st.dictionaries(names, values, max_size=4)),
        }
        if draw(st.booleans()):
            step["if"] = draw(st.sampled_from(TEMPLATES))
        if draw(st.booleans()):
            step["for_each"] = draw(st.sampled_from([*TEMPLATES, "{{ [1, 2, 3] }}"]))
        if draw(st.booleans()):
            step["on_error"] = draw(st.sampled_from(["stop", "continue", "explode"]))
        steps.append(step)
    recipe: dict[str, Any] = {
        "name": draw(st.sampled_from(["fuzz", "", "a" * 300])),
        "trigger": {
            "use": draw(st.sampled_from([*TRIGGERS, "nope"])),
            "mode": draw(st.sampled_from(["poll", "webhook", "auto", "sideways"])),
        },
        "steps": steps,
    }
    if draw(st.booleans()):
        recipe["vars"] = draw(st.dictionaries(st.text(max_size=6), values, max_size=3))
    return recipe


def _assert_clean(result: Any, file: str, allowed: tuple[int, ...]) -> None:
    text = result.output
    assert result.exit_code in allowed, (result.exit_code, text[-3000:])
    assert "Traceback" not in text
    assert "internal error" not in text
    if result.exit_code == 2:
        assert file in text, text[-3000:]
    if result.exit_code == 1:  # problems found: located in the file, or the dry run's step
        assert file in text or '"status": "error"' in text, text[-3000:]


@FUZZ
@given(recipe=recipes())
def test_generated_recipes_dry_run_or_say_where(tmp_path_factory, recipe):
    folder = tmp_path_factory.mktemp("recipe")
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, allow_unicode=True), encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["run", str(path), "--dry-run", "--json"], env={"COLUMNS": "200"}
    )
    _assert_clean(result, "recipe.yaml", (0, 1, 2))


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at] if at else []
    if isinstance(value, dict) and len(at) < 4:
        for key, child in value.items():
            found += _paths(child, (*at, key))
    elif isinstance(value, list) and len(at) < 4:
        for index, child in enumerate(value[:3]):
            found += _paths(child, (*at, index))
    return found


@FUZZ
@given(
    source=st.sampled_from(["create_lead", "create_bill", "find_clients", "send_eform"]),
    data=st.data(),
    value=values,
)
def test_generated_modules_validate_and_dry_run_or_say_where(tmp_path_factory, source, data, value):
    module = yaml.safe_load((REPO / "actions" / f"{source}.yaml").read_text(encoding="utf-8"))
    module["key"] = "fuzz_action"
    where = data.draw(st.sampled_from(_paths(module)))
    target = module
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    folder = tmp_path_factory.mktemp("modules")
    (folder / "actions").mkdir()
    path = folder / "actions" / "fuzz_action.yaml"
    path.write_text(yaml.safe_dump(module, allow_unicode=True), encoding="utf-8")
    runner = CliRunner()
    checked = runner.invoke(cli, ["modules", "validate", str(path)], env={"COLUMNS": "200"})
    _assert_clean(checked, "fuzz_action.yaml", (0, 1, 2))
    example = REGISTRY.actions[source].example_input()
    ran = runner.invoke(
        cli,
        ["action", "fuzz_action", "--input", "-", "--dry-run", "--modules", str(folder)],
        input=json.dumps(example),
        env={"COLUMNS": "200"},
    )
    _assert_clean(ran, "fuzz_action", (0, 2))


RECIPES = sorted((REPO / "recipes").glob("*.yaml"))
VALID = [validate_recipe(path) for path in RECIPES]

payloads = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["entityKey", "entityName", "email", "data", "event", "x", ""]),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@FUZZ
@given(index=st.integers(0, len(VALID) - 1), payload=payloads)
def test_any_event_payload_dry_runs_every_shipped_recipe_cleanly(index, payload):
    try:
        steps = dry_run(VALID[index], trigger=payload)
    except PracticeflowError as exc:  # a clear error is fine; anything else fails the test
        message = str(exc)
    else:
        message = "ok"
        for step in steps:
            if step.status == "error":
                assert step.note
                assert "Traceback" not in step.note
    assert message
