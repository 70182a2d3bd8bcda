"""The clock moved backwards, through the sandbox's admin surface (``/_admin/clock``).

* Webhooks: the delivery timestamps move back with the sandbox clock. Within the replay
  window (what deduplication remembers, 7 days less the 300 s tolerance) every delivery is
  still verified and run once: a retry that kept its first timestamp and arrives hours
  later is not lost. Beyond it, deliveries are refused (401, "stale") and nothing is
  stored or run: no record could tell such a delivery from a replay.
* Polling: the cursor is the API's own ``lastUpdated``; when the API's clock goes back,
  the cursor is "in the future" for it and the API refuses it (400). The poller then steps
  back from the cursor until the API accepts the time and reads on from there, so a client
  created while the clock was back (stamped before the cursor) fires, exactly once.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import pytest

from practiceflow.api import Client, RateLimits
from practiceflow.errors import ValidationError
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from practiceflow.triggers import Poller, load_definition
from reliability._support import (
    TWO_STEP_RECIPE,
    InProcessService,
    create_clients,
    wait_until,
    writes_by_entity,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("back", [120, 3600])
def test_sandbox_clock_back_within_the_replay_window_runs_each_event_once(
    rsandbox: SandboxHandle, tmp_path: Path, back: int
):
    recipe = tmp_path / "two_writes.yaml"
    recipe.write_text(TWO_STEP_RECIPE, encoding="utf-8")
    serve = InProcessService(rsandbox, recipe, tmp_path / "state.db").start()
    try:
        wait_until(lambda: rsandbox.admin("GET", "/_admin/records/subscriptions"), 90, "subscribe")
        keys = set(create_clients(rsandbox, 3, "Before"))
        rsandbox.admin("POST", "/_admin/clock", {"advance": -back})
        keys |= set(create_clients(rsandbox, 3, "After"))
        wait_until(lambda: len(writes_by_entity(rsandbox, keys)[1]) == 6, 90, "runs", every=0.2)
    finally:
        serve.stop()
    bills, contacts = writes_by_entity(rsandbox, keys)
    assert set(bills.values()) == {1}
    assert set(contacts.values()) == {1}
    assert len(bills) == 6


def test_sandbox_clock_beyond_the_replay_window_refuses_deliveries_and_stores_nothing(
    rsandbox: SandboxHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    recipe = tmp_path / "two_writes.yaml"
    recipe.write_text(TWO_STEP_RECIPE, encoding="utf-8")
    serve = InProcessService(rsandbox, recipe, tmp_path / "state.db").start()
    try:
        wait_until(lambda: rsandbox.admin("GET", "/_admin/records/subscriptions"), 90, "subscribe")
        rsandbox.admin("POST", "/_admin/clock", {"advance": -8 * 86400})
        with caplog.at_level(logging.WARNING):
            keys = set(create_clients(rsandbox, 2, "Stale"))
            refused = wait_until(
                lambda: [r for r in rsandbox.state.dispatcher.log() if r["status"] == 401],
                10,
                "refused deliveries",
            )
        assert not serve.store.pending_events(serve.practice, 10)
        assert not serve.store.list_runs()
    finally:
        serve.stop()
    assert refused
    assert writes_by_entity(rsandbox, keys) == writes_by_entity(rsandbox, set())
    assert any("refused" in record.getMessage() for record in caplog.records)


def test_polling_survives_the_api_clock_moving_back(rsandbox: SandboxHandle, tmp_path: Path):
    client_id, secret = rsandbox.credentials("anz", "rw")
    limits = RateLimits(per_minute=100_000, per_hour=1_000_000, per_day=10_000_000)
    with (
        Client(client_id, secret, base_url=rsandbox.base_url("anz"), limits=limits) as client,
        open_store(str(tmp_path / "state.db")) as store,
    ):
        poller = Poller(client, store, "p", load_definition("new_client"), {})
        assert poller.poll_once().baseline
        create_clients(rsandbox, 1, "Ahead")
        assert len(poller.poll_once().events) == 1
        rsandbox.admin("POST", "/_admin/clock", {"advance": -3600})
        (behind,) = create_clients(rsandbox, 1, "Behind")
        fired: list[str] = []
        for _ in range(2):
            with contextlib.suppress(ValidationError):
                fired += [event.payload["entityKey"] for event in poller.poll_once().events]
        rsandbox.admin("POST", "/_admin/clock", {"advance": 3600})
        fired += [event.payload["entityKey"] for event in poller.poll_once().events]
        assert fired == [behind]
