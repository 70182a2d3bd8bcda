"""One driver per run, whatever the processes (issue 35): ``run --once`` and ``runs retry``
beside a running ``serve`` on the same SQLite store, while ``POST /bills`` answers slowly
(the sandbox holds each one back before performing it), never send a write twice.

Before the run lease, ``run --once`` found the bill ``serve`` had in flight journaled
``sent``, took it for a crash, read back before the POST landed, found nothing and sent
it again. Counts come from the sandbox's own records.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from reliability._support import (
    FULL,
    Serve,
    cli_env,
    create_clients,
    free_port,
    practiceflow,
    wait_until,
    writes_by_entity,
)

#: Events per test: the issue's 100 in the full run, fewer in ``make test``.
EVENTS = 100 if FULL else 8
#: Seconds each ``POST /bills`` is held back before the sandbox performs it.
SLOW = 1.5

# The full run's bills alone take EVENTS * SLOW seconds, one after the other.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800 if FULL else 300)]

BILL_ONLY = """\
name: bill once
trigger:
  use: any_webhook_event
  mode: webhook
  with: {event: client.created}
steps:
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ (trigger.body.data | default(trigger.body)).entityKey }}"
      billDetails: "two drivers {{ (trigger.body.data | default(trigger.body)).entityName }}"
      lineItems:
        - {amount: 100, taxPercent: 10, narration: Onboarding fee}
"""


def _in_flight(state: Path) -> list[str]:
    """Runs with a write journaled ``sent``: its answer is still to come."""
    with open_store(str(state)) as store:
        runs = store.list_runs(status="running", limit=1000)
        return [
            r.run_id for r in runs if any(s.status == "sent" for s in store.get_steps(r.run_id))
        ]


def _settled(sandbox: SandboxHandle, keys: set[str], state: Path) -> bool:
    """Every client billed, every run ended and no event waiting."""
    bills, _ = writes_by_entity(sandbox, keys)
    practice, _ = sandbox.credentials("anz", "rw")
    with open_store(str(state)) as store:
        runs = [r for r in store.list_runs(limit=1000) if not r.recipe.startswith("gap: ")]
        waiting = store.pending_events(practice)
    ended = [run for run in runs if run.status in ("succeeded", "in_doubt", "failed")]
    return set(bills) == keys and len(ended) == len(keys) and not waiting


def test_run_once_and_runs_retry_beside_serve_never_send_a_write_twice(
    rsandbox: SandboxHandle, tmp_path: Path
) -> None:
    recipe = tmp_path / "bill.yaml"
    recipe.write_text(BILL_ONLY, encoding="utf-8")
    state = tmp_path / "state.db"
    env = cli_env(
        rsandbox, PRACTICEFLOW_PUBLIC_URL="local", PRACTICEFLOW_LISTEN=f"127.0.0.1:{free_port()}"
    )
    serve = Serve(recipe, state, env, tmp_path).start()
    side_codes: list[int] = []
    side_output: list[str] = []

    def side(*args: str) -> None:
        done = subprocess.run(  # noqa: S603 - our own CLI
            practiceflow(*args, "--state", str(state)),
            env=env,
            capture_output=True,
            text=True,
            timeout=1500 if FULL else 300,  # run --once drives what serve has not reached
            check=False,
        )
        side_codes.append(done.returncode)
        side_output.append(done.stderr)

    try:
        wait_until(lambda: rsandbox.admin("GET", "/_admin/records/subscriptions"), 90, "subscribe")
        rsandbox.admin(
            "POST",
            "/_admin/faults",
            {"kind": "slow", "method": "POST", "pathPrefix": "/api/v1/bills", "count": 100_000,
             "delay": SLOW},
        )  # fmt: skip
        keys = set(create_clients(rsandbox, EVENTS, "Two drivers"))
        rounds = 0
        while not _settled(rsandbox, keys, state):
            # While serve drives a run: another process runs the store's events, and a
            # person retries a run that is in flight.
            helpers = [threading.Thread(target=side, args=("run", str(recipe), "--once"))]
            helpers += [
                threading.Thread(target=side, args=("runs", "retry", run_id))
                for run_id in _in_flight(state)[:1]
            ]
            for helper in helpers:
                helper.start()
            for helper in helpers:
                helper.join()
            rounds += 1
            assert rounds < 200, "the runs never settled"
        wait_until(lambda: _settled(rsandbox, keys, state), 60, "every run's end")
    finally:
        assert serve.stop() == 0, serve.output()
    bills, _ = writes_by_entity(rsandbox, keys)
    duplicated = {key: count for key, count in bills.items() if count > 1}
    assert not duplicated, f"{len(duplicated)} of {len(keys)} billed more than once"
    assert set(bills) == keys
    # runs retry of a run in flight says who drives it (exit 4, transient), never 70.
    assert set(side_codes) <= {0, 4}, side_output
    assert not any("Traceback" in text for text in side_output), side_output
    assert "Traceback" not in serve.output()
