"""Recipe validation before anything runs: every problem with file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.errors import ManifestError
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import validate_recipe
from runner._support import write_recipe

BILL = """\
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.entityKey }}"
      lineItems: [{amount: 100, taxPercent: 10}]
"""

HEAD = "  - id: bill\n    use: create_bill\n    with:\n"
KEY = "      entityKey: '{{ trigger.entityKey }}'\n"

CASES = [
    pytest.param(
        "  - id: bill\n    use: create_bil\n    with: {}\n",
        None,
        "t.yaml:6:10 steps[0].use: unknown action 'create_bil'; did you mean 'create_bill'?",
        id="unknown-action-did-you-mean",
    ),
    pytest.param(
        "  - id: bill\n    use: create_bill\n    with:\n      entityKey: abc\n"
        "      lineItems: [{amount: 100, taxPercent: 10}]\n",
        None,
        "t.yaml:8:18 steps[0].with.entityKey: got 'abc'; expected a UUID",
        id="literal-input-wrong-format",
    ),
    pytest.param(
        HEAD + KEY + "      lineItems: [{amount: twelve, taxPercent: 10}]\n",
        None,
        "t.yaml:9:28 steps[0].with.lineItems[0].amount: got 'twelve'; expected a number",
        id="literal-inside-list-checked-beside-template",
    ),
    pytest.param(
        HEAD + KEY,
        None,
        "steps[0].with.lineItems: required field is missing",
        id="required-field-missing",
    ),
    pytest.param(
        HEAD
        + KEY
        + "      lineItems: [{amount: 1, taxPercent: 1}]\n      billdate: '2024-01-01'\n",
        None,
        "'billdate' is not a known field; did you mean 'billDate'?",
        id="unknown-field-did-you-mean",
    ),
    pytest.param(
        "  - id: a\n    use: create_client\n    with: {entityType: Company, entityName: "
        "'{{ steps.b.entityKey }}'}\n" + BILL.replace("id: bill", "id: b"),
        None,
        "steps.b is not an earlier step",
        id="reference-to-later-step",
    ),
    pytest.param(
        "  - id: a\n    use: create_client\n    with: {entityType: Company, entityName: "
        "'{{ steps.nope.x }}'}\n",
        None,
        "steps.nope is not an earlier step; no step runs before this one",
        id="reference-to-missing-step",
    ),
    pytest.param(
        BILL.replace("    with:", "    retry: {attempts: 3}\n    with:"),
        None,
        "steps[0].retry: retry is for read steps only; 'create_bill' writes",
        id="retry-on-a-write",
    ),
    pytest.param(
        BILL,
        False,
        "steps[0].use: 'create_bill' writes, but the recipe's credentials are read-only",
        id="write-step-with-read-only-profile",
    ),
    pytest.param(
        "  - id: out\n    use: write_jsonl\n    with: {path: out.jsonl}\n",
        None,
        "steps[0].with.record: required field is missing",
        id="local-step-input-checked",
    ),
]


@pytest.mark.parametrize(("steps", "can_write", "expected"), CASES)
def test_invalid_recipe_is_refused_with_location(
    registry: ModuleRegistry, tmp_path: Path, steps: str, can_write: bool | None, expected: str
):
    path = write_recipe(tmp_path, steps)
    with pytest.raises(ManifestError) as caught:
        validate_recipe(path, registry=registry, can_write=can_write, display="t.yaml")
    assert expected in str(caught.value)


def test_personal_literal_value_is_not_echoed(registry: ModuleRegistry, tmp_path: Path):
    steps = "  - id: c\n    use: create_client\n    with: {entityType: Company, entityName: 42}\n"
    with pytest.raises(ManifestError) as caught:
        validate_recipe(write_recipe(tmp_path, steps), registry=registry)
    assert "entityName: got ***" in str(caught.value)


def test_unknown_trigger_is_refused(registry: ModuleRegistry, tmp_path: Path):
    path = tmp_path / "r.yaml"
    path.write_text("name: r\ntrigger: {use: test_evnt}\nsteps:\n" + BILL)
    with pytest.raises(
        ManifestError, match="unknown trigger 'test_evnt'; did you mean 'test_event'"
    ):
        validate_recipe(path, registry=registry)


@pytest.mark.parametrize("can_write", [None, True])
def test_valid_recipe_loads_with_its_actions(
    registry: ModuleRegistry, tmp_path: Path, can_write: bool | None
):
    checked = validate_recipe(write_recipe(tmp_path, BILL), registry=registry, can_write=can_write)
    assert checked.writes() == ["bill"]
    assert checked.actions["bill"].key == "create_bill"
    assert checked.trigger.key == "test_event"
