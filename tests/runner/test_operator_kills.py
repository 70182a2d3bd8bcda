"""Quarantine tells an operator's kill from a run that crashes its process (issue 35).

A run in flight while an operator kills the process three times (``kill -9``: nothing
is recorded by the dying process) used to be quarantined as if it had crashed it. Now a
start that completes a step takes back the run's earlier unended starts
(:mod:`practiceflow.runner.quarantine`), so a run that goes on between kills is never
quarantined; a run that dies at the same step every time still is
(``test_crash_loop.py``, kept as it was).

The kills are real: ``practiceflow run --once`` (and ``serve``, in ``make test-faults``)
started through ``tests/kill_at.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from practiceflow.runner.quarantine import QUARANTINE_AFTER
from practiceflow.state import RunRecord, open_store
from practiceflow.testing import SandboxHandle
from runner._serving import PATIENCE, in_store, serving, wait_for
from runner._support import KILL_AT, MODULES, cli_env, write_recipe
from runner.test_crash_loop import PRACTICEFLOW

pytestmark = pytest.mark.integration

#: The serve variant starts serve four times (tens of seconds): ``make test-faults`` only;
#: the ``run --once`` variant drives the same runner in ``make test``.
FULL = os.environ.get("PRACTICEFLOW_RELIABILITY_FULL") == "1"

STEP = """\
  - id: {id}
    use: write_jsonl
    with:
      path: "{out}"
      record: {{ref: "{{{{ trigger.ref }}}}", step: {id}}}
"""


def _cli(env: dict[str, str], *args: str, kill_at: str | None = None) -> int:
    command = [*KILL_AT, kill_at] if kill_at else PRACTICEFLOW
    done = subprocess.run(  # noqa: S603 - our own CLI
        [*command, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return done.returncode


def test_a_run_in_flight_during_three_kills_that_goes_on_between_them_is_not_quarantined(
    fast_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    state, out = tmp_path / "state.db", tmp_path / "out.jsonl"
    steps = "".join(STEP.format(id=step, out=out) for step in ("a", "b", "c", "d"))
    recipe = write_recipe(tmp_path, steps, name="long")
    env = cli_env(fast_sandbox, PRACTICEFLOW_STATE=str(state))
    practice = env["PRACTICEFLOW_CLIENT_ID"]
    with open_store(str(state)) as store:
        for ref in ("long", "next"):
            store.record_event(practice, "test_event", "test.event", ref, {"ref": ref})
    run = ["run", str(recipe), "--once", "--modules", str(MODULES)]

    # Each kill lands one step further on: the run was in flight each time, and went on.
    for point in ("pending:b", "pending:c", "pending:d"):
        assert _cli(env, *run, kill_at=point) == -signal.SIGKILL
    with open_store(str(state)) as store:
        (long,) = [r for r in store.list_runs(practice=practice) if r.event_id == "long"]
        assert long.status == "running"
        assert long.starts < QUARANTINE_AFTER  # today's rule counted 3: quarantined next

    assert _cli(env, *run) == 0

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(line["ref"], line["step"]) for line in lines] == [
        *(("long", step) for step in "abcd"),
        *(("next", step) for step in "abcd"),
    ]  # every step once: the kills cost nothing twice
    with open_store(str(state)) as store:
        runs = store.list_runs(practice=practice)
        assert {r.status for r in runs} == {"succeeded"}
    listed = subprocess.run(  # noqa: S603 - our own CLI
        [*PRACTICEFLOW, "runs", "list", "--status", "in_doubt", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(listed.stdout) == []


FORM_STEP = """\
  - id: {id}
    use: write_jsonl
    with:
      path: "{out}"
      record: {{form: "{{{{ trigger.formKey | default(None) }}}}", step: {id}}}
"""


def _ended(runs: list[RunRecord]) -> list[RunRecord] | None:
    """The runs once there are three and none is left to resume, else None."""
    if len(runs) == 3 and all(run.status not in ("pending", "running") for run in runs):
        return runs
    return None


@pytest.mark.skipif(not FULL, reason="serve started four times: make test-faults")
def test_three_kill_9s_of_serve_with_runs_in_flight_quarantine_nothing(
    fast_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    steps = "".join(FORM_STEP.format(id=step, out=out) for step in ("a", "b", "c", "d"))
    recipe = tmp_path / "forms.yaml"
    recipe.write_text(f"name: forms\ntrigger:\n  use: eform_submitted\nsteps:\n{steps}")
    forms = ["f-long", "f-next", "f-last"]
    with serving(fast_sandbox, tmp_path, [recipe]) as serve:
        practice = serve.env["PRACTICEFLOW_CLIENT_ID"]
        with open_store(str(serve.state)) as store:  # stored, as the receiver would
            for form in forms:
                store.record_event(practice, "eform_submitted", "eform.submitted", form, {
                    "formKey": form,
                })  # fmt: skip
        command = [*KILL_AT, "", "serve", str(recipe), "--no-console"]
        for point in ("pending:b", "pending:c", "pending:d"):  # the same run, one step on
            command[len(KILL_AT)] = point
            killed = subprocess.run(  # noqa: S603 - our own CLI
                command, env=serve.env, capture_output=True, timeout=PATIENCE, check=False
            )
            assert killed.returncode == -signal.SIGKILL, killed.stderr
        serve.start()
        ended = wait_for(
            "every run to end",
            lambda: in_store(serve.state, lambda s: _ended(s.list_runs(practice=practice))),
        )
        assert [run.status for run in ended] == ["succeeded"] * 3  # none quarantined
        assert serve.stop() == 0, serve.errors()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((line["form"], line["step"]) for line in lines) == sorted(
        (form, step) for form in forms for step in "abcd"
    )  # every step once
