"""Fixtures of the console tests: a state store seeded with runs worth looking at.

``seeded`` holds, for the practice ``anz-test``:

* a run of ``onboard`` whose ``client`` step succeeded, journaled *unmasked* on purpose (the
  client secret in a header and in the body, personal values in input, request and output)
  and whose ``lead`` step is in doubt, the run held with what the read-back looked at;
* a succeeded run of ``other`` from two days ago;
* a webhook subscription (with its secret) and a few requests in the budget bookkeeping.

The console must show all of it without the secrets or the personal values.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from practiceflow.console import ConsoleContext, create_app
from practiceflow.console.security import Guard
from practiceflow.state import SQLiteStore, StateStore, open_store

PRACTICE = "anz-test"
CLIENT_SECRET = "cs_live_7Qm2ZkT9vW4xY8pL"
WEBHOOK_SECRET = "whsec_R5tU1nB3cD6eF0gH"
#: Personal values (``x-pii`` fields of create_client / create_lead).
PERSONAL = ("Zelda Quackenbush", "zelda.q@private.example", "0499 123 456")


@dataclass
class Seeded:
    """What the seeded store holds."""

    store: StateStore
    held_run: str
    old_run: str


class _Clock:
    """A settable clock, so that one run can be two days old."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


def _seed(store: StateStore, clock: _Clock) -> Seeded:
    name, email, mobile = PERSONAL
    origin = {
        "event_key": "client.created",
        "event_id": "evt-1",
        "source": "new_client",
        "via": "webhook",
        "payload": {"entityKey": "ent-1", "entityName": name},
    }
    run_id, _ = store.start_run(PRACTICE, "onboard", "evt-1", origin=origin)
    store.set_run_status(run_id, "running")
    request = {
        "use": "create_client",
        "input": {
            "entityType": "Individual",
            "entityName": name,
            "email": email,
            "mobile": mobile,
        },
        "request": {
            "method": "POST",
            "path": "/api/v1/entities",
            "headers": {"Authorization": f"Bearer {CLIENT_SECRET}", "X-Trace": "t1"},
            "json": {
                "entityName": name,
                "email": email,
                "note": f"called by {name} on {mobile}",
                "client_secret": CLIENT_SECRET,
                "debug": f"used secret {CLIENT_SECRET}",
            },
        },
    }
    store.step_pending(run_id, "client", request)
    store.step_sent(run_id, "client")
    store.step_succeeded(
        run_id, "client", {"entityKey": "ent-9", "entityName": name, "email": email}
    )
    lead = {
        "use": "create_lead",
        "input": {"entityType": "Individual", "entityName": name, "email": email},
        "request": {"method": "POST", "path": "/api/v1/leads", "json": {"name": name}},
    }
    store.step_pending(run_id, "lead", lead)
    store.step_sent(run_id, "lead")
    store.step_in_doubt(
        run_id, "lead", {"type": "InDoubtError", "message": f"POST /api/v1/leads for {name}"}
    )
    reason = "'create_lead' has no read-back in the API; a person must check and resolve"
    store.set_run_status(run_id, "in_doubt", {"step": "lead", "reason": reason})

    clock.offset = -timedelta(days=2)  # the date filter must tell the runs apart
    old, _ = store.start_run(PRACTICE, "other", "evt-0")
    store.step_pending(old, "noop", {"use": "write_jsonl"})
    store.step_sent(old, "noop")
    store.step_succeeded(old, "noop", {"written": 1})
    store.set_run_status(old, "succeeded")
    clock.offset = timedelta()

    store.save_subscription(
        PRACTICE,
        "new_client",
        "sub-1",
        "client.created",
        "http://127.0.0.1:9/hooks/tok",
        WEBHOOK_SECRET,
        "tok-abcdef",
        "active",
    )
    now = store.now()
    for minutes in (1, 2, 2, 3, 70, 200):
        store.record_request(PRACTICE, now - timedelta(minutes=minutes))
    return Seeded(store, run_id, old)


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Seeded]:
    """A SQLite store holding the runs described in the module docstring."""
    clock = _Clock()
    with open_store(str(tmp_path / "state.db"), clock=clock) as store:
        assert isinstance(store, SQLiteStore)
        yield _seed(store, clock)


@pytest.fixture
def ctx(seeded: Seeded) -> ConsoleContext:
    """A console context over the seeded store, knowing the client secret."""
    return ConsoleContext(seeded.store, PRACTICE, secrets=[CLIENT_SECRET], who="tester")


@pytest.fixture
def guard() -> Guard:
    """The console's guard (its CSRF key), open: loopback, no token."""
    return Guard()


@pytest.fixture
def web(ctx: ConsoleContext, guard: Guard) -> Iterator[TestClient]:
    """The console app, open (loopback, no token)."""
    with TestClient(create_app(ctx, guard), base_url="http://127.0.0.1") as client:
        yield client
