"""Faults of the API, injected through the sandbox's admin surface (``/_admin/faults``),
while the service runs a two-write recipe (bill, then contact) for webhook events.

For each fault: what the user sees (run status, log line, error), and the proof from the
sandbox's own records that no write was lost or made twice.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from practiceflow.testing import SandboxHandle
from reliability._support import (
    TWO_STEP_RECIPE,
    InProcessService,
    create_clients,
    wait_until,
    writes_by_entity,
)

pytestmark = pytest.mark.integration

EVENTS = 3
BILLS = "/api/v1/bills"


def _settled(serve: InProcessService, count: int) -> list[Any]:
    runs = serve.store.list_runs(limit=100)
    done = [run for run in runs if run.status in ("succeeded", "failed", "in_doubt")]
    return done if len(done) >= count else []


def _run_burst(
    sandbox: SandboxHandle, tmp_path: Path, fault: dict[str, Any] | None, *, timeout: float = 5.0
) -> tuple[InProcessService, list[Any], set[str]]:
    recipe = tmp_path / "two_writes.yaml"
    recipe.write_text(TWO_STEP_RECIPE, encoding="utf-8")
    serve = InProcessService(sandbox, recipe, tmp_path / "state.db", timeout=timeout).start()
    try:
        wait_until(
            lambda: sandbox.admin("GET", "/_admin/records/subscriptions"), 20, "subscription"
        )
        if fault is not None:
            sandbox.admin("POST", "/_admin/faults", fault)
        keys = set(create_clients(sandbox, EVENTS, "Fault"))
        runs = wait_until(lambda: _settled(serve, EVENTS), 60, "runs to settle", every=0.1)
    except BaseException:
        serve.stop()
        raise
    return serve, runs, keys


def _bill_posts(sandbox: SandboxHandle) -> list[int]:
    return [
        row["status"]
        for row in sandbox.admin("GET", "/_admin/requests")
        if row["method"] == "POST" and row["path"].endswith(BILLS)
    ]


@pytest.mark.parametrize(
    ("retry_after", "count"),
    [(1, 3), (None, 3)],
    ids=["with-retry-after", "without-retry-after"],
)
def test_429_storm_on_writes_waits_and_writes_each_bill_once(
    rsandbox: SandboxHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture, retry_after, count
):
    fault = {"kind": "429", "count": count, "method": "POST", "pathPrefix": BILLS}
    if retry_after is not None:
        fault["retryAfter"] = retry_after
    started = time.monotonic()
    with caplog.at_level(logging.INFO):
        serve, runs, keys = _run_burst(rsandbox, tmp_path, fault)
    serve.stop()
    # What the user sees: every run succeeded; the waits are in the logs, nothing failed.
    assert {run.status for run in runs} == {"succeeded"}
    assert len(runs) == EVENTS
    # Proof: the 429s were answered, then each bill was created exactly once.
    statuses = _bill_posts(rsandbox)
    assert statuses.count(429) == count
    assert statuses.count(201) == EVENTS
    bills, contacts = writes_by_entity(rsandbox, keys)
    assert set(bills.values()) == {1}
    assert len(bills) == EVENTS
    assert set(contacts.values()) == {1}
    assert len(contacts) == EVENTS
    if retry_after is not None:  # Retry-After was honoured, not hammered through
        assert time.monotonic() - started >= retry_after * count


@pytest.mark.parametrize(
    ("fault", "acted"),
    [
        ({"kind": "500", "count": 1, "method": "POST", "pathPrefix": BILLS}, False),
        ({"kind": "slow", "count": 1, "method": "POST", "pathPrefix": BILLS, "delay": 8.0}, True),
        ({"kind": "drop", "count": 1, "method": "POST", "pathPrefix": BILLS}, True),
    ],
    ids=["500", "slow-past-timeout", "dropped-after-acting"],
)
def test_ambiguous_write_failure_is_never_repeated_blindly(
    rsandbox: SandboxHandle,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    fault: dict[str, Any],
    acted: bool,
):
    with caplog.at_level(logging.INFO):
        # The client's timeout leaves room for a loaded machine; the slow fault exceeds it.
        serve, runs, keys = _run_burst(rsandbox, tmp_path, fault, timeout=3.0)
    try:
        statuses = sorted(run.status for run in runs)
        troubled = [run for run in runs if run.status != "succeeded"]
        # Proof first: never more than one bill per client, whatever happened.
        bills, contacts = writes_by_entity(rsandbox, keys)
        assert all(n == 1 for n in bills.values()), bills
        assert all(n == 1 for n in contacts.values()), contacts
        # Only the one faulted request was ambiguous; the other events ran cleanly.
        assert statuses.count("succeeded") >= EVENTS - 1, statuses
        if troubled:
            # What the user sees: the run is held in doubt with the reason, not failed.
            (held,) = troubled
            assert held.status == "in_doubt", held
            assert "not repeated" in str(held.error) or "in doubt" in str(held.error)
        posts = _bill_posts(rsandbox)
        assert len(bills) == EVENTS  # nothing lost: every client got its bill
        if acted:
            # The server acted and the answer was lost: a read-back found the bill, so
            # it was not sent again (exactly one POST per bill).
            assert len(posts) == EVENTS, posts
        else:
            # The 500 did not act: the read-back found no bill, so it was sent once more.
            assert sorted(posts) == [201] * EVENTS + [500], posts
        assert any("in doubt" in r.getMessage() for r in caplog.records)
    finally:
        serve.stop()
