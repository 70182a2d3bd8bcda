"""Restarts stress: ``serve`` killed (``kill -9``) or stopped (SIGTERM) at random moments while
events arrive by webhook and by poll, some while it is down; nothing may be lost.

Run: ``.venv/bin/python bench/restarts_stress.py [--restarts 20] [--seed 24]``

A sandbox runs on 127.0.0.1 whose sender gives up retrying a delivery within a fraction of
a second, so an event fired while ``serve`` is down can only come back through the catch-up
poll of the next start. Two recipes are served: ``proposal_accepted`` for one client
(webhook, caught up by polling that client's proposals) and ``updated_client`` (polling).
Each round starts ``serve``, waits a random moment, accepts a proposal and changes a client,
waits again, kills or stops it, then does the same while it is down. After the last start it
checks that every acceptance and every change ran exactly once.

It also prints how soon the receiver listens after the process is started (the issue's
target: within half a second), next to a bare ``python -c pass`` measured in the same run.
Takes about a minute for 20 restarts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from practiceflow.api import Client
from practiceflow.state import open_store
from practiceflow.testing import running_sandbox

REPO = Path(__file__).resolve().parent.parent
FAST = {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}
ACCEPTED = """\
name: accepted
trigger:
  use: proposal_accepted
  with:
    entityKey: {entity}
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{{{ trigger.entityKey }}}}"
"""
CHANGED = """\
name: changed
trigger:
  use: updated_client
  mode: poll
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(what: str, check: Callable[[], object], timeout: float = 120.0) -> object:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)
    return found


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _succeeded(state: Path, recipe: str) -> set[str]:
    with open_store(str(state)) as store:
        runs = store.list_runs(recipe=recipe, limit=10_000)
    return {run.event_id for run in runs if run.status == "succeeded"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=20)
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args()
    chance = random.Random(args.seed)  # noqa: S311 - moments to kill at, not secrets
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - started
    with running_sandbox(webhook_retry_scale=0.02) as sandbox, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sandbox.admin("POST", "/_admin/config", {"rateLimits": FAST})
        client_id, secret = sandbox.credentials("anz", "rw")
        rows = sandbox.admin("GET", "/_admin/records/entities")
        entity, *others = [row["entityKey"] for row in rows if row["status"] == "Active"]
        (folder / "accepted.yaml").write_text(ACCEPTED.format(entity=entity), encoding="utf-8")
        (folder / "changed.yaml").write_text(CHANGED, encoding="utf-8")
        port = _free_port()
        state = folder / "state.db"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
        env.update(
            PRACTICEFLOW_CLIENT_ID=client_id,
            PRACTICEFLOW_CLIENT_SECRET=secret,
            PRACTICEFLOW_BASE_URL=sandbox.base_url("anz"),
            PRACTICEFLOW_STATE=str(state),
            PRACTICEFLOW_LISTEN=f"127.0.0.1:{port}",
            PRACTICEFLOW_PUBLIC_URL="local",
            PYTHONPATH=str(REPO / "src"),
        )
        entry = "from practiceflow.cli import main; main()"  # the console script's entry
        command = [sys.executable, "-c", entry, "serve", "--no-console"]
        command += [str(folder / "accepted.yaml"), str(folder / "changed.yaml")]
        log = (folder / "serve.log").open("ab")
        listen_times: list[float] = []

        def start() -> subprocess.Popen[bytes]:
            begun = time.perf_counter()
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
            _wait("the receiver to listen", lambda: _listening(port) or process.poll() is not None)
            listen_times.append(time.perf_counter() - begun)
            return process

        with Client(client_id, secret, base_url=sandbox.base_url("anz")) as api:
            proposals = [
                str(
                    api.post(
                        "/api/v1/proposals",
                        json={"entityKey": entity, "services": [{"serviceID": 400}]},
                    )["proposalKey"]
                )
                for _ in range(2 * args.restarts)
            ]
        patched: list[str] = []
        kills = terms = 0
        process = start()

        def ready() -> bool:
            with open_store(str(state)) as store:
                return all(
                    store.get_cursor_state(client_id, name) is not None
                    for name in ("proposal_accepted", "updated_client")
                )

        _wait("serve's first cursors", ready)
        for round_ in range(args.restarts):
            if round_:
                process = start()
            time.sleep(chance.uniform(0.0, 1.5))
            sandbox.admin("POST", f"/_admin/proposals/{proposals[2 * round_]}/accept")
            patched.append(others[2 * round_])
            sandbox.admin("PATCH", f"/_admin/entities/{patched[-1]}", {"email": "up@example.com"})
            time.sleep(chance.uniform(0.0, 1.0))
            how = chance.choice([signal.SIGKILL, signal.SIGTERM])
            kills, terms = kills + (how == signal.SIGKILL), terms + (how == signal.SIGTERM)
            process.send_signal(how)
            process.wait(timeout=120)
            sandbox.admin("POST", f"/_admin/proposals/{proposals[2 * round_ + 1]}/accept")
            patched.append(others[2 * round_ + 1])
            sandbox.admin("PATCH", f"/_admin/entities/{patched[-1]}", {"email": "down@example.com"})
        process = start()
        wanted = {f"proposal:{key}" for key in proposals}
        try:
            _wait("every acceptance", lambda: _succeeded(state, "accepted") >= wanted)
            _wait(
                "every change",
                lambda: {e.split("@")[0] for e in _succeeded(state, "changed")} >= set(patched),
            )
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
            log.close()
        with open_store(str(state)) as store:
            accepted = [run.event_id for run in store.list_runs(recipe="accepted", limit=10_000)]
            changed = [run.event_id for run in store.list_runs(recipe="changed", limit=10_000)]
        lost = len(wanted - set(accepted)) + len(set(patched) - {e.split("@")[0] for e in changed})
        twice = len(accepted) - len(set(accepted)) + len(changed) - len(patched)
    events = len(wanted) + len(patched)
    print(
        f"{args.restarts} restarts ({kills} kill -9, {terms} SIGTERM), {events} events "
        f"(half fired while serve was down): {lost} lost, {twice} run twice"
    )
    median = statistics.median(listen_times)
    print(
        f"receiver listening after start: median {median:.2f} s, max {max(listen_times):.2f} s "
        f"over {len(listen_times)} starts (bare python start {bare:.2f} s)"
    )
    results = [
        {
            "name": "restarts: events lost or run twice across kill -9 / SIGTERM restarts",
            "figure": lost + twice,
            "unit": f"events of {events}",
            "baseline": f"{args.restarts} restarts, half the events fired while down",
            "target": "0",
            "measured": f"{lost} lost, {twice} twice",
            "ok": lost + twice == 0,
        },
        {
            "name": "restarts: receiver listening after the process starts",
            "figure": round(median / 0.5, 3),
            "unit": "x the 0.5 s target (median)",
            "baseline": f"bare python start {bare:.2f} s",
            "target": "<= 1.0",
            "measured": f"median {median:.2f} s, max {max(listen_times):.2f} s",
            "ok": median <= 0.5,
        },
    ]
    for result in results:
        print("RESULT " + json.dumps(result))
    return 0 if lost + twice == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
