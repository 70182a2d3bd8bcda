"""The headline promise of versions: runs killed mid-way (``kill -9``), then their recipe
edited (every kind of edit), finish on the version they started with: no write is sent
twice, none of the new version's steps runs in them, and none is dropped.

Each case kills two runs (each in its own state, through ``tests/kill_at.py``) at two of
:data:`POINTS`, every point taken by four edits, applies one edit, then resumes as a
restarted ``serve`` does, with the edited files; the sandbox's own records count the
writes.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from practiceflow.api import Client
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, validate_recipe
from practiceflow.runner.service import Service
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from runner._support import KILL_AT, cli_env
from versions._support import EDITS, OTHER, make_folder, written

pytestmark = pytest.mark.integration

#: Where each run is killed: after a write, before one left, after the API acted on one
#: (unjournaled), after a read.
POINTS = ("done:client", "sent:convert", "done:look", "answered:bill")
STEPS = ["client", "convert", "look", "bill"]


def _kill(state: Path, env: dict[str, str], point: str, recipe: Path, modules: Path) -> None:
    command = [*KILL_AT, point, "run", str(recipe), "--once"]
    command += ["--state", str(state), "--modules", str(modules)]
    done = subprocess.run(  # noqa: S603 - our own CLI
        command, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


#: Each edit with the two points its runs are killed at.
CASES = [(edit, (POINTS[n % 4], POINTS[(n + 1) % 4])) for n, edit in enumerate(sorted(EDITS))]


@pytest.mark.parametrize(("edit", "points"), CASES, ids=[edit for edit, _ in CASES])
def test_runs_killed_then_recipe_edited_finish_on_their_own_version(
    fast_sandbox: SandboxHandle,
    client: Client,
    tmp_path: Path,
    edit: str,
    points: tuple[str, str],
) -> None:
    recipe, modules = make_folder(tmp_path)
    env = cli_env(fast_sandbox)
    practice = env["PRACTICEFLOW_CLIENT_ID"]
    states: dict[str, Path] = {}
    for point in points:
        ref = f"{edit}-{point.replace(':', '-')}"
        states[ref] = tmp_path / f"{ref}.db"
        with open_store(str(states[ref])) as store:
            store.record_event(practice, "test_event", "test.event", ref, {"ref": ref})
        _kill(states[ref], env, point, recipe, modules)

    EDITS[edit](recipe, modules)

    for ref, state in states.items():
        with open_store(str(state)) as store:
            (started,) = store.list_runs()
            assert started.version is not None
            registry = load_modules([modules])
            if recipe.exists():  # serve started again with the edited recipe
                served = validate_recipe(recipe, registry=registry)
                runner = Runner(served, store, client, practice=practice)
                assert runner.version != started.version
                (outcome,) = runner.process_pending()
            else:  # the recipe is gone: serve runs something else, its runs still finish
                other = tmp_path / "other.yaml"
                other.write_text(OTHER, encoding="utf-8")
                served = validate_recipe(other, registry=registry)
                service = Service([Runner(served, store, client, practice=practice)], store)
                outcomes: list[object] = []
                service.on_outcome = outcomes.append
                service.run_once()
                (outcome,) = outcomes
            assert outcome.status == "succeeded", (ref, outcome)  # type: ignore[attr-defined]
            (run,) = store.list_runs()
            assert (run.status, run.version) == ("succeeded", started.version)
            assert [step.step_id for step in store.get_steps(run.run_id)] == STEPS
            assert not store.pending_events(practice)  # no event left behind
        assert written(fast_sandbox, ref) == {
            "client": 1,
            "convert": 1,
            "bill": 1,
            "first bill": 1,
            "fees": [100.0],
            "inserted": 0,
        }, ref
