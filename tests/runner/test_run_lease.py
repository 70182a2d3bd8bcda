"""One driver per run (issue 35): a runner leaves a run another live process holds alone,
takes over one whose holder is known dead, and never journals ``sent`` (nor sends) once
its lease was taken. Against the sandbox; bills counted in its own records."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.api import Client
from practiceflow.cli import cli
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import Runner, run_lease, validate_recipe
from practiceflow.runner.run_lease import LEASE_TTL, keeping, known_dead, lease_for
from practiceflow.state import StateStore
from practiceflow.state.rows import RunLease
from practiceflow.testing import SandboxHandle
from runner._support import MODULES, cli_env, write_recipe

pytestmark = pytest.mark.integration

BILL = """\
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.entityKey }}"
      billDetails: "lease {{ trigger.ref }}"
      lineItems:
        - {amount: 100, taxPercent: 10, narration: Onboarding fee}
"""


def _bills(sandbox: SandboxHandle, ref: str) -> int:
    rows = sandbox.admin("GET", "/_admin/records/bills")
    return sum(row.get("billDetails", "").startswith(f"lease {ref}") for row in rows)


def _setup(
    sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp: Path,
    on_point: Callable[[str], None] | None = None,
) -> tuple[Runner, str, str]:
    """A bill recipe's runner, an event for it, and that event's (started) run."""
    recipe = validate_recipe(write_recipe(tmp, BILL), registry=registry, can_write=True)
    practice = client.settings.client_id
    entity = next(
        row["entityKey"]
        for row in sandbox.admin("GET", "/_admin/records/entities")
        if row["status"] == "Active"
    )
    ref = os.urandom(4).hex()
    store.record_event(practice, "test_event", "x", f"ev-{ref}", {"ref": ref, "entityKey": entity})
    runner = Runner(recipe, store, client, practice=practice, on_point=on_point)
    (event,) = store.pending_events(practice)
    run_id, _ = store.start_run(practice, recipe.name, event.event_id, origin=runner.origin(event))
    return runner, run_id, ref


def _this_process_lease(store: StateStore, run_id: str) -> RunLease:
    """A lease as another driver in this (live) process would hold it."""
    return replace(lease_for(run_id, store.now()), owner="another driver")


def test_a_run_another_live_process_drives_is_left_to_it(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
) -> None:
    runner, run_id, ref = _setup(fast_sandbox, client, registry, store, tmp_path)
    other = _this_process_lease(store, run_id)
    assert store.take_run_lease(other, known_dead) == other

    (outcome,) = runner.process_pending()
    assert outcome.driven_elsewhere == other.describe()
    assert _bills(fast_sandbox, ref) == 0
    assert store.get_steps(run_id) == []
    assert store.pending_events(client.settings.client_id)  # its holder ends it

    store.release_run_lease(run_id, other.owner)
    (outcome,) = runner.process_pending()
    assert (outcome.status, outcome.driven_elsewhere) == ("succeeded", None)
    assert _bills(fast_sandbox, ref) == 1
    assert store.run_lease(run_id) is None  # given back at the end


def test_a_lease_taken_before_the_write_leaves_stops_the_runner_sending(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
) -> None:
    stolen: list[RunLease] = []

    def steal(label: str) -> None:
        if label == "pending:bill":  # admitted, about to be journaled sent
            stolen.append(replace(store.run_lease(run_id), owner="another driver"))  # type: ignore[arg-type]
            store.take_run_lease(stolen[0], lambda lease: True)

    runner, run_id, ref = _setup(fast_sandbox, client, registry, store, tmp_path, steal)
    (outcome,) = runner.process_pending()
    assert outcome.driven_elsewhere == stolen[0].describe()
    assert _bills(fast_sandbox, ref) == 0
    assert [step.status for step in store.get_steps(run_id)] == []


def test_known_dead_needs_positive_evidence(store: StateStore) -> None:
    run_id, _ = store.start_run("p", "r", "e")
    mine = _this_process_lease(store, run_id)
    assert not known_dead(mine)  # this process runs
    assert not known_dead(replace(mine, host="elsewhere"))  # cannot tell: alive
    assert not known_dead(replace(mine, process=""))  # the system did not say: alive
    if not mine.process:
        pytest.skip("no /proc: only expiry tells a holder is gone")
    assert known_dead(replace(mine, process=mine.process.partition("@")[0] + "@1"))  # pid reused
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    assert known_dead(replace(mine, pid=finished.pid))
    assert mine.expires_at - mine.taken_at == LEASE_TTL


def test_a_held_lease_is_renewed_while_the_run_is_driven(
    store: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_lease, "HEARTBEAT", 0.05)
    run_id, _ = store.start_run("p", "r", "e")
    wanted = lease_for(run_id, store.now())
    assert store.take_run_lease(wanted, known_dead) == wanted
    with keeping(store, wanted):
        deadline = time.monotonic() + 60  # generous: only a hang fails
        while store.run_lease(run_id).expires_at == wanted.expires_at:  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.05)
    assert store.run_lease(run_id) is None


def test_runs_retry_of_a_run_another_process_drives_names_it_and_sends_nothing(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
) -> None:
    _, run_id, ref = _setup(fast_sandbox, client, registry, store, tmp_path)
    other = _this_process_lease(store, run_id)
    store.take_run_lease(other, known_dead)
    state = Path(str(store.path))  # type: ignore[attr-defined]
    env = {**cli_env(fast_sandbox), "PRACTICEFLOW_STATE": str(state)}
    args = ["runs", "retry", run_id, "--modules", str(MODULES)]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 4, result.output
    assert f"pid {os.getpid()}" in result.output
    assert "being driven by another process" in result.output
    assert _bills(fast_sandbox, ref) == 0


@pytest.mark.parametrize(
    ("given_back", "reported"),
    [(True, False), (False, True)],
    ids=["given back during the beat: not reported", "taken by another: reported"],
)
def test_a_beat_that_finds_its_lease_gone_reports_it_taken_only_when_it_was(
    store: StateStore, caplog: pytest.LogCaptureFixture, given_back: bool, reported: bool
) -> None:
    run_id, _ = store.start_run("p", "r", "e")
    wanted = lease_for(run_id, store.now())
    store.take_run_lease(wanted, known_dead)
    keeper = run_lease._Keeper(store)
    with keeper.lock:
        keeper.held[wanted.owner] = wanted  # as add() holds it, without a beating thread
    # The beat took its list of leases; then the run ended, or another took the lease.
    if given_back:
        keeper.remove(wanted)
        store.release_run_lease(run_id, wanted.owner)
    else:
        store.take_run_lease(replace(wanted, owner="another", pid=-1), lambda lease: True)
    with caplog.at_level("ERROR", logger="practiceflow.runner"):
        keeper._renew(wanted)
    assert ("its lease was taken by another process" in caplog.text) is reported
    assert wanted.owner not in keeper.held
