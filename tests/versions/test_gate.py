"""``practiceflow recipes check``: every run in flight replayed against a new version,
each said to move, stay on its own version, or need a person; ``--migrate`` moves those
that can, and a moved run sends nothing it sent before."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.api import Client
from practiceflow.cli.versions import check
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, validate_recipe
from practiceflow.state import StateStore, open_store
from practiceflow.testing import SandboxHandle
from practiceflow.versions import check_runs, in_flight, recipe_version
from versions._support import EDITS, make_folder, written

pytestmark = pytest.mark.integration


def _in_flight(
    store: StateStore, client: Client, recipe: Path, modules: Path, stops: dict[str, str]
) -> dict[str, str]:
    """Start one run per ref and stop it gracefully after the step named; ref -> run id."""
    served = validate_recipe(recipe, registry=load_modules([modules]))
    ids = {}
    for ref, after in stops.items():
        store.record_event("anz", "test_event", "test.event", ref, {"ref": ref})
        stop = threading.Event()

        def point(label: str, after: str = after, stop: threading.Event = stop) -> None:
            if label == f"done:{after}":
                stop.set()

        runner = Runner(served, store, client, practice="anz", stop=stop, on_point=point)
        event = store.get_event("anz", "test_event", ref)
        assert event is not None
        outcome = runner.run_event(event)
        assert outcome is not None
        assert outcome.status == "running", outcome
        ids[ref] = outcome.run_id
    return ids


#: Edit -> what the gate says of a run stopped after ``client`` and one after ``look``.
DECISIONS = {
    "with": ("can move", "can move"),
    "rename": ("can move", "can move"),  # bill renamed: neither run took it yet
    "insert": ("stays", "stays"),
    "remove": ("can move", "can move"),
    "reorder": ("can move", "stays"),  # look moved after bill: only b took it
    "mapping": ("can move", "can move"),  # the bill's mapping: neither run billed yet
}


@pytest.mark.parametrize("edit", sorted(DECISIONS))
def test_the_gate_says_for_each_run_whether_it_can_move(
    fast_sandbox: SandboxHandle, client: Client, tmp_path: Path, edit: str
) -> None:
    recipe, modules = make_folder(tmp_path)
    with open_store(str(tmp_path / "state.db")) as store:
        ids = _in_flight(store, client, recipe, modules, {"a": "client", "b": "look"})
        EDITS[edit](recipe, modules)
        new = validate_recipe(recipe, registry=load_modules([modules]))
        version = recipe_version(new)
        assert version is not None
        found = {
            c.run.run_id: c
            for c in check_runs(store, in_flight(store, new.name), new, version.digest)
        }
        assert (found[ids["a"]].decision, found[ids["b"]].decision) == DECISIONS[edit], [
            (c.decision, c.step, c.reason) for c in found.values()
        ]


def test_migrate_moves_the_runs_that_can_and_a_moved_run_bills_at_the_new_fee_once(
    fast_sandbox: SandboxHandle, client: Client, tmp_path: Path
) -> None:
    recipe, modules = make_folder(tmp_path)
    state = tmp_path / "state.db"
    with open_store(str(state)) as store:
        ids = _in_flight(store, client, recipe, modules, {"move": "client", "stay": "look"})
    # The new version: a new fee, and 'convert' renamed (the run past it cannot move).
    text = recipe.read_text(encoding="utf-8").replace("fee: 100", "fee: 250")
    text = text.replace("- id: convert", "- id: promote").replace(
        "steps.convert.", "steps.promote."
    )
    recipe.write_text(text, encoding="utf-8")
    before = len(fast_sandbox.admin("GET", "/_admin/requests"))
    args = [str(recipe), "--modules", str(modules), "--state", str(state), "--json"]

    checked = CliRunner().invoke(check, args)
    assert checked.exit_code == 0, checked.output
    runs = json.loads(checked.output)["runs"]
    decisions = {row["run"]: (row["decision"], row["step"]) for row in runs}
    assert decisions == {ids["move"]: ("can move", None), ids["stay"]: ("stays", "convert")}

    migrated = CliRunner().invoke(check, [*args, "--migrate"])
    assert migrated.exit_code == 0, migrated.output
    assert json.loads(migrated.output)["moved"] == [ids["move"]], migrated.output
    assert len(fast_sandbox.admin("GET", "/_admin/requests")) == before  # the gate sends nothing

    served = validate_recipe(recipe, registry=load_modules([modules]))
    with open_store(str(state)) as store:
        outcomes = Runner(served, store, client, practice="anz").process_pending()
        assert {outcome.status for outcome in outcomes} == {"succeeded"}
        moved, stayed = store.get_run(ids["move"]), store.get_run(ids["stay"])
        assert moved is not None
        assert stayed is not None
        assert moved.version == served_version(served)
        assert [s.step_id for s in store.get_steps(ids["move"])] == [
            "client",
            "promote",
            "look",
            "bill",
        ]
        assert [s.step_id for s in store.get_steps(ids["stay"])] == [
            "client",
            "convert",
            "look",
            "bill",
        ]
    expected = {"client": 1, "convert": 1, "bill": 1, "first bill": 1, "inserted": 0}
    assert written(fast_sandbox, "move") == {**expected, "fees": [250.0]}
    assert written(fast_sandbox, "stay") == {**expected, "fees": [100.0]}


def served_version(recipe: object) -> str | None:
    version = recipe_version(recipe)  # type: ignore[arg-type]
    return None if version is None else version.digest
