"""No crash loop: a run whose every start kills the process (``kill -9``, as the kernel's
OOM killer does) is quarantined by the next process that comes to it, instead of killing
that one too; the events behind it run; a person retries it with ``runs retry``.

The kills are real: ``practiceflow run --once`` is forked as ``tests/kill_at.py`` runs it
(``tests/forked_cli.py``), and SIGKILLed when the run reaches its step, every time.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from forked_cli import run_cli
from practiceflow.runner.quarantine import QUARANTINE_AFTER
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from runner._support import MODULES, cli_env, write_recipe

pytestmark = pytest.mark.integration

#: The console script's entry (its exit codes are the documented ones).
PRACTICEFLOW = [sys.executable, "-m", "practiceflow"]

STEPS = """\
  - id: save
    use: write_jsonl
    with:
      path: "{out}"
      record: {{ref: "{{{{ trigger.ref }}}}"}}
"""


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own CLI
        [*PRACTICEFLOW, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _saved(out: Path) -> list[str]:
    return [json.loads(line)["ref"] for line in out.read_text().splitlines()]


def test_a_run_whose_every_start_is_killed_is_quarantined_and_the_rest_run(
    fast_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    state, out = tmp_path / "state.db", tmp_path / "out.jsonl"
    recipe = write_recipe(tmp_path, STEPS.format(out=out), name="loop")
    env = cli_env(fast_sandbox, PRACTICEFLOW_STATE=str(state))
    practice = env["PRACTICEFLOW_CLIENT_ID"]
    with open_store(str(state)) as store:
        for ref in ("deadly", "later"):
            store.record_event(practice, "test_event", "test.event", ref, {"ref": ref})
    run = ["run", str(recipe), "--once", "--modules", str(MODULES)]

    for _ in range(QUARANTINE_AFTER):
        killed = run_cli(["pending:save", *run], env)  # a process of its own, as kill_at.py
        assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not out.exists()  # each process died as the deadly run reached its step

    after = _cli(env, *run, "--json")

    assert after.returncode == 5, after.stderr  # a run held for a person
    assert _saved(out) == ["later"]
    listed = _cli(env, "runs", "list", "--status", "in_doubt", "--json")
    (row,) = json.loads(listed.stdout)
    assert (row["event_id"], row["needs_attention"]) == ("deadly", True)
    assert row["error"]["kind"] == "quarantined"
    assert "without recording an error" in row["error"]["reason"]

    retried = _cli(env, "runs", "retry", row["run_id"], "--modules", str(MODULES))

    assert retried.returncode == 0, retried.stderr
    assert _saved(out) == ["later", "deadly"]
    with open_store(str(state)) as store:
        assert {run.status for run in store.list_runs()} == {"succeeded"}
        assert store.pending_events(practice) == []
