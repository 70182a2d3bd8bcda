"""load_recipe checks the file on its own, validate_recipe the file against the modules."""

from __future__ import annotations

import textwrap

import pytest

from practiceflow.errors import ManifestError
from practiceflow.manifest import Recipe, default_registry, load_recipe
from practiceflow.runner import validate_recipe

DESIGN_EXAMPLE = """\
name: accepted proposal -> first bill
description: Bill the onboarding fee when a proposal is accepted.
profile: practice-anz
trigger:
  use: proposal_accepted
  mode: auto
vars:
  fee: 100
steps:
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.entityKey }}"
      billDate: "{{ now | date }}"
      lineItems:
        - {amount: "{{ vars.fee }}", taxPercent: 10, narration: "Onboarding fee"}
  - id: form
    use: send_eform
    if: "{{ steps.bill.billTotal > 0 }}"
    with: {templateId: 12, entityKey: "{{ trigger.entityKey }}"}
    on_error: continue
"""


def _write(tmp_path, text, name="recipe.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_the_design_example_loads(tmp_path):
    recipe = load_recipe(_write(tmp_path, DESIGN_EXAMPLE))
    assert isinstance(recipe, Recipe)
    assert recipe.trigger == "proposal_accepted"
    assert recipe.mode == "auto"
    assert [step.id for step in recipe.steps] == ["bill", "form"]
    assert recipe.steps[1].on_error == "continue"
    assert recipe.steps[1].if_ is not None
    assert recipe.steps[1].if_.render({"steps": {"bill": {"billTotal": 110}}}) is True


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("mode: auto", "mode: sometimes", "6:9 trigger.mode: got 'sometimes'; expected one of"),
        (
            "on_error: continue",
            "on_eror: continue",
            "21:5 steps[1]: 'on_eror' is not a known field; did you mean 'on_error'?",
        ),
        ("  - id: form", "  - id: bill", "17:9 steps[1].id: step id 'bill' is used twice"),
        (
            "steps.bill.billTotal",
            "steps.form.billTotal",
            "steps[1].if: steps.form is not an earlier step; earlier steps are ['bill']",
        ),
        (
            '{{ trigger.entityKey }}"\n      billDate',
            '{{ triger.entityKey }}"\n      billDate',
            "steps[0].with.entityKey: unknown name 'triger' in template; did you mean 'trigger'?",
        ),
        ("{{ now | date }}", "{{ now | date }", "14:17 steps[0].with.billDate: template syntax"),
        ("  - id: bill", "  - id: Bill", "10:9 steps[0].id: got 'Bill'; expected text matching"),
        (
            'if: "{{ steps.bill.billTotal > 0 }}"',
            'if: "yes"',
            "19:9 steps[1].if: got 'yes', which is plain text, not a template",
        ),
        (
            'if: "{{ steps.bill.billTotal > 0 }}"',
            'for_each: "forms"',
            "19:15 steps[1].for_each: got 'forms', which is plain text, not a template",
        ),
    ],
)
def test_recipe_mistakes_are_located(tmp_path, old, new, expected):
    assert old in DESIGN_EXAMPLE
    path = _write(tmp_path, DESIGN_EXAMPLE.replace(old, new, 1))
    with pytest.raises(ManifestError) as caught:
        load_recipe(path)
    reported = [str(issue) for issue in caught.value.issues]
    assert any(expected in line for line in reported), reported


def test_against_the_modules_unknown_modules_are_named(tmp_path):
    text = DESIGN_EXAMPLE.replace("use: create_bill", "use: create_bil")
    with pytest.raises(ManifestError) as caught:
        validate_recipe(_write(tmp_path, text), registry=default_registry())
    reported = "\n".join(str(issue) for issue in caught.value.issues)
    assert "steps[0].use: unknown action 'create_bil'; did you mean 'create_bill'?" in reported


def test_retry_is_refused_on_a_write_step(tmp_path):
    text = DESIGN_EXAMPLE.replace(
        "    use: create_bill\n", "    use: create_bill\n    retry: {attempts: 3}\n"
    ).replace("use: send_eform", "use: create_lead")
    with pytest.raises(ManifestError) as caught:
        validate_recipe(_write(tmp_path, text), registry=default_registry())
    reported = "\n".join(str(issue) for issue in caught.value.issues)
    assert "steps[0].retry: retry is for read steps only" in reported


def test_a_recipe_must_have_steps(tmp_path):
    with pytest.raises(ManifestError, match="steps: required field is missing"):
        load_recipe(_write(tmp_path, "name: x\ntrigger: {use: t}\n"))
