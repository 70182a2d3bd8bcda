"""Crash safety: a real ``kill -9`` of the runner at every journal boundary of a three-step
recipe, then a restart; the sandbox's own records prove each write happened exactly once.

The recipe (``recipes/three_writes.yaml``) creates a client as a lead (with an
``externalSystemID``), converts it, and bills it. The runner process SIGKILLs itself when
it reaches the journal point named in ``PRACTICEFLOW_TEST_KILL_AT``:

* ``pending:S``: the request is rendered, nothing of it journaled (its ``pending`` and
  ``sent`` are one commit) nor sent: on restart it is rendered and sent (once);
* ``sent:S``: ``sent`` is committed, the request has not left: on restart the write is in
  doubt, the read-back finds nothing, it is sent (once);
* ``answered:S``: the API acted and answered, the answer is not journaled: on restart the
  read-back finds the record and the step succeeds without a second send;
* ``done:S``: the answer is used; its success waits for the next commit or request (the
  next write's ``sent`` carries it, the next read's flight commits it): on restart it is
  found by reading back, as at ``answered:S``. At ``sent:S`` the step before is journaled
  ``succeeded``, and it is never sent again.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from practiceflow.api import Client
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import RECONCILER, Runner, validate_recipe
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from runner._support import CLI, MODULES, RECIPES, cli_env

pytestmark = pytest.mark.integration

STEPS = ("client", "convert", "bill")
POINTS = [f"{point}:{step}" for step in STEPS for point in ("pending", "sent", "answered", "done")]


def _run(state: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [
        *CLI,
        "run",
        str(RECIPES / "three_writes.yaml"),
        "--once",
        "--state",
        str(state),
        "--modules",
        str(MODULES),
    ]
    return subprocess.run(  # noqa: S603 - our own CLI
        command, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _writes(sandbox: SandboxHandle, ref: str) -> dict[str, int]:
    """Count each write in the sandbox's own records and request log."""
    entities = [
        row
        for row in sandbox.admin("GET", "/_admin/records/entities")
        if (row.get("externalSystemID") or row.get("extra", {}).get("externalSystemID")) == ref
        or row.get("entityName") == f"Crash Test {ref}"
    ]
    keys = {row["entityKey"] for row in entities}
    bills = [
        row for row in sandbox.admin("GET", "/_admin/records/bills") if row["entityKey"] in keys
    ]
    converts = [
        row
        for row in sandbox.admin("GET", "/_admin/requests")
        if row["method"] == "POST"
        and "convert-to-client" in row["path"]
        and any(key in row["path"] for key in keys)
    ]
    return {"client": len(entities), "convert": len(converts), "bill": len(bills)}


@pytest.mark.parametrize("point", POINTS)
def test_kill_9_at_each_boundary_then_restart_writes_exactly_once(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    tmp_path: Path,
    point: str,
):
    state = tmp_path / "state.db"
    env = cli_env(fast_sandbox)
    ref = f"crash-{point.replace(':', '-')}"
    with open_store(str(state)) as store:
        store.record_event(
            env["PRACTICEFLOW_CLIENT_ID"], "test_event", "test.event", ref, {"ref": ref}
        )

    killed = _run(state, {**env, "PRACTICEFLOW_TEST_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    # The restart runs in this process (the library, as `run --once` does), from the journal.
    recipe = validate_recipe(RECIPES / "three_writes.yaml", registry=registry)
    with open_store(str(state)) as store:
        runner = Runner(recipe, store, client, practice=env["PRACTICEFLOW_CLIENT_ID"])
        (outcome,) = runner.process_pending()
        assert outcome.status == "succeeded", outcome

    assert _writes(fast_sandbox, ref) == {"client": 1, "convert": 1, "bill": 1}
    with open_store(str(state)) as store:
        (run,) = store.list_runs()
        assert run.status == "succeeded"
        steps = {step.step_id: step for step in store.get_steps(run.run_id)}
        assert [steps[s].status for s in STEPS] == ["succeeded"] * 3
        kind, step = point.split(":")
        if kind in ("answered", "done"):  # acted, not journaled: found by reading back
            assert steps[step].resolved_by == RECONCILER
            assert "reconciled" in (steps[step].resolution_note or "")
        if kind == "sent":  # never left: read back, found absent, sent once
            assert "safe to retry" in (steps[step].resolution_note or "")
            before = STEPS[: STEPS.index(step)]  # journaled `succeeded` with this `sent`
            assert [steps[s].resolved_by for s in before] == [None] * len(before)
        assert not store.pending_events(env["PRACTICEFLOW_CLIENT_ID"])


@pytest.mark.parametrize(
    ("point", "first_ended"), [("pending:client#2", False), ("sent:client#2", True)]
)
def test_kill_9_while_the_first_runs_end_waits_for_the_next_commit(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    tmp_path: Path,
    point: str,
    first_ended: bool,
):
    # `run --once` drains in a batch: run 1's end (status, event handled, and the success
    # of its last write, the bill) is committed with run 2's first commit, its write's
    # `sent`, before that write leaves.
    state = tmp_path / "state.db"
    env = cli_env(fast_sandbox)
    practice = env["PRACTICEFLOW_CLIENT_ID"]
    refs = [f"carry-{n}-{point.split(':')[0]}" for n in (1, 2)]
    with open_store(str(state)) as store:
        for ref in refs:
            store.record_event(practice, "test_event", "test.event", ref, {"ref": ref})

    killed = _run(state, {**env, "PRACTICEFLOW_TEST_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    with open_store(str(state)) as store:
        runs = {run.event_id: run for run in store.list_runs()}
        pending = [event.event_id for event in store.pending_events(practice)]
        first = runs[refs[0]]
        steps = {step.step_id: step.status for step in store.get_steps(first.run_id)}
        # Each write's success was carried by the next one's `sent`; the last one's waits
        # with the run's end.
        last = "succeeded" if first_ended else "sent"
        assert [steps[s] for s in STEPS] == ["succeeded", "succeeded", last]
        if first_ended:
            assert first.status == "succeeded"
            assert pending == [refs[1]]
            assert runs[refs[1]].status == "pending"  # created with its write's `sent`
        else:
            assert first.status == "pending"  # its end was lost with the process
            assert pending == refs
            assert refs[1] not in runs
    assert _writes(fast_sandbox, refs[0]) == {"client": 1, "convert": 1, "bill": 1}

    recipe = validate_recipe(RECIPES / "three_writes.yaml", registry=registry)
    with open_store(str(state)) as store:
        runner = Runner(recipe, store, client, practice=practice)
        outcomes = runner.process_pending()
        resumed = refs[1:] if first_ended else refs
        assert [(o.event_id, o.status) for o in outcomes] == [(r, "succeeded") for r in resumed]
        assert not store.pending_events(practice)
        assert {run.status for run in store.list_runs()} == {"succeeded"}
        bill = store.get_step(first.run_id, "bill")
        assert bill is not None
        assert bill.resolved_by == (None if first_ended else RECONCILER)  # found, not re-sent
    for ref in refs:
        assert _writes(fast_sandbox, ref) == {"client": 1, "convert": 1, "bill": 1}
