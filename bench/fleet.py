"""Fleet throughput: events per second with 1, 2 and 4 ``practiceflow worker`` replicas on
PostgreSQL, the 429s received (target: 0), and one SQLite runner beside them.

Each event runs a one-write recipe (create a client) for one practice. The sandbox runs in
its own process with rate limits scaled up from the spec's (default 1200/min) so that a
run takes seconds; the practice's shared budget is set a little below them, so the ratio
between worker counts shows scaling until the budget binds, and no request may get a 429.
A throw-away PostgreSQL server is started (``tests/pgserver.py``) unless ``--state`` names
one; each worker count gets a fresh database.

Run: ``python bench/fleet.py [--events N] [--per-minute N]`` (about a minute).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from runner_throughput import TOKEN, _free_port  # noqa: E402 -- shared bench helpers

from pgserver import PostgresServer  # noqa: E402 -- the tests' throw-away server helper
from practiceflow.api import Client, RateLimits  # noqa: E402
from practiceflow.cli.db import migrate_state  # noqa: E402
from practiceflow.fleet import accept_event, load_fleet, make_app  # noqa: E402
from practiceflow.manifest import load_modules  # noqa: E402
from practiceflow.runner import Runner, validate_recipe  # noqa: E402
from practiceflow.state import PostgresStore, open_store  # noqa: E402

MODULES = HERE.parent / "tests" / "runner" / "modules"
RECIPE = """\
name: bench one write
trigger: {use: test_event}
steps:
  - id: client
    use: create_client
    with:
      entityType: Company
      entityName: "Fleet bench {{ trigger.n }}"
      externalSystemID: "fleet-bench-{{ trigger.n }}"
"""


def _limits(per_minute: int) -> tuple[dict[str, int], RateLimits]:
    sandbox = {"perMinute": per_minute, "perHour": per_minute * 58, "perDay": per_minute * 1000}
    budget = int(per_minute * 0.92)
    return sandbox, RateLimits(budget, budget * 55, budget * 900)


def _admin(url: str, method: str, path: str, body: object = None) -> object:
    response = requests.request(
        method, url + path, json=body, headers={"X-Admin-Token": TOKEN}, timeout=30
    )
    response.raise_for_status()
    return response.json()


def _start_sandbox(per_minute: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    sandbox, _ = _limits(per_minute)
    command = [
        sys.executable, "-m", "practiceflow", "sandbox", "--port", str(port),
        "--rate-per-minute", str(sandbox["perMinute"]), "--rate-per-hour",
        str(sandbox["perHour"]), "--rate-per-day", str(sandbox["perDay"]),
        "--admin-token", TOKEN,
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            _admin(url, "GET", "/_admin")
            return process, url
        except requests.RequestException:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the sandbox did not start within 20 s")


def _reset(url: str, per_minute: int) -> tuple[str, str, int]:
    sandbox, _ = _limits(per_minute)
    _admin(url, "POST", "/_admin/reset", {})
    _admin(url, "POST", "/_admin/config", {"rateLimits": sandbox})
    info = _admin(url, "GET", "/_admin")
    assert isinstance(info, dict)
    rw = info["credentials"]["anz"]["rw"]
    return rw["clientId"], rw["secret"], 0


def _count_429(url: str) -> int:
    rows = _admin(url, "GET", "/_admin/requests")
    assert isinstance(rows, list)
    return sum(1 for row in rows if row["status"] == 429)


def _write_fleet(folder: Path, url: str, client_id: str, per_minute: int) -> Path:
    _, budget = _limits(per_minute)
    (folder / "bench.yaml").write_text(RECIPE, encoding="utf-8")
    text = (
        f"modules: [{MODULES}]\npractices:\n  bench:\n    client_id: {client_id}\n"
        f"    client_secret_env: BENCH_SECRET\n    base_url: {url}/anz\n"
        f"    recipes: [bench.yaml]\n    limits: {{per_minute: {budget.per_minute}, "
        f"per_hour: {budget.per_hour}, per_day: {budget.per_day}}}\n"
    )
    path = folder / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _alive(state: str) -> int:
    with psycopg.connect(state) as raw:
        row = raw.execute(
            "SELECT count(*) FROM procrastinate_workers"
            " WHERE last_heartbeat > now() - interval '5 seconds'"
        ).fetchone()
    return 0 if row is None else int(row[0])


def _fleet_run(state: str, sandbox: str, workers: int, events: int, per_minute: int) -> float:
    client_id, secret, _ = _reset(sandbox, per_minute)
    migrate_state(state)
    with tempfile.TemporaryDirectory() as folder:
        fleet_file = _write_fleet(Path(folder), sandbox, client_id, per_minute)
        env = {**os.environ, "BENCH_SECRET": secret}
        command = [sys.executable, "-m", "practiceflow", "worker", "--fleet", str(fleet_file),
                   "--state", state, "--heartbeat", "2"]  # fmt: skip
        processes = [
            subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(workers)
        ]
        try:
            while _alive(state) < workers:
                time.sleep(0.2)
            config = load_fleet(fleet_file).practices["bench"]
            app = make_app(state)
            with PostgresStore(state) as store, app.open():
                started = time.perf_counter()
                for n in range(events):
                    accept_event(app, store, config, "test_event", "t", f"e{n}", {"n": n})
                while store.pending_events("bench", 1):
                    time.sleep(0.05)
                elapsed = time.perf_counter() - started
                done = store.list_runs(practice="bench", status="succeeded", limit=events + 1)
                assert len(done) == events, f"{len(done)} of {events} runs succeeded"
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=30)
    return events / elapsed


def _sqlite_run(sandbox: str, events: int, per_minute: int) -> float:
    client_id, secret, _ = _reset(sandbox, per_minute)
    _, budget = _limits(per_minute)
    registry = load_modules([MODULES])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.yaml"
        path.write_text(RECIPE, encoding="utf-8")
        recipe = validate_recipe(path, registry=registry)
        with (
            Client(client_id, secret, base_url=sandbox + "/anz", limits=budget) as client,
            open_store(str(Path(folder) / "state.db")) as store,
        ):
            runner = Runner(recipe, store, client, practice="bench")
            started = time.perf_counter()
            for n in range(events):
                store.record_event("bench", "test_event", "t", f"e{n}", {"n": n})
            outcomes = runner.process_pending(limit=events)
            elapsed = time.perf_counter() - started
    assert all(outcome.status == "succeeded" for outcome in outcomes)
    return events / elapsed


def main() -> None:
    """Print events per second and 429s for 1, 2, 4 fleet workers and one SQLite runner."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--per-minute", type=int, default=1200, help="sandbox limit per minute")
    parser.add_argument("--state", help="a PostgreSQL server's admin URL (else a temporary one)")
    args = parser.parse_args()
    server = None if args.state else PostgresServer.start()
    sandbox, url = _start_sandbox(args.per_minute)
    _, budget = _limits(args.per_minute)
    print(f"{args.events} events, one write each; budget {budget.describe()}")
    print(f"{'store':<12}{'workers':>8}{'events/s':>10}{'429s':>6}")
    try:
        for workers in (1, 2, 4):
            state = server.new_database(f"bench{workers}") if server else args.state
            rate = _fleet_run(state, url, workers, args.events, args.per_minute)
            print(f"{'postgresql':<12}{workers:>8}{rate:>10.1f}{_count_429(url):>6}")
        rate = _sqlite_run(url, args.events, args.per_minute)
        print(f"{'sqlite':<12}{1:>8}{rate:>10.1f}{_count_429(url):>6}")
    finally:
        sandbox.terminate()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
