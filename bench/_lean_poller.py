"""The lean baseline of ``many_practices.py``: the same polling, written without practiceflow.

What a competent engineer writes to poll N practices' three lists every 60 s: one process,
a scheduler thread with a heap (each (practice, trigger) at a fixed phase of its period,
as practiceflow spreads them), a pool of threads sending through **one** pooled
``requests.Session`` (credentials per request), cursors and known keys in memory (none
written anywhere: a crash starts again from now, which practiceflow's promise forbids),
no rate budget of its own beyond the server's. It sends the same requests as the
replicas' pollers: ``GET /api/v1/groups/list`` twice (``new_group``, ``updated_group``)
and ``GET /api/v1/contacts/list`` with ``pageSize=100``, first without a cursor, then
``lastUpdated=`` the newest stamp seen.

Run by ``many_practices.py`` against its sandbox after the replicas stopped; prints one
JSON line of its figures over the measured window.

Usage: ``python bench/_lean_poller.py --sandbox URL --practices N --warmup S --measure S``
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import resource
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from practiceflow.sandbox.config import practice_credential  # noqa: E402 -- credentials only

#: (trigger, path, cursor field, extra params) as the three triggers poll.
TRIGGERS = (
    ("new_group", "/api/v1/groups/list", "updatedOn", {}),
    ("updated_group", "/api/v1/groups/list", "updatedOn", {}),
    ("new_contact", "/api/v1/contacts/list", "lastUpdated", {"pageSize": 100}),
)
PERIOD = 60


class Lean:
    """N practices' polls, in memory (see the module docstring)."""

    def __init__(self, base: str, practices: int, threads: int) -> None:
        self.base = base
        self.session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=threads)
        self.session.mount("http://", adapter)
        self.session.trust_env = False  # no proxies read from the environment per request
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="lean")
        self.credentials = [practice_credential(n, "anz") for n in range(practices)]
        self.cursors: dict[tuple[int, str], str | None] = {}
        self.known: dict[tuple[int, str], set[str]] = {}
        self.lags: list[float] = []
        self.requests = 0
        self.limited = 0
        self.busy: set[tuple[int, str]] = set()
        self.lock = threading.Lock()
        self.heap: list[tuple[float, int, str]] = []
        now = time.time()
        for number in range(practices):
            for trigger, *_ in TRIGGERS:
                phase = zlib.crc32(f"{number}:{trigger}".encode()) % PERIOD
                due = math.floor(now / PERIOD) * PERIOD + phase
                heapq.heappush(self.heap, (due if due >= now else due + PERIOD, number, trigger))

    def poll(self, number: int, trigger: str, due: float) -> None:
        started = time.time()
        _, path, field, extra = next(t for t in TRIGGERS if t[0] == trigger)
        key = (number, trigger)
        credential = self.credentials[number]
        params: dict[str, Any] = {"pageNumber": 1, **extra}
        cursor = self.cursors.get(key)
        if cursor is not None:
            params["lastUpdated"] = cursor
        try:
            answer = self.session.get(
                f"{self.base}/anz{path}",
                params=params,
                headers={
                    "X-SVC-Auth-ID": credential.client_id,
                    "X-SVC-Auth-Key": credential.secret,
                },
                timeout=30,
            )
            with self.lock:
                self.requests += 1
                self.lags.append(started - due)
                if answer.status_code == 429:
                    self.limited += 1
            if answer.status_code != 200:
                return
            data = answer.json()
            rows = data.get("items", data) if isinstance(data, dict) else data
            known = self.known.setdefault(key, set())
            newest = cursor
            for row in rows if isinstance(rows, list) else []:
                stamp = row.get(field)
                if isinstance(stamp, str) and (newest is None or stamp > newest):
                    newest = stamp
                ident = str(row.get("groupID") or row.get("contactKey") or row.get("id"))
                known.add(ident)
            self.cursors[key] = newest or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        finally:
            with self.lock:
                self.busy.discard(key)

    def run(self, until: float) -> None:
        while time.time() < until:
            due, number, trigger = self.heap[0]
            wait = due - time.time()
            if wait > 0:
                time.sleep(min(wait, 0.5))
                continue
            heapq.heapreplace(self.heap, (due + PERIOD, number, trigger))
            key = (number, trigger)
            with self.lock:
                if key in self.busy:
                    continue
                self.busy.add(key)
            self.pool.submit(self.poll, number, trigger, due)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", required=True)
    parser.add_argument("--practices", type=int, required=True)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--warmup", type=float, default=62.0)
    parser.add_argument("--measure", type=float, default=60.0)
    args = parser.parse_args()
    lean = Lean(args.sandbox, args.practices, args.threads)
    runner = threading.Thread(
        target=lean.run, args=(time.time() + args.warmup + args.measure,), daemon=True
    )
    runner.start()
    time.sleep(args.warmup)
    with lean.lock:
        requests_before, lags_before, limited_before = lean.requests, len(lean.lags), lean.limited
    cpu_before, wall_before = _cpu(), time.monotonic()
    runner.join()
    cpu, window = _cpu() - cpu_before, time.monotonic() - wall_before
    with lean.lock:
        sent = lean.requests - requests_before
        lags = sorted(lean.lags[lags_before:])
        limited = lean.limited - limited_before
    lean.pool.shutdown(wait=True)
    p99 = lags[min(len(lags) - 1, math.ceil(0.99 * len(lags)) - 1)] if lags else float("nan")
    print(
        json.dumps(
            {
                "practices": args.practices,
                "window_s": round(window, 1),
                "requests": sent,
                "rate_limited": limited,
                "poll_lag_p99_s": round(p99, 3),
                "cpu_s": round(cpu, 2),
                "cpu_per_1000": round(cpu / max(sent, 1) * 1000, 3),
                "rss_per_practice_kib": round(_rss_bytes() / args.practices / 1024, 1),
                "pid": os.getpid(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
