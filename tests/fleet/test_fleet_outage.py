"""No silent gaps in a fleet (issue 24): a time when no replica received webhooks is listed
once, for every practice and every webhook trigger that polling cannot read back; a replica
that starts while another receives lists nothing.

The fleet here is built in this process (its receivers are not started: what is listed
depends on which triggers are received by webhook and which are polled, not on
deliveries); ``test_fleet_outage_workers.py`` starts real workers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _fleet_support import CHANGED, FORMS, secrets_env, write_fleet_file
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.fleet import Fleet, FleetPresence, list_outage, load_fleet, make_app
from practiceflow.fleet.outage import FLEET_KEY, sweep_gaps
from practiceflow.service.heartbeat import last_alive, mark_alive
from practiceflow.service.needs_person import label
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

ENTITY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
END = START + timedelta(minutes=7)
DOWN = "every worker of the fleet was down from 2026-01-05T09:00:00+00:00 to 2026-01-05T09:07:00"
#: No beat between join and leave: the tests move the sign of life themselves.
QUIET = 3600.0
#: Sandbox rate limits far above what the tests send.
FAST = {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}


def accepted(mode: str, entity: str | None = None) -> str:
    """A proposal_accepted recipe in ``mode``, for one client (``entity``) or any."""
    options = f"  with:\n    entityKey: {entity}\n" if entity else ""
    return (
        f"name: fleet accepted\ntrigger:\n  use: proposal_accepted\n  mode: {mode}\n{options}"
        "steps:\n  - id: read\n    use: get_client\n"
        '    with:\n      entityKey: "{{ trigger.entityKey }}"\n'
    )


@contextmanager
def receiving_fleet(
    url: str, folder: Path, sandbox: SandboxHandle, recipes: dict[str, str]
) -> Iterator[Fleet]:
    """The fleet of a replica with a public URL (its webhook triggers bound, not served)."""
    config = load_fleet(write_fleet_file(folder, sandbox, recipes))
    app = make_app(url)
    with PostgresStore(url) as store, app.open():
        fleet = Fleet(
            config,
            store,
            url,
            app,
            environ=secrets_env(sandbox),
            public_url="http://127.0.0.1:9",
        )
        try:
            yield fleet
        finally:
            fleet.close()


def gap_entries(store: PostgresStore, status: str = "open") -> list[tuple[str, str]]:
    """(practice, entry) of every entry that needs attention (or is ``status``), sorted."""
    entries = store.list_attention(statuses=(status,))  # type: ignore[arg-type]
    return sorted((entry.practice, label(entry)) for entry in entries)


def message(store: PostgresStore, entry_id: str) -> str:
    entry = store.get_attention(entry_id)
    assert entry is not None
    return entry.reason


@pytest.mark.parametrize(
    ("recipe", "polled_before", "why", "status"),
    [
        (FORMS, False, "no poll source, so they depend on the sender's retries", "open"),
        # Its module declares a sweep: the same evidence sweep as serve's checks it.
        (accepted("auto"), False, "a sweep of its list endpoints checks the window", "checking"),
        (accepted("webhook", ENTITY), False, "received by webhook only (mode: webhook)", "open"),
        (accepted("both", ENTITY), False, "its polling began after the window", "open"),
        (accepted("both", ENTITY), True, None, ""),  # its next poll reads the window back
        (CHANGED, True, None, ""),  # polled only: its next poll reads the window back
    ],
    ids=["eform", "accepted-any", "accepted-webhook", "both-new", "both-polled", "polled"],
)
def test_an_outage_lists_each_practices_triggers_that_polling_cannot_read_back(
    recipe: str,
    polled_before: bool,
    why: str | None,
    status: str,
    pg_url: str,
    tmp_path: Path,
    sandbox: SandboxHandle,
) -> None:
    with receiving_fleet(pg_url, tmp_path, sandbox, {"r.yaml": recipe}) as fleet:
        (trigger,) = {runner.source for runner in fleet.practices["alpha"].runners}
        if polled_before:
            for name in fleet.practices:
                fleet.store.set_cursor(name, trigger, "2026-01-05T08:59:00")
        listed = list_outage(fleet, START, END)
        if why is None:
            assert listed == []
            return
        assert gap_entries(fleet.store, status) == [
            ("alpha", f"gap: {trigger}"),
            ("beta", f"gap: {trigger}"),
        ]
        for run_id in listed:
            text = message(fleet.store, run_id)
            assert DOWN in text
            assert why in text
        assert list_outage(fleet, START, END) == listed  # the same window: the same entries


def test_a_worker_started_after_an_outage_lists_the_window_and_runs_list_shows_it(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    recipes = {"forms.yaml": FORMS, "changed.yaml": CHANGED}
    with receiving_fleet(pg_url, tmp_path, sandbox, recipes) as fleet:
        mark_alive(fleet.store, FLEET_KEY, START, "fleet")
        presence = FleetPresence(fleet, pg_url, every=QUIET, stale_after=30)
        try:
            listed = presence.join()
        finally:
            presence.leave()
        assert gap_entries(fleet.store) == [
            ("alpha", "gap: eform_submitted"),
            ("beta", "gap: eform_submitted"),
        ]
    result = CliRunner().invoke(
        cli, ["runs", "list", "--status", "in_doubt", "--state", pg_url, "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert sorted(row["run_id"] for row in rows) == sorted(listed)
    for row in rows:
        reason = row["reason"]
        assert "every worker of the fleet was down from 2026-01-05T09:00:00+00:00" in reason
        assert "eform_submitted events in this window may have been missed" in reason


def test_replicas_starting_together_after_an_outage_list_the_window_once(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    with receiving_fleet(pg_url, tmp_path, sandbox, {"forms.yaml": FORMS}) as fleet:
        mark_alive(fleet.store, FLEET_KEY, START, "fleet")
        replicas = [FleetPresence(fleet, pg_url, every=QUIET, stale_after=30) for _ in range(3)]
        together = threading.Barrier(len(replicas))
        found: list[list[str]] = []

        def start(presence: FleetPresence) -> None:
            together.wait()
            found.append(presence.join())

        threads = [threading.Thread(target=start, args=(one,)) for one in replicas]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        for presence in replicas:
            presence.leave()
        assert sorted(len(listed) for listed in found) == [0, 0, 2]
        assert gap_entries(fleet.store) == [
            ("alpha", "gap: eform_submitted"),
            ("beta", "gap: eform_submitted"),
        ]


def test_a_worker_started_while_another_receives_lists_nothing(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    with receiving_fleet(pg_url, tmp_path, sandbox, {"forms.yaml": FORMS}) as fleet:
        mark_alive(fleet.store, FLEET_KEY, START, "fleet")
        first = FleetPresence(fleet, pg_url, every=QUIET, stale_after=30)
        second = FleetPresence(fleet, pg_url, every=QUIET, stale_after=30)
        try:
            assert len(first.join()) == 2  # the outage before it
            assert second.join() == []
        finally:
            second.leave()
            first.leave()
        assert len(gap_entries(fleet.store)) == 2


def test_a_restart_of_the_only_replica_lists_the_time_it_was_down(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    """However short: nothing received in between, and the sender may have given up."""
    with receiving_fleet(pg_url, tmp_path, sandbox, {"forms.yaml": FORMS}) as fleet:
        first = FleetPresence(fleet, pg_url, every=QUIET, stale_after=30)
        assert first.join() == []  # the fleet's first start: nothing before it
        first.leave()
        stopped = last_alive(fleet.store, FLEET_KEY, "fleet")
        assert stopped is not None
        again = FleetPresence(fleet, pg_url, every=QUIET, stale_after=30)
        try:
            listed = again.join()
        finally:
            again.leave()
        assert len(listed) == 2
        for run_id in listed:
            assert f"was down from {stopped.isoformat(timespec='seconds')} to" in message(
                fleet.store, run_id
            )


def test_a_replica_whose_sign_of_life_went_stale_is_not_believed_alive(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    """Its host vanished without closing its connection: the server still holds its
    presence, but its heartbeat stopped."""
    with receiving_fleet(pg_url, tmp_path, sandbox, {"forms.yaml": FORMS}) as fleet:
        vanished = FleetPresence(fleet, pg_url, every=QUIET, stale_after=30)
        vanished.join()
        try:
            mark_alive(fleet.store, FLEET_KEY, START, "fleet")
            newcomer = FleetPresence(fleet, pg_url, every=QUIET, stale_after=30)
            try:
                assert len(newcomer.join()) == 2
            finally:
                newcomer.leave()
        finally:
            vanished.leave()


def test_an_outage_of_a_sweepable_trigger_is_swept_and_closed_by_evidence(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    """The fleet runs serve's evidence sweep: an acceptance fired while every worker was
    down, whose delivery never came, is stored (the fleet's sweep job runs it) and the
    window is closed by the sweep; nothing is left for a person."""
    sandbox.admin("POST", "/_admin/reset", {"entities": 6})
    sandbox.admin("POST", "/_admin/config", {"rateLimits": FAST})
    entity = next(
        row["entityKey"]
        for row in sandbox.admin("GET", "/_admin/records/entities")
        if row["status"] == "Active"
    )
    with receiving_fleet(pg_url, tmp_path, sandbox, {"r.yaml": accepted("auto")}) as fleet:
        client = fleet.practices["alpha"].client
        made = client.post(
            "/api/v1/proposals", json={"entityKey": entity, "services": [{"serviceID": 400}]}
        )
        sandbox.admin("POST", f"/_admin/proposals/{made['proposalKey']}/accept")
        now = fleet.store.now()
        listed = list_outage(fleet, now - timedelta(minutes=2), now + timedelta(minutes=1))
        assert len(listed) == 2
        sweeps = sweep_gaps(fleet)
        for sweep in sweeps:
            assert sweep.wait(timeout=120)
        assert len(sweeps) == 2
        assert gap_entries(fleet.store, "checking") == []
        assert gap_entries(fleet.store) == [], [e.reason for e in fleet.store.list_attention()]
        closed = {entry.practice: entry for entry in fleet.store.list_attention(kind="gap")}
        assert {entry.settled_by for entry in closed.values()} == {"sweep"}
        key = f"proposal:{made['proposalKey']}"
        assert closed["alpha"].evidence["recovered"] == [key]
        assert closed["beta"].evidence["recovered"] == []  # another practice's records
        assert closed["alpha"].evidence["lists"][0] == "GET /api/v1/entities/list (every page)"
        assert fleet.store.seen_event("alpha", "proposal_accepted", key)
        assert fleet.sweep("alpha") == 1  # the fleet's sweep job runs it once
