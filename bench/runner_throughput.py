"""Runner throughput at the latencies users have: time per event of a 2-step recipe on
the sandbox, against the same calls made by a hand-written script, with every API answer
held back 0, 50 and 150 ms (the sandbox's ``latency`` setting).

The sandbox runs in a separate process (so that its CPU is not counted as the runner's),
with rate limits far above what the benchmark sends. The recipe creates a client (a write)
and reads its integration ids (a read). The runner journals every step by its one rule
(``practiceflow.runner.journal``: a write's intent fsynced before it leaves, every outcome
fsynced before the next step) and masks personal data; the script just sends the two
requests. The runner side is what ``practiceflow run`` does with events already stored
(``Service.drain``), with a client of its own whose requests are counted for the console
(``RequestLog``).

Target: the runner within 1.05x of the script at 50 and 150 ms, the round trips of a real
API; 0 ms (loopback, the machine's fsync against nothing) is shown, not judged.

Both are warmed up, then alternated round by round on the same sandbox; the ratio printed
is the median of the rounds' ratios.

Run: ``python bench/runner_throughput.py [--events N] [--rounds N] [--latencies 0,50,150]``.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from practiceflow.api import Client, RateLimits
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, RunOutcome, validate_recipe
from practiceflow.service.loop import Service
from practiceflow.state import open_store
from practiceflow.state.request_log import RequestLog

HERE = Path(__file__).resolve().parent
TOKEN = "bench-admin-token"
RECIPE = """\
name: bench two steps
trigger: {use: test_event}
steps:
  - id: client
    use: create_client
    with:
      entityType: Company
      entityName: "Bench {{ trigger.n }}"
      externalSystemID: "bench-{{ trigger.n }}"
  - id: ids
    use: get_client_integrations
    with: {entityKey: "{{ steps.client.entityKey }}"}
"""
LIMITS = RateLimits(per_minute=1_000_000, per_hour=10_000_000, per_day=100_000_000)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_sandbox() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "practiceflow",
        "sandbox",
        "--port",
        str(port),
        "--rate-per-minute",
        "1000000",
        "--rate-per-hour",
        "10000000",
        "--rate-per-day",
        "100000000",
        "--admin-token",
        TOKEN,
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            requests.get(url + "/_admin", headers={"X-Admin-Token": TOKEN}, timeout=1)
            return process, url
        except requests.RequestException:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the sandbox did not start within 20 s")


def _credentials(url: str) -> tuple[str, str]:
    info = requests.get(url + "/_admin", headers={"X-Admin-Token": TOKEN}, timeout=5).json()
    rw = info["credentials"]["anz"]["rw"]
    return rw["clientId"], rw["secret"]


def _script(client: Client, events: int, offset: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    for n in range(offset, offset + events):
        body = {
            "entityType": "Company",
            "entityName": f"Bench {n}",
            "externalSystemID": f"bench-{n}",
        }
        created = client.post("/api/v1/entities", body)
        client.get(f"/api/v1/entities/{created['entityKey']}/integrations")
    return time.perf_counter() - wall, time.process_time() - cpu


def _runner(service: Service, events: int, offset: int) -> tuple[float, float]:
    store, practice = service.store, service.runners[0].practice
    for n in range(offset, offset + events):
        store.record_event(practice, "test_event", "test.event", f"e{n}", {"n": n})
    outcomes: list[RunOutcome] = []
    service.on_outcome = outcomes.append
    wall, cpu = time.perf_counter(), time.process_time()
    done = service.drain(limit=events)  # what `practiceflow run` does with stored events
    elapsed = time.perf_counter() - wall, time.process_time() - cpu
    assert all(outcome.status == "succeeded" for outcome in outcomes), outcomes[:3]
    assert done == len(outcomes) == events
    assert not store.pending_events(practice)
    return elapsed


def _set_latency(url: str, milliseconds: float) -> None:
    """Have the sandbox hold back every answer ``milliseconds`` (its latency setting)."""
    headers = {"X-Admin-Token": TOKEN}
    body = {"latencyMs": milliseconds, "jitterMs": 0}
    answer = requests.post(url + "/_admin/config", json=body, headers=headers, timeout=5)
    answer.raise_for_status()


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


#: The latencies judged against the target (ms): a real API's round trips.
JUDGED = (50.0, 150.0)
TARGET = 1.05


def main() -> None:
    """Print time per event and CPU per step for the runner and the script, per latency."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20, help="events per round")
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds of each")
    parser.add_argument(
        "--latencies",
        default="0,50,150",
        help="milliseconds the sandbox holds back every answer, comma-separated",
    )
    options = parser.parse_args()
    events, rounds = options.events, options.rounds
    latencies = [float(text) for text in options.latencies.split(",")]
    process, url = _start_sandbox()
    measured: dict[float, tuple[list[tuple[float, float]], list[tuple[float, float]]]] = {}
    try:
        client_id, secret = _credentials(url)
        with (
            Client(client_id, secret, base_url=url + "/anz", limits=LIMITS) as client,
            Client(client_id, secret, base_url=url + "/anz", limits=LIMITS) as runs,
            tempfile.TemporaryDirectory() as folder,
        ):
            registry = load_modules([HERE.parent / "tests" / "runner" / "modules"])
            path = Path(folder) / "bench.yaml"
            path.write_text(RECIPE, encoding="utf-8")
            recipe = validate_recipe(path, registry=registry)
            with (
                open_store(str(Path(folder) / "state.db")) as store,
                RequestLog(store, client_id) as counted,
            ):
                # The runner's side is set up as `practiceflow run` sets it up: a client of
                # its own, whose admitted requests are counted for the console's chart.
                runs.budget.on_admit(counted.admitted)
                one = Runner(recipe, store, runs, practice=client_id)
                bench = Service([one], store)
                # Warm both up (connections, caches, compiled templates, the store's pages).
                _script(client, 10, 10_000_000)
                _runner(bench, 10, 20_000_000)
                for number, latency in enumerate(latencies):
                    _set_latency(url, latency)
                    script: list[tuple[float, float]] = []
                    runner: list[tuple[float, float]] = []
                    for index in range(rounds):
                        offset = (number * rounds + index) * events
                        script.append(_script(client, events, offset))
                        runner.append(_runner(bench, events, 1_000_000 + offset))
                    measured[latency] = (script, runner)
    finally:
        process.terminate()
        process.wait(timeout=10)
    print(
        f"{events} events x {rounds} alternated rounds per latency "
        "(2 steps each: create_client, get_client_integrations)"
    )
    steps = events * rounds * 2
    for latency, (script, runner) in measured.items():
        script_wall, script_cpu = (sum(part) for part in zip(*script, strict=True))
        runner_wall, runner_cpu = (sum(part) for part in zip(*runner, strict=True))
        ratios = [mine[0] / theirs[0] for mine, theirs in zip(runner, script, strict=True)]
        ratio = _median(ratios)
        shown = " ".join(f"{value:.2f}" for value in ratios)
        print(
            f"latency {latency:5.0f} ms: script {events * rounds / script_wall:7.1f} events/s, "
            f"runner {events * rounds / runner_wall:7.1f} events/s; "
            f"ratio {ratio:.2f}x (rounds: {shown}); CPU per step script "
            f"{script_cpu / steps * 1000:.2f} ms, runner {runner_cpu / steps * 1000:.2f} ms"
        )
        if latency not in JUDGED:
            continue
        result = {
            "name": f"runner at {latency:.0f} ms per answer: time per event (write, read)",
            "figure": round(ratio, 3),
            "unit": "x hand-written script (median of rounds)",
            "baseline": f"script, {events * rounds / script_wall:.2f} events/s",
            "target": f"<= {TARGET}x",
            "measured": f"runner {events * rounds / runner_wall:.2f} events/s",
            "ok": ratio <= TARGET,
        }
        print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
