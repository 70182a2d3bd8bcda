"""Template paths are checked against output schemas (never samples) before anything runs.

``validate_recipe`` is what ``modules validate``, ``run``, ``run --dry-run``, ``serve`` and
``worker`` call; the CLI cases at the end check the two commands a user checks a file with.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.errors import ManifestError
from practiceflow.manifest import ModuleRegistry, default_registry
from practiceflow.runner import dry_run, local_step, validate_recipe
from practiceflow.runner.local import LOCAL_STEPS

RECIPE = """\
name: accepted proposal -> first bill
trigger:
  use: proposal_accepted
vars:
  fee: 100
  forms: {onboarding: 101}
steps:
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.entityKey }}"
      lineItems:
        - {amount: "{{ vars.fee }}", taxPercent: 10}
  - id: form
    use: send_eform
    if: "{{ steps.bill.billTotal > 0 }}"
    with:
      templateId: "{{ vars.forms.onboarding }}"
      entityKey: "{{ steps.bill.entityKey }}"
  - id: lead
    use: get_lead
    with: {entityKey: "{{ trigger.entityKey }}"}
  - id: contacts
    use: create_contact
    for_each: "{{ [steps.lead] if steps.lead.email else [] }}"
    with:
      entityKey: "{{ trigger.entityKey }}"
      contact: {firstName: "{{ item.entityName }}", email: "{{ item.email }}"}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _problems(tmp_path: Path, text: str, registry: ModuleRegistry | None = None) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        validate_recipe(_write(tmp_path, text), registry=registry, display="r.yaml")
    return [str(issue) for issue in caught.value.issues]


def test_paths_the_schemas_declare_are_accepted_even_when_samples_lack_them(tmp_path: Path):
    registry = default_registry()
    assert "entityKey" not in registry.actions["create_bill"].sample
    assert "entityKey" in registry.actions["create_bill"].output.schema["properties"]
    checked = validate_recipe(_write(tmp_path, RECIPE), registry=registry)
    assert checked.notes == ()
    # The dry run reads the declared field as a placeholder of its type, not an error.
    steps = {step.step_id: step for step in dry_run(checked)}
    assert steps["form"].status == "would_send", steps["form"].note
    assert steps["form"].request["json"]["entityKey"] == "00000000-0000-0000-0000-000000000000"


CASES = [
    pytest.param(
        "steps.bill.billTotal > 0",
        "steps.bill.billTotl > 0",
        "r.yaml:16:9 steps[1].if: steps.bill has no declared field 'billTotl'; did you mean "
        "'billTotal'? (in the output schema of 'create_bill')",
        id="step-output-typo-with-suggestion",
    ),
    pytest.param(
        '{{ trigger.entityKey }}"\n      lineItems',
        '{{ trigger.entityKy }}"\n      lineItems',
        "r.yaml:11:18 steps[0].with.entityKey: trigger has no declared field 'entityKy'; did "
        "you mean 'entityKey'? (in the output schema of trigger 'proposal_accepted')",
        id="trigger-typo-with-suggestion",
    ),
    pytest.param(
        "vars.forms.onboarding",
        "vars.forms.onbording",
        "r.yaml:18:19 steps[1].with.templateId: vars.forms has no field 'onbording'; did you "
        "mean 'onboarding'? (declared in vars)",
        id="vars-nested-typo",
    ),
    pytest.param(
        "{{ vars.fee }}",
        "{{ vars.price }}",
        "r.yaml:13:20 steps[0].with.lineItems[0].amount: vars has no field 'price'; "
        "declared: ['fee', 'forms'] (declared in vars)",
        id="vars-undeclared-lists-the-declared",
    ),
    pytest.param(
        "item.email }}",
        "item.emial }}",
        "r.yaml:28:60 steps[3].with.contact.email: item has no declared field 'emial'; did you "
        "mean 'email'? (in the elements for_each yields)",
        id="for-each-item-against-the-items-schema",
    ),
    pytest.param(
        "steps.bill.billTotal > 0",
        "steps.bill.lineItems[0].billTotl > 0",
        "steps.bill.lineItems[0] has no declared field 'billTotl'; did you mean 'billTotal'?",
        id="through-a-list-and-a-ref",
    ),
    pytest.param(
        "steps.bill.billTotal > 0",
        "steps.bill.billNumber.prefix",
        "steps.bill.billNumber is null or a string, it has no field 'prefix'",
        id="field-of-a-string",
    ),
    pytest.param(
        "steps.bill.billTotal > 0",
        "item.entityName",
        "r.yaml:16:9 steps[1].if: item is null, it has no field 'entityName' (item is set only "
        "in a step with for_each)",
        id="item-outside-for-each",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), CASES)
def test_a_path_the_schemas_cannot_hold_is_located_with_a_suggestion(
    tmp_path: Path, old: str, new: str, expected: str
):
    assert old in RECIPE
    problems = _problems(tmp_path, RECIPE.replace(old, new, 1))
    assert any(expected in line for line in problems), problems


def test_a_closed_output_refuses_any_undeclared_field(tmp_path: Path):
    text = RECIPE + (
        "  - id: out\n    use: write_jsonl\n    with: {path: o.jsonl, record: {a: 1}}\n"
        "  - id: again\n    use: write_jsonl\n"
        "    with: {path: o.jsonl, record: {n: '{{ steps.out.size }}'}}\n"
    )
    problems = _problems(tmp_path, text)
    assert any(
        "steps.out has no field 'size'; declared: ['line', 'path'] (in the output schema of "
        "'write_jsonl')" in line
        for line in problems
    ), problems


@pytest.mark.parametrize(
    "template",
    [
        "{{ steps.bill.someFieldTheApiMaySend }}",  # passthrough output, no near miss
        "{{ steps.bill.billTotal }}",
        "{{ steps.bill.lineItems[0].narration }}",
        "{{ steps.bill.lineItems | map(attribute='billTotl') | list }}",  # not a path
        "{{ steps.bill.whatever is defined }}",  # a deliberate probe
        "{{ trigger.get('anything') }}",  # the method, not a field
        "{% set x = steps.bill %}{{ x.anything }}",  # a name the template sets itself
        "{{ steps['bill']['billTotal'] }}",
        "{{ steps.bill.lineItems[vars.fee].billTotal }}",  # a computed index
    ],
)
def test_paths_that_may_hold_are_not_false_positives(tmp_path: Path, template: str):
    text = RECIPE.replace('templateId: "{{ vars.forms.onboarding }}"', f'templateId: "{template}"')
    validate_recipe(_write(tmp_path, text), registry=default_registry())


def test_an_open_schema_accepts_every_path_below_it(tmp_path: Path):
    output = {"type": "object", "properties": {"data": {"type": "object"}}}

    @local_step("open_for_test", "Open", {"type": "object"}, {"data": {}}, output)
    def echo(data, ctx):  # type: ignore[no-untyped-def]
        return {"data": {}}

    def recipe(path: str) -> str:
        return RECIPE + (
            "  - id: e\n    use: open_for_test\n    with: {}\n"
            "  - id: f\n    use: write_jsonl\n"
            f"    with: {{path: o.jsonl, record: {{a: '{{{{ {path} }}}}'}}}}\n"
        )

    try:
        validate_recipe(
            _write(tmp_path, recipe("steps.e.data.any.depth[0].at_all")),
            registry=default_registry(),
        )
        problems = _problems(tmp_path, recipe("steps.e.dta.any"))
    finally:
        del LOCAL_STEPS["open_for_test"]
    assert any("steps.e has no declared field 'dta'; did you mean 'data'?" in p for p in problems)


def test_a_step_without_output_schema_is_said_once_and_not_guessed(tmp_path: Path):
    @local_step("echo_for_test", "Echo", {"type": "object"}, {"echo": 1})
    def echo(data, ctx):  # type: ignore[no-untyped-def]
        return {"echo": 1}

    try:
        text = RECIPE + (
            "  - id: e\n    use: echo_for_test\n    with: {}\n"
            "  - id: f\n    use: write_jsonl\n"
            "    with: {path: o.jsonl, record: {a: '{{ steps.e.anything }}', "
            "b: '{{ steps.e.other }}'}}\n"
        )
        checked = validate_recipe(_write(tmp_path, text), registry=default_registry())
    finally:
        del LOCAL_STEPS["echo_for_test"]
    assert checked.notes == (
        "step 'e' ('echo_for_test') declares no output schema: the paths read from its "
        "output are not checked",
    )


def test_modules_validate_and_dry_run_exit_non_zero_on_a_wrong_path(tmp_path: Path):
    path = _write(tmp_path, RECIPE.replace("steps.bill.billTotal", "steps.bill.billTotl"))
    checked = CliRunner().invoke(cli, ["modules", "validate", str(path)])
    assert checked.exit_code == 1
    assert "did you mean 'billTotal'?" in checked.output
    dry = CliRunner().invoke(cli, ["run", str(path), "--dry-run"])
    assert dry.exit_code != 0
    assert "did you mean 'billTotal'?" in dry.output


def test_modules_validate_and_dry_run_pass_a_sound_recipe(tmp_path: Path):
    path = _write(tmp_path, RECIPE)
    checked = CliRunner().invoke(cli, ["modules", "validate", str(path)])
    assert checked.exit_code == 0, checked.output
    assert "ok: 1 file valid" in checked.output
    dry = CliRunner().invoke(cli, ["run", str(path), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    statuses = {step["step_id"]: step["status"] for step in json.loads(dry.output)}
    assert statuses["bill"] == statuses["form"] == "would_send"


def test_dry_run_exits_non_zero_when_a_step_fails_to_render(tmp_path: Path):
    # Valid by schema, but the value is not an integer: only rendering tells.
    text = RECIPE.replace("{{ vars.forms.onboarding }}", "{{ vars.forms.onboarding ~ 'x' }}")
    path = _write(tmp_path, text)
    dry = CliRunner().invoke(cli, ["run", str(path), "--dry-run"])
    assert dry.exit_code == 1, dry.output
    assert "1 step failed to render" in dry.output


def test_the_trigger_options_are_checked_against_vars(tmp_path: Path):
    text = RECIPE.replace(
        "  use: proposal_accepted\n",
        "  use: proposal_accepted\n  with: {entityKey: '{{ vars.clent }}'}\n",
    ).replace("  fee: 100\n", "  fee: 100\n  client: 0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58\n")
    problems = _problems(tmp_path, text)
    assert any(
        "r.yaml:4:21 trigger.with.entityKey: vars has no field 'clent'; did you mean 'client'?"
        in line
        for line in problems
    ), problems


# -- for_each over literal lists: vars and lists written in the template ----------------------

LITERAL_LISTS = """\
name: a contact per listed person
trigger:
  use: proposal_accepted
vars:
  people:
    - {name: Ann, email: ann@example.com}
    - {name: Bob, email: bob@example.com, phone: "0400 000 000"}
  forms: [101, 108]
  mixed: [{name: Ann}, Bob]
steps:
  - id: contacts
    use: create_contact
    for_each: "{{ vars.people }}"
    with:
      entityKey: "{{ trigger.entityKey }}"
      contact: {firstName: "{{ item.name }}", email: "{{ item.email }}"}
"""


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        pytest.param(
            [("item.email", "item.emial")],
            "r.yaml:16:54 steps[0].with.contact.email: item has no field 'emial'; did you mean "
            "'email'? (in the elements for_each yields)",
            id="vars-list-of-mappings-misspelt-key",
        ),
        pytest.param(
            [("vars.people", "vars.forms")],
            "r.yaml:16:28 steps[0].with.contact.firstName: item is a number, it has no field "
            "'name' (in the elements for_each yields)",
            id="vars-list-of-scalars",
        ),
        pytest.param(
            [
                ("vars.people", "[{'name': 'Cy', 'email': 'cy@example.com'}]"),
                ("item.email", "item.emial"),
            ],
            "item has no field 'emial'; did you mean 'email'?",
            id="list-literal-in-the-template",
        ),
    ],
)
def test_item_over_a_literal_list_is_checked_against_its_elements(
    tmp_path: Path, edits: list[tuple[str, str]], expected: str
):
    text = LITERAL_LISTS
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    problems = _problems(tmp_path, text)
    assert any(expected in line for line in problems), problems


@pytest.mark.parametrize(
    "template",
    [
        "{{ item.name }}",
        "{{ item.phone }}",  # a key of some elements only: the union of the keys
        "{{ item['email'] }}",
    ],
)
def test_item_keys_the_literal_elements_hold_pass(tmp_path: Path, template: str):
    text = LITERAL_LISTS.replace("{{ item.name }}", template)
    validate_recipe(_write(tmp_path, text), registry=default_registry())


def test_item_over_elements_of_different_shapes_is_not_judged(tmp_path: Path):
    text = LITERAL_LISTS.replace("vars.people", "vars.mixed").replace("item.email", "item.other")
    validate_recipe(_write(tmp_path, text), registry=default_registry())
