"""A run whose version cannot be rebuilt is held for a person with the reason, never
driven on the recipe served now; a person's retry tries again. ``runs list`` shows and
filters the version."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from practiceflow.cli.runs import runs
from practiceflow.errors import ConfigError
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, validate_recipe
from practiceflow.service.needs_person import needs_person
from practiceflow.state import open_store
from versions._support import make_folder


def test_a_run_whose_version_is_not_stored_is_held_with_the_reason(tmp_path: Path) -> None:
    recipe, modules = make_folder(tmp_path)
    served = validate_recipe(recipe, registry=load_modules([modules]))
    with open_store(str(tmp_path / "state.db")) as store:
        store.record_event("anz", "test_event", "test.event", "e1", {"ref": "e1"})
        origin = {"source": "test_event", "payload": {"ref": "e1"}}
        run_id, _ = store.start_run("anz", served.name, "e1", origin=origin, version="0" * 64)
        runner = Runner(served, store, None, practice="anz")

        (outcome,) = runner.process_pending()

        assert outcome.status == "in_doubt"
        assert "recipe version 000000000000 cannot be rebuilt" in outcome.error["reason"]
        assert "it is not in the state store" in outcome.error["reason"]
        run = store.get_run(run_id)
        assert run is not None
        assert needs_person(store, run)
        assert store.get_steps(run_id) == []  # nothing was sent, not even journaled
        assert not store.pending_events("anz")  # held, in sight, not left waiting
        again = runner.resume_run(run_id, retry_failed=True)  # 'runs retry'
        assert again.status == "in_doubt"


def test_runs_list_shows_each_runs_version_and_filters_by_a_prefix(tmp_path: Path) -> None:
    state = str(tmp_path / "state.db")
    with open_store(state) as store:
        old, _ = store.start_run("anz", "r", "e1", version="a1" * 32)
        new, _ = store.start_run("anz", "r", "e2", version="b2" * 32)
    base = ["list", "--state", state]

    shown = CliRunner().invoke(runs, base, terminal_width=200)
    assert "a1a1a1a1a1a1" in shown.output
    assert "b2b2b2b2b2b2" in shown.output

    picked = CliRunner().invoke(runs, [*base, "--version", "b2b2b2b2", "--json"])
    assert [row["run_id"] for row in json.loads(picked.output)] == [new]
    assert old not in picked.output


def test_runs_recipe_prints_the_stored_version_whatever_the_file_says_now(
    tmp_path: Path,
) -> None:
    recipe, modules = make_folder(tmp_path)
    served = validate_recipe(recipe, registry=load_modules([modules]))
    state = str(tmp_path / "state.db")
    with open_store(state) as store:
        store.record_event("anz", "test_event", "test.event", "e1", {"ref": "e1"})
        (outcome,) = Runner(served, store, None, practice="anz").process_pending()
    original = recipe.read_text(encoding="utf-8")
    recipe.write_text(original.replace("fee: 100", "fee: 250"), encoding="utf-8")

    shown = CliRunner().invoke(runs, ["recipe", outcome.run_id, "--state", state])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == original
    module = ["recipe", outcome.run_id, "--module", "create_bill", "--state", state]
    assert "override: true" in CliRunner().invoke(runs, module).stdout
    wrong = CliRunner().invoke(runs, [*module[:3], "nope", "--state", state])
    assert isinstance(wrong.exception, ConfigError)  # exit 2 under the CLI's main
    assert "the version's modules are ['convert_lead', 'create_bill'" in str(wrong.exception)
