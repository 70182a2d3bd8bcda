"""Replicas own their practices by lease and poll them in-process (fleet/owner.py).

* two leases split the practices evenly, give back the excess when a replica joins, and
  a replica that stops renewing loses its practices to the other;
* a practice paused by a 429 holds no poll thread: with one thread, the other practice
  goes on polling (the sandbox's request log shows it);
* one sweep for all owned practices asks the store which have an event pending, and
  queues only their ``run_events``; a replica that takes a practice sweeps at once;
* two ``worker`` replicas split the two practices; the owner of one is killed with SIGKILL
  in the middle of a stream of changes, the other takes its practice once the lease
  expired, resuming its cursor, and every change runs exactly once.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests
from _fleet_support import (
    REGIONS,
    SANDBOX_LIMITS,
    created_refs,
    secrets_env,
    start_worker,
    stop_workers,
    write_fleet,
)
from prometheus_client.parser import text_string_to_metric_families

from practiceflow.fleet import load_fleet, make_app
from practiceflow.fleet.leases import PracticeLeases
from practiceflow.fleet.owner import PracticeOwner
from practiceflow.fleet.runtime import Fleet
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

POLL_RECIPE = """\
name: fleet new client
trigger:
  use: new_client
  mode: poll
steps:
  - id: lead
    use: create_client
    with:
      entityType: Company
      clientStatus: Lead
      entityName: "Fleet {{ trigger.entityKey }}"
      externalSystemID: "{{ trigger.entityKey }}"
"""
LEASE_S = 3
WAVE = {"alpha": 4, "beta": 3}
#: Generous: a deadline only against a hang, never a measure of speed.
DEADLINE_S = 120.0


def _until(check: Callable[[], Any], why: Callable[[], object]) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while not (found := check()):
        assert time.monotonic() < deadline, why()
        time.sleep(0.2)
    return found


def test_leases_split_evenly_and_a_silent_replica_loses_its_practices(pg_url: str) -> None:
    names = [f"p{n}" for n in range(5)]
    first = PracticeLeases(pg_url, names, lease_s=LEASE_S, replica="first")
    second = PracticeLeases(pg_url, names, lease_s=LEASE_S, replica="second")
    try:
        assert first.renew().owned == frozenset(names)  # alone: every practice
        joined = second.renew()  # two live now, but nothing is free yet
        assert (joined.gained, joined.replicas) == (frozenset(), 2)
        gave = first.renew()  # over its share of ceil(5 / 2) = 3: gives 2 back
        assert (len(gave.owned), len(gave.lost)) == (3, 2)
        took = second.renew()
        assert took.gained == gave.lost
        assert first.owned.isdisjoint(second.owned)
        # first goes silent: once its lease expired, second takes everything.
        _until(lambda: second.renew().owned == frozenset(names), lambda: second.owned)
        assert first.renew().lost == gave.owned  # and first, back, finds them gone
    finally:
        first.close()
        second.close()


def test_a_renewal_comes_as_a_silent_replicas_lease_expires(pg_url: str) -> None:
    # With a 30 s lease a replica renews every 10 s; a dead replica's practices must move
    # within the lease, not up to 10 s after it: the next renewal comes as its leases expire.
    names = [f"q{n}" for n in range(4)]
    first = PracticeLeases(pg_url, names, lease_s=30, replica="silent")
    second = PracticeLeases(pg_url, names, lease_s=30, replica="alive")
    try:
        first.renew()
        second.renew()  # both live: nothing free to take
        assert (first.owned, second.owned) == (frozenset(names), frozenset())
        assert second.due() - time.monotonic() > 5  # a third of the lease away
        # first went silent 28 s ago: its leases expire in 2 s.
        with psycopg.connect(pg_url, autocommit=True) as db:
            db.execute(
                "UPDATE pf_practice_leases SET expires_at = now() + interval '2 seconds'"
                " WHERE owner = 'silent'"
            )
            db.execute(
                "UPDATE pf_fleet_replicas SET seen_at = now() - interval '28 seconds'"
                " WHERE replica = 'silent'"
            )
        began = time.monotonic()
        assert second.renew().gained == frozenset()
        assert began + 2 <= second.due() <= began + 3  # just after the expiry, not 10 s on
        time.sleep(max(0.0, second.due() - time.monotonic()))
        assert second.renew().owned == frozenset(names)
    finally:
        first.close()
        second.close()


def test_a_practice_paused_by_429_holds_no_thread_from_the_other(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    sandbox.admin(
        "POST",
        "/_admin/faults",
        {"kind": "rate_limit", "count": 10_000, "region": "uk", "retryAfter": 300},
    )
    fleet_file = write_fleet(tmp_path, sandbox, recipe=POLL_RECIPE, poll_every=1)
    config = load_fleet(fleet_file)
    app = make_app(pg_url, sync=True)

    def polls(region: str) -> list[dict[str, Any]]:
        log: list[dict[str, Any]] = sandbox.admin("GET", "/_admin/requests")
        return [row for row in log if row["region"] == region and row["method"] == "GET"]

    with PostgresStore(pg_url) as store, app.open():
        fleet = Fleet(config, store, pg_url, app, environ=secrets_env(sandbox), owned=True)
        leases = PracticeLeases(pg_url, config.practices, lease_s=30)
        owner = PracticeOwner(fleet, leases, threads=1)  # one thread for both practices
        try:
            owner.start()
            assert owner.owned == {"alpha", "beta"}
            _until(lambda: len(polls("anz")) >= 5, lambda: (polls("anz"), polls("uk")))
        finally:
            owner.stop()
            fleet.close()
            sandbox.admin("DELETE", "/_admin/faults")
    # beta asked once, was told to wait 300 s, and waited in the schedule, not in a thread.
    assert [row["status"] for row in polls("uk")] == [429]
    assert {row["status"] for row in polls("anz")} == {200}
    assert fleet.paused_for("beta") > 200


def test_one_sweep_queues_only_the_owned_practices_with_events_pending(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    fleet_file = write_fleet(tmp_path, sandbox, recipe=POLL_RECIPE, poll_every=3600)
    config = load_fleet(fleet_file)
    app = make_app(pg_url, sync=True)

    with PostgresStore(pg_url) as store, app.open():
        # Stored by a replica that died before queueing its job.
        store.record_event("alpha", "new_client", "client.created", "left", {"entityKey": "k"})
        fleet = Fleet(config, store, pg_url, app, environ=secrets_env(sandbox), owned=True)
        owner = PracticeOwner(fleet, PracticeLeases(pg_url, config.practices), sweep_every=1)
        try:
            owner.start()
            assert owner.owned == {"alpha", "beta"}
            assert fleet.to_sweep() == {"alpha"}
            _until(lambda: _queued(pg_url), lambda: "no job queued")
        finally:
            owner.stop()
            fleet.close()
    assert _queued(pg_url) == [("practiceflow:run_events", "alpha")]


def test_a_practice_taken_from_a_silent_replica_is_swept_at_once(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The dead owner stored an event and died before queueing its job. With a sweep an
    # hour away, the replica that takes the practice queues it as it takes it.
    fleet_file = write_fleet(tmp_path, sandbox, recipe=POLL_RECIPE, poll_every=3600)
    config = load_fleet(fleet_file)
    app = make_app(pg_url, sync=True)
    silent = PracticeLeases(pg_url, config.practices, lease_s=30, replica="silent")
    with PostgresStore(pg_url) as store, app.open():
        assert silent.renew().owned == frozenset(config.practices)
        store.record_event("alpha", "new_client", "client.created", "left", {"entityKey": "k"})
        fleet = Fleet(config, store, pg_url, app, environ=secrets_env(sandbox), owned=True)
        sweeps: list[set[str]] = []
        to_sweep = fleet.to_sweep

        def counted() -> set[str]:
            sweeps.append(to_sweep())
            return sweeps[-1]

        monkeypatch.setattr(fleet, "to_sweep", counted)
        leases = PracticeLeases(pg_url, config.practices, lease_s=30, replica="alive")
        owner = PracticeOwner(fleet, leases, sweep_every=3600)
        try:
            owner.start()
            assert owner.owned == set()  # both live: nothing free to take
            _until(lambda: sweeps, lambda: "no sweep at the start")
            assert sweeps == [{"alpha"}]  # seen pending, but not owned here: not queued
            with psycopg.connect(pg_url, autocommit=True) as db:  # silent for 29 s now
                db.execute("UPDATE pf_practice_leases SET expires_at = now() + interval '1 s'")
                db.execute(
                    "UPDATE pf_fleet_replicas SET seen_at = now() - interval '29 seconds'"
                    " WHERE replica = 'silent'"
                )
            _until(lambda: _queued(pg_url), lambda: (owner.owned, sweeps))
            assert owner.owned == {"alpha", "beta"}
            assert len(sweeps) == 2  # the takeover's, not the hourly one
        finally:
            owner.stop()
            fleet.close()
            silent.close()
    assert _queued(pg_url) == [("practiceflow:run_events", "alpha")]


def _queued(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url) as raw:
        rows = raw.execute(
            "SELECT task_name, args->>'practice' FROM procrastinate_jobs ORDER BY 2"
        ).fetchall()
    return [(str(task), str(practice)) for task, practice in rows]


def _owners(url: str) -> dict[str, str]:
    with psycopg.connect(url) as raw:
        try:
            rows = raw.execute(
                "SELECT practice, owner FROM pf_practice_leases WHERE expires_at > now()"
            ).fetchall()
        except psycopg.errors.UndefinedTable:  # no replica started yet
            return {}
    return {str(row[0]): str(row[1]) for row in rows}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _reported(base: str) -> set[str]:
    """The practices whose runs, events and budget a replica's ``/metrics`` reports."""
    text = requests.get(f"{base}/metrics", timeout=30).text
    families = {"practiceflow_runs", "practiceflow_events_waiting", "practiceflow_budget_limit"}
    found = {
        family.name: {sample.labels["practice"] for sample in family.samples}
        for family in text_string_to_metric_families(text)
        if family.name in families
    }
    assert len(found) == len(families), found
    assert len({frozenset(names) for names in found.values()}) == 1, found  # the same in each
    return next(iter(found.values()))


def _create_clients(sandbox: SandboxHandle, wave: int) -> dict[str, list[str]]:
    keys: dict[str, list[str]] = {}
    for name, count in WAVE.items():
        for n in range(count):
            body = {"entityType": "Company", "entityName": f"Backstage {name} {wave}.{n}"}
            row = sandbox.admin("POST", "/_admin/entities", body, region=REGIONS[name])
            keys.setdefault(name, []).append(row["entityKey"])
    return keys


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_owner_loses_nothing_and_its_practice_moves(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    fleet_file = write_fleet(tmp_path, sandbox, recipe=POLL_RECIPE, poll_every=1)
    env = {**os.environ, **secrets_env(sandbox)}
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    args = ("--lease", str(LEASE_S), "--sweep-every", "2", "--concurrency", "2")
    ports = {log: _free_port() for log in logs}
    workers = [
        start_worker(fleet_file, pg_url, env, log, *args, "--ops-listen", f"127.0.0.1:{port}")
        for log, port in ports.items()
    ]
    metrics = {
        worker.pid: f"http://127.0.0.1:{port}"
        for worker, port in zip(workers, ports.values(), strict=True)
    }
    tails = lambda: [log.read_text()[-2000:] for log in logs]  # noqa: E731
    created: dict[str, list[str]] = {name: [] for name in REGIONS}
    try:
        # Each replica owns one practice (ceil(2 / 2)).
        _until(lambda: len(set(_owners(pg_url).values())) == 2, tails)
        with PostgresStore(pg_url) as store:
            # The first poll of each practice reads the list once and fires nothing.
            _until(lambda: all(store.get_cursor_state(n, "new_client") for n in REGIONS), tails)
            for name, keys in _create_clients(sandbox, 0).items():
                created[name] += keys
            _until(lambda: store.list_runs(practice="alpha", status="succeeded"), tails)
            owner = _owners(pg_url)["alpha"]
            victim = next(w for w in workers if f"-{w.pid}-" in owner)
            survivor = next(w for w in workers if w is not victim)
            # Each replica's /metrics reports the practice it owns, and only that one.
            reported = {w.pid: _reported(metrics[w.pid]) for w in workers}
            assert reported == {victim.pid: {"alpha"}, survivor.pid: {"beta"}}
            os.kill(victim.pid, signal.SIGKILL)  # mid-stream: more changes follow at once
            victim.wait()
            for wave in (1, 2):
                for name, keys in _create_clients(sandbox, wave).items():
                    created[name] += keys
            # Once the lease expired, the survivor owns both practices.
            _until(
                lambda: (found := set(_owners(pg_url).values())) and len(found) == 1
                and f"-{survivor.pid}-" in found.pop() and len(_owners(pg_url)) == 2,
                tails,
            )  # fmt: skip
            total = sum(len(keys) for keys in created.values())
            _until(lambda: len(store.list_runs(status="succeeded", limit=100)) >= total, tails)
            time.sleep(2.0)  # a few more polls: nothing may fire again
            runs = store.list_runs(limit=100)
            assert _reported(metrics[survivor.pid]) == set(REGIONS)  # both, once it owns them
    finally:
        stop_workers(workers)

    assert victim.returncode == -signal.SIGKILL
    assert len(runs) == total
    assert {run.status for run in runs} == {"succeeded"}
    for name, region in REGIONS.items():
        # Every change fired one run, which wrote once, across the kill.
        assert sorted(created_refs(sandbox, region)) == sorted(created[name])
        assert sorted(run.event_id for run in runs if run.practice == name) == sorted(
            f"client:{key}" for key in created[name]
        )
    log = sandbox.admin("GET", "/_admin/requests")
    assert [row for row in log if row["status"] == 429] == []
