"""``serve`` is event-driven: the receiver wakes the runner when it stores an event, so a
run starts without waiting for the loop's idle look at the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.testing import SandboxHandle
from reliability._support import (
    TWO_STEP_RECIPE,
    InProcessService,
    create_clients,
    wait_until,
)

pytestmark = pytest.mark.integration

#: Far longer than the waits below: only a wake-up can start the runs in time.
IDLE = 600.0


def test_an_event_the_receiver_stores_wakes_the_runner(
    rsandbox: SandboxHandle, tmp_path: Path
) -> None:
    recipe = tmp_path / "two_writes.yaml"
    recipe.write_text(TWO_STEP_RECIPE, encoding="utf-8")
    serve = InProcessService(rsandbox, recipe, tmp_path / "state.db", idle=IDLE).start()
    try:
        wait_until(lambda: rsandbox.admin("GET", "/_admin/records/subscriptions"), 90, "subscribe")
        # The loop has looked at the store once at start-up, found nothing, and sleeps.
        (key,) = create_clients(rsandbox, 1, "Wake")
        bills = lambda: [  # noqa: E731
            row for row in rsandbox.admin("GET", "/_admin/records/bills") if row["entityKey"] == key
        ]
        wait_until(bills, 120, "the run woken by the stored event")
        runs = lambda: serve.store.list_runs(status="succeeded")  # noqa: E731
        wait_until(runs, 120, "the run to end")
    finally:
        serve.stop()
    assert len(bills()) == 1
