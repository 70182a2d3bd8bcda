"""Faults of the process: ``practiceflow serve`` (a subprocess, the receiver inside it)
killed with ``kill -9`` mid-burst and started again, and the runner killed mid-step.

The receiver listens on a fixed port (``PRACTICEFLOW_LISTEN``), as it must behind a public
URL, so the restarted process keeps the same subscription and the sandbox's retries
(0.5, 1, 2, 4 s) reach it. Bursts are small (8 events, 16 writes): the CLI's client keeps
the spec's 60 requests/minute budget.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from practiceflow.state import RunRecord, StateStore, open_store
from practiceflow.testing import SandboxHandle
from reliability._support import (
    TWO_STEP_RECIPE,
    Serve,
    cli_env,
    create_clients,
    free_port,
    wait_until,
    writes_by_entity,
)

pytestmark = pytest.mark.integration

BURST = 8


def _service(sandbox: SandboxHandle, tmp_path: Path, **extra: str) -> Serve:
    recipe = tmp_path / "two_writes.yaml"
    recipe.write_text(TWO_STEP_RECIPE, encoding="utf-8")
    env = cli_env(
        sandbox,
        PRACTICEFLOW_PUBLIC_URL="local",
        PRACTICEFLOW_LISTEN=f"127.0.0.1:{free_port()}",
        **extra,
    )
    return Serve(recipe, tmp_path / "state.db", env, tmp_path)


def _subscriptions(sandbox: SandboxHandle) -> list[dict]:
    return sandbox.admin("GET", "/_admin/records/subscriptions")


def _all_written(sandbox: SandboxHandle, keys: set[str]) -> bool:
    bills, contacts = writes_by_entity(sandbox, keys)
    return len(bills) == len(keys) and len(contacts) == len(keys)


def _runs_of_events(store: StateStore) -> list[RunRecord]:
    """The runs of the recipe (gap entries are in the attention table, issue 33)."""
    return store.list_runs(limit=1000)


def _ended(sandbox: SandboxHandle, keys: set[str], state: Path) -> bool:
    """Every bill written and every run ended (succeeded, or held for a person)."""
    bills, _ = writes_by_entity(sandbox, keys)
    with open_store(str(state)) as store:
        runs = _runs_of_events(store)
    ended = [run for run in runs if run.status in ("succeeded", "in_doubt")]
    return len(bills) == len(keys) and len(ended) == len(keys)


def _check_exactly_once(
    sandbox: SandboxHandle, keys: set[str], state: Path, held: int | None = 0
) -> list[str]:
    """Each write at most once; every run succeeded or (``held`` of them, any number when
    None) held for a person: a contact in doubt cannot be read back."""
    bills, contacts = writes_by_entity(sandbox, keys)
    assert set(bills) == keys, bills
    assert set(bills.values()) == {1}, bills
    assert set(contacts.values()) <= {1}, contacts
    with open_store(str(state)) as store:
        runs = _runs_of_events(store)
    assert len(runs) == len(keys)
    statuses = sorted(run.status for run in runs)
    done = statuses.count("succeeded")
    if held is not None:
        assert statuses == sorted(["succeeded"] * (len(keys) - held) + ["in_doubt"] * held)
    assert set(statuses) <= {"succeeded", "in_doubt"}, statuses
    # A held run's contact may or may not have left: never twice, and the others have one.
    assert done <= len(contacts) <= len(keys), (contacts, statuses)
    return [str(run.error) for run in runs if run.status == "in_doubt"]


def test_serve_killed_mid_burst_and_restarted_loses_and_repeats_nothing(
    rsandbox: SandboxHandle, tmp_path: Path
):
    serve = _service(rsandbox, tmp_path).start()
    try:
        wait_until(lambda: _subscriptions(rsandbox), 90, "serve to subscribe")
        (subscription,) = _subscriptions(rsandbox)
        keys = set(create_clients(rsandbox, BURST // 2, "Kill A"))
        time.sleep(0.3)  # some of the burst is received and running
        assert serve.kill9() == -signal.SIGKILL
        # Deliveries while it is down fail and are retried by the sandbox.
        keys |= set(create_clients(rsandbox, BURST // 2, "Kill B"))
        serve.start()
        state = serve.state
        wait_until(lambda: _ended(rsandbox, keys, state), 60, "every run's end", every=0.3)
        time.sleep(1.0)
    finally:
        assert serve.stop() == 0, serve.output()
    # The restarted process kept the subscription (same URL), made no second one.
    assert _subscriptions(rsandbox) == [] or _subscriptions(rsandbox)[0]["id"] == subscription["id"]
    # The kill may land while a contact is in doubt: that run is held for a person.
    errors = _check_exactly_once(rsandbox, keys, serve.state, held=None)
    assert all("contact" in error for error in errors), errors
    assert "Traceback" not in serve.output()


@pytest.mark.parametrize(
    ("point", "held"), [("sent:bill", 0), ("answered:bill", 0), ("answered:contact", 1)]
)
def test_runner_killed_mid_step_then_restarted_writes_each_once(
    rsandbox: SandboxHandle, tmp_path: Path, point: str, held: int
):
    """``sent``: never left, read back absent, sent once. ``answered:bill``: the API acted,
    the bill is found by reading back, not sent again. ``answered:contact``: contacts
    cannot be read back by the request's fields, so the run is held ``in_doubt`` for a
    person (``practiceflow runs resolve``): the contact exists once, never twice."""
    serve = _service(rsandbox, tmp_path)
    serve.kill_at = point
    serve.start()
    try:
        wait_until(lambda: _subscriptions(rsandbox), 90, "serve to subscribe")
        keys = set(create_clients(rsandbox, 3, "Step"))
        assert serve.proc is not None
        assert serve.proc.wait(timeout=30) == -signal.SIGKILL  # it killed itself at `point`
        serve.kill_at = None
        serve.start()
        wait_until(lambda: _all_written(rsandbox, keys), 60, "every event's writes", every=0.3)
        time.sleep(0.5)
    finally:
        assert serve.stop() == 0, serve.output()
    errors = _check_exactly_once(rsandbox, keys, serve.state, held)
    assert all("contact" in error for error in errors), errors
