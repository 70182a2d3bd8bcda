"""Jobs of the fleet, run in this process: per-practice isolation, ordered practices, the
journal deciding over a redelivered job, and ``practiceflow db migrate``."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from _fleet_support import REGIONS, SANDBOX_LIMITS, created_refs, secrets_env, write_fleet

from practiceflow.api import RetryPolicy
from practiceflow.cli.db import migrate_state
from practiceflow.fleet import Fleet, FleetWebhooks, accept_event, load_fleet, make_app
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle
from practiceflow.triggers import TriggerEvent

pytestmark = pytest.mark.integration

#: Generous: a deadline only against a hang, never a measure of speed.
DEADLINE_S = 30.0


@pytest.fixture
def fleet(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle, request: pytest.FixtureRequest
) -> Iterator[Fleet]:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    ordered = bool(getattr(request, "param", False))
    config = load_fleet(write_fleet(tmp_path, sandbox, ordered=ordered))
    app = make_app(pg_url)
    with PostgresStore(pg_url) as store, app.open():
        made = Fleet(config, store, pg_url, app, environ=secrets_env(sandbox))
        try:
            yield made
        finally:
            made.close()


def _accept(fleet: Fleet, practice: str, refs: list[str]) -> None:
    config = fleet.config.practices[practice]
    for ref in refs:
        accept_event(fleet.app, fleet.store, config, "test_event", "test.event", ref, {"ref": ref})


def _drain(fleet: Fleet, concurrency: int = 2) -> None:
    """Work the queue until every event is handled (a worker with ``wait=False`` stops
    as soon as it finds no job it may take, such as all of them behind a lock)."""
    for _ in range(50):
        fleet.app.run_worker(
            concurrency=concurrency,
            wait=False,
            install_signal_handlers=False,
            additional_context=fleet.job_context(),
        )
        if not any(fleet.store.pending_events(name, 1) for name in fleet.practices):
            return
    pytest.fail("events left pending after 50 passes of the worker")


def test_a_practice_runs_only_its_own_events_with_its_own_credentials(
    fleet: Fleet, sandbox: SandboxHandle
) -> None:
    # The same event ids in both practices: two separate events, two separate runs.
    refs = {name: [f"{name}-{n}" for n in range(4)] for name in REGIONS}
    for name, own in refs.items():
        _accept(fleet, name, own)
    _accept(fleet, "alpha", ["shared-id"])
    _accept(fleet, "beta", ["shared-id"])

    _drain(fleet)

    for name, region in REGIONS.items():
        assert sorted(created_refs(sandbox, region)) == sorted([*refs[name], "shared-id"])
        assert len(fleet.store.list_runs(practice=name, status="succeeded")) == 5
    ids = {name: sandbox.credentials(region, "rw")[0] for name, region in REGIONS.items()}
    for row in sandbox.admin("GET", "/_admin/requests"):
        name = {region: name for name, region in REGIONS.items()}[row["region"]]
        assert row["clientId"] == ids[name], row  # never the other practice's credentials
        assert row["status"] != 429


def test_practices_share_one_warm_connection_each_request_with_its_own_credentials(
    fleet: Fleet, sandbox: SandboxHandle
) -> None:
    for _ in range(5):
        for name in REGIONS:  # alternately: each request reuses the other's connection
            fleet.practices[name].client.get("/api/v1/entities", {"pageNumber": 1})

    # Ten requests of two practices, one after the other: one connection opened.
    pools = fleet.connections.pools
    opened = sum(pools[key].num_connections for key in pools.keys())  # noqa: SIM118 -- urllib3 refuses iterating it
    assert opened == 1
    ids = {region: sandbox.credentials(region, "rw")[0] for region in REGIONS.values()}  # type: ignore[arg-type]
    log = sandbox.admin("GET", "/_admin/requests")
    assert [row["region"] for row in log] == list(REGIONS.values()) * 5
    assert all(row["clientId"] == ids[row["region"]] and row["status"] == 200 for row in log)


def test_a_job_cannot_reach_another_practices_event(fleet: Fleet) -> None:
    _accept(fleet, "alpha", ["only-alpha"])
    with pytest.raises(Exception, match="is not stored"):
        fleet.run_event("beta", "test_event", "only-alpha")
    with pytest.raises(Exception, match="valid values are \\['alpha', 'beta'\\]"):
        fleet.run_event("gamma", "test_event", "only-alpha")


@pytest.mark.parametrize("fleet", [True], indirect=True, ids=["ordered"])
def test_an_ordered_practice_runs_its_events_one_at_a_time_in_order(fleet: Fleet) -> None:
    refs = [f"ord-{n:02d}" for n in range(10)]
    _accept(fleet, "alpha", refs)

    _drain(fleet, concurrency=4)

    runs = sorted(fleet.store.list_runs(practice="alpha"), key=lambda run: run.created_at)
    assert [run.event_id for run in runs] == refs
    for earlier, later in itertools.pairwise(runs):
        assert earlier.updated_at <= later.created_at  # the next began after it finished


def test_a_redelivered_job_sends_nothing_twice(fleet: Fleet, sandbox: SandboxHandle) -> None:
    _accept(fleet, "alpha", ["once"])
    _drain(fleet)
    posts = [r for r in sandbox.admin("GET", "/_admin/requests") if r["method"] == "POST"]

    assert fleet.run_event("alpha", "test_event", "once") == "handled"
    assert fleet.sweep("alpha") == 0
    assert created_refs(sandbox, "anz") == ["once"]
    again = [r for r in sandbox.admin("GET", "/_admin/requests") if r["method"] == "POST"]
    assert again == posts


def test_db_migrate_creates_state_and_queue_then_has_nothing_to_do(empty_pg_url: str) -> None:
    pg_url = empty_pg_url
    from click.testing import CliRunner

    from practiceflow.cli import cli

    runner = CliRunner()
    first = runner.invoke(cli, ["db", "migrate", "--json"], env={"PRACTICEFLOW_STATE": pg_url})
    assert first.exit_code == 0, first.output
    assert '"before": 0' in first.output
    assert '"queue": "installed"' in first.output
    again = runner.invoke(cli, ["db", "migrate", "--state", pg_url])
    assert again.exit_code == 0, again.output
    assert "up to date" in again.output
    assert "job queue: present" in again.output


def test_db_migrate_refuses_a_newer_schema_with_exit_code_2(pg_url: str) -> None:
    import psycopg
    from click.testing import CliRunner

    from practiceflow.cli import cli

    with psycopg.connect(pg_url) as raw:
        raw.execute("UPDATE pf_schema_version SET version = version + 1")
    result = CliRunner().invoke(cli, ["db", "migrate", "--state", pg_url])
    assert result.exit_code == 2
    assert "newer than" in result.output


def test_db_migrate_on_sqlite(tmp_path: Path) -> None:
    from practiceflow.state._schema import LATEST_VERSION

    report = migrate_state(str(tmp_path / "s" / "state.db"))
    assert (report["before"], report["after"]) == (0, LATEST_VERSION)
    assert migrate_state(str(tmp_path / "s" / "state.db"))["before"] == LATEST_VERSION


def test_the_sweep_tries_again_a_run_whose_retry_is_due(
    fleet: Fleet, sandbox: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The write is refused by 429s until the client gives up: nothing was made, and the
    # recipe's retry schedules the run again; the fleet's sweep job takes it when due.
    client = fleet.practices["alpha"].client
    monkeypatch.setattr(client, "retry", RetryPolicy(max_attempts=1, max_rate_limited=1))
    fault = {"kind": "rate_limit", "count": 2, "method": "POST", "retryAfter": 0}
    sandbox.admin("POST", "/_admin/faults", fault)
    _accept(fleet, "alpha", ["later"])
    _drain(fleet)
    (run,) = fleet.store.list_runs(practice="alpha")
    scheduled = fleet.store.run_retry(run.run_id)
    assert run.status == "failed"
    assert scheduled is not None
    assert scheduled.next_at is not None
    assert created_refs(sandbox, "anz") == []

    assert fleet.sweep("alpha") == 0  # not due yet: nothing tried
    assert fleet.store.get_run(run.run_id).status == "failed"  # type: ignore[union-attr]
    due = fleet.store.now() - timedelta(seconds=1)  # as if its backoff had passed
    fleet.store.save_run_retry(run.run_id, "alpha", run.recipe, 1, due, scheduled.cause)
    fleet.sweep("alpha")

    assert fleet.store.get_run(run.run_id).status == "succeeded"  # type: ignore[union-attr]
    assert created_refs(sandbox, "anz") == ["later"]


def test_a_burst_of_a_practices_events_is_one_job_and_runs_once_each(
    fleet: Fleet, sandbox: SandboxHandle, pg_url: str
) -> None:
    refs = {"alpha": [f"burst-{n:02d}" for n in range(12)], "beta": ["b-0", "b-1", "b-2"]}
    for name, own in refs.items():
        _accept(fleet, name, own)
    with psycopg.connect(pg_url) as raw:
        jobs = raw.execute(
            "SELECT task_name, args->>'practice', count(*) FROM procrastinate_jobs"
            " WHERE status = 'todo' GROUP BY 1, 2 ORDER BY 2"
        ).fetchall()
    assert jobs == [("practiceflow:run_events", "alpha", 1), ("practiceflow:run_events", "beta", 1)]

    _drain(fleet)

    for name, region in REGIONS.items():
        assert sorted(created_refs(sandbox, region)) == refs[name]  # once each
    runs = fleet.store.list_runs(practice="alpha")
    assert {run.status for run in runs} == {"succeeded"}
    # Never more of one practice's runs at once than its slots.
    for run in runs:
        at_once = [r for r in runs if r.created_at <= run.created_at < r.updated_at]
        assert len(at_once) <= fleet.slots_per_practice


def test_an_event_stored_while_a_practices_run_is_under_way_starts_in_a_free_slot(
    fleet: Fleet, sandbox: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first run holds its slot until the second has started: the job must look for
    # new events while a slot is free, not only when a run ends.
    first_started, second_started = threading.Event(), threading.Event()
    held: list[bool] = []
    real = fleet.run_event

    def run_event(practice: str, source: str, event_id: str) -> str:
        if event_id == "first":
            first_started.set()
            held.append(second_started.wait(DEADLINE_S))
        else:
            second_started.set()
        return real(practice, source, event_id)

    monkeypatch.setattr(fleet, "run_event", run_event)
    fleet.store.record_event("alpha", "test_event", "test.event", "first", {"ref": "first"}, None)
    job = threading.Thread(target=fleet.run_pending, args=("alpha",))
    job.start()
    assert first_started.wait(DEADLINE_S)
    fleet.store.record_event("alpha", "test_event", "test.event", "second", {"ref": "s"}, None)
    job.join(DEADLINE_S * 2)

    assert held == [True]  # the second started while the first still ran
    assert sorted(created_refs(sandbox, "anz")) == ["first", "s"]


def test_a_per_event_job_queued_before_an_upgrade_still_runs_its_event(
    fleet: Fleet, sandbox: SandboxHandle
) -> None:
    config = fleet.config.practices["alpha"]
    fleet.store.record_event("alpha", "test_event", "test.event", "old", {"ref": "old"}, None)
    old = fleet.app.tasks["practiceflow:run_event"]  # the job as earlier versions queued it
    old.configure(lock="event:alpha:test_event:old").defer(
        practice=config.name, source="test_event", event_id="old"
    )

    _drain(fleet)

    assert created_refs(sandbox, "anz") == ["old"]


def test_the_receivers_queuers_queue_one_job_per_practice_among_waiting_deliveries(
    fleet: Fleet, pg_url: str
) -> None:
    hooks = FleetWebhooks(fleet, pg_url, ("127.0.0.1", 0))
    with hooks.queue.open():
        for n, practice in enumerate(["alpha", "beta", "alpha", "alpha", "gamma", "beta"]):
            stored = TriggerEvent(
                id=f"d-{n}", trigger="test_event", source="webhook", dedupe_key=f"d-{n}",
                payload={}, received_at=datetime.now(UTC), practice=practice,
            )  # fmt: skip
            hooks._stored.put(stored)
        hooks._stored.put(None)
        hooks._queue_stored()  # what waited, in one turn; then its stop
    with psycopg.connect(pg_url) as raw:
        jobs = raw.execute(
            "SELECT args->>'practice', count(*) FROM procrastinate_jobs GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert jobs == [("alpha", 1), ("beta", 1)]  # gamma is not in the fleet file: none
