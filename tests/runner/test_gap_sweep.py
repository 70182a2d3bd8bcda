"""A gap closes by evidence (issue 36): after a downtime, a trigger whose window a sweep of
its lists can read back (``proposal_accepted`` without ``entityKey``: every client's
proposals) is swept at start. A restart with nothing missed leaves nothing for a person;
an event fired while ``serve`` was down whose delivery the sender gave up on is recovered
by the sweep and runs once; the gap is closed with its evidence. Real subprocesses
against the sandbox, whose sender gives up retrying within a fraction of a second."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.state import StateStore
from practiceflow.testing import SandboxHandle
from runner._serving import Serve, api_client, in_store, new_proposal, serving, wait_for
from runner._support import FAST

pytestmark = pytest.mark.integration

#: proposal_accepted without entityKey: received by webhook only, swept after a downtime.
ANY_ACCEPTED = """\
name: accepted
trigger:
  use: proposal_accepted
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""


@pytest.fixture
def small_sandbox(fast_sandbox: SandboxHandle) -> SandboxHandle:
    """The fast sandbox with 20 clients: a sweep reads each one's proposals within serve's
    own rate budget (60 a minute), so 300 would take minutes."""
    fast_sandbox.admin("POST", "/_admin/reset", {"entities": 20})
    fast_sandbox.admin("POST", "/_admin/config", {"rateLimits": FAST})
    return fast_sandbox


def _entity(sandbox: SandboxHandle) -> str:
    rows = sandbox.admin("GET", "/_admin/records/entities")
    return next(row["entityKey"] for row in rows if row["status"] == "Active")


def _runs(serve: Serve) -> dict[str, str]:
    """event id -> status of the recipe's runs."""

    def read(store: StateStore) -> dict[str, str]:
        return {run.event_id: run.status for run in store.list_runs(limit=1000)}

    return in_store(serve.state, read)  # type: ignore[no-any-return]


def _gaps(serve: Serve) -> list[Any]:
    def read(store: StateStore) -> list[Any]:
        return store.list_attention(kind="gap")

    return in_store(serve.state, read)  # type: ignore[no-any-return]


def _subscribed(serve: Serve, practice: str) -> bool:
    def read(store: StateStore) -> bool:
        row = store.get_subscription(practice, "proposal_accepted")
        return row is not None and row.status == "active"

    return bool(in_store(serve.state, read))


def _swept(serve: Serve) -> list[Any]:
    """The gap entries, once none is left to check."""
    gaps = _gaps(serve)
    return gaps if gaps and all(entry.status != "checking" for entry in gaps) else []


def _needing_a_person(serve: Serve) -> list[dict[str, Any]]:
    listed = CliRunner(env=serve.env).invoke(cli, ["attention", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows: list[dict[str, Any]] = json.loads(listed.stdout)
    return rows


def _start(serve: Serve, practice: str) -> None:
    serve.start()
    wait_for("serve to subscribe", lambda: _subscribed(serve, practice) or not serve.alive())
    assert serve.alive(), serve.errors()


def test_a_restart_with_nothing_missed_leaves_nothing_for_a_person(
    small_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    practice, _ = small_sandbox.credentials("anz", "rw")
    recipe = tmp_path / "accepted.yaml"
    recipe.write_text(ANY_ACCEPTED, encoding="utf-8")
    with api_client(small_sandbox) as client, serving(small_sandbox, tmp_path, [recipe]) as serve:
        proposal = new_proposal(client, _entity(small_sandbox))
        _start(serve, practice)
        small_sandbox.admin("POST", f"/_admin/proposals/{proposal}/accept")  # by webhook
        event = f"proposal:{proposal}"
        wait_for("the delivered event's run", lambda: _runs(serve).get(event) == "succeeded")
        assert serve.stop() == 0, serve.errors()

        _start(serve, practice)
        (gap,) = wait_for("the sweep to settle the gap", lambda: _swept(serve))
        assert _needing_a_person(serve) == []
        assert serve.stop() == 0, serve.errors()

    assert (gap.status, gap.settled_by) == ("closed", "sweep")
    evidence = gap.evidence
    assert evidence["recovered"] == []
    assert evidence["found"] >= 1  # the acceptance delivered just before the stop
    assert evidence["found"] == evidence["received"]
    assert evidence["lists"] == [
        "GET /api/v1/entities/list (every page)",
        "GET /api/v1/proposals/list for each entityKey",
    ]
    assert evidence["clients"] >= 1
    assert "none missing" in str(gap.note)
    assert _runs(serve) == {f"proposal:{proposal}": "succeeded"}
    said = serve.errors()
    assert f"accepted event proposal:{proposal}: succeeded" in said
    assert "reusing subscription" in said  # the second start kept the first one's
    assert said.count("subscribed proposal.accepted") == 1
    assert "caught up 0 event(s) after a downtime of" in said
    assert "gap of proposal_accepted closed by evidence" in said
    assert said.count("serve: stopped; subscriptions kept") == 2
    assert "Traceback" not in said


def test_an_event_the_sender_gave_up_on_is_recovered_by_the_sweep_and_runs_once(
    small_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    practice, _ = small_sandbox.credentials("anz", "rw")
    recipe = tmp_path / "accepted.yaml"
    recipe.write_text(ANY_ACCEPTED, encoding="utf-8")
    with api_client(small_sandbox) as client, serving(small_sandbox, tmp_path, [recipe]) as serve:
        proposal = new_proposal(client, _entity(small_sandbox))
        _start(serve, practice)
        assert serve.stop() == 0, serve.errors()
        small_sandbox.admin("POST", f"/_admin/proposals/{proposal}/accept")  # while down
        wait_for(
            "the sender to give the delivery up",
            lambda: any(
                row["event"] == "proposal.accepted" and not row["ok"] and not row["willRetry"]
                for row in small_sandbox.admin("GET", "/_admin/deliveries")
            ),
        )

        _start(serve, practice)
        event = f"proposal:{proposal}"
        wait_for("the recovered event's run", lambda: _runs(serve).get(event) == "succeeded")
        (gap,) = wait_for("the sweep to settle the gap", lambda: _swept(serve))
        assert _needing_a_person(serve) == []
        assert serve.stop() == 0, serve.errors()

    assert (gap.status, gap.settled_by) == ("closed", "sweep")
    assert gap.evidence["recovered"] == [event]
    assert gap.evidence["found"] == 1
    assert "1 recovered and run" in str(gap.note)
    assert _runs(serve) == {event: "succeeded"}  # once

    def origin(store: StateStore) -> Any:
        (run,) = store.list_runs()
        return run.origin

    assert in_store(serve.state, origin)["via"] == "poll"
    # The ledger agrees with the sandbox's own records: one acceptance, never delivered.
    audit = CliRunner(env=serve.env).invoke(cli, ["audit", "completeness", "--json"])
    assert audit.exit_code == 0, audit.output
    (row,) = json.loads(audit.stdout)["triggers"]
    counted = (row["seen"], row["received"], row["recovered"], row["ran"], row["missing"])
    assert counted == (1, 0, 1, 1, 0)
    deliveries = [row for row in small_sandbox.admin("GET", "/_admin/deliveries") if row["ok"]]
    assert deliveries == []  # what ran came from the sweep, not the sender
    assert "sweep of proposal_accepted recovered" not in serve.errors()  # INFO, not shown
    assert "1 recovered by the sweep" in serve.errors()
