"""A template's error quotes the value it refused; a personal value never reaches the journal."""

from __future__ import annotations

from pathlib import Path

from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, validate_recipe
from practiceflow.state import open_store

NAME = "Wilhelmina Quackenbush"


def test_a_filter_refusing_a_personal_value_journals_its_error_masked(tmp_path: Path):
    recipe_path = tmp_path / "r.yaml"
    recipe_path.write_text(
        "name: masked\ntrigger: {use: new_client}\nsteps:\n"
        "  - id: bill\n    use: create_bill\n"
        "    with:\n"
        '      entityKey: "{{ trigger.entityKey }}"\n'
        '      billDate: "{{ trigger.entityName | date }}"\n'
        "      lineItems: [{amount: 1, taxPercent: 10, narration: Fee}]\n",
        encoding="utf-8",
    )
    recipe = validate_recipe(recipe_path, registry=load_modules([]))
    payload = {**recipe.trigger.sample, "entityName": NAME}
    with open_store(str(tmp_path / "s.db")) as store:
        store.record_event("p", recipe.trigger.key, "client.created", "ev-1", payload)
        (outcome,) = Runner(recipe, store, None, practice="p").process_pending()
        assert outcome.status == "failed"
        step = store.get_step(outcome.run_id, "bill")
        assert step is not None
        assert step.status == "failed"
        message = step.error["message"]
        assert "date" in message  # the template's own words stay
        assert "***" in message
        assert "Wilhelmina" not in message
        assert "Quackenbush" not in message
