"""Memory of a full import: peak RSS of a process that pages through every entity of a
practice (``Client.paginate`` over ``GET /api/v1/entities``), for 10,000 and for 100,000
entities. The sandbox runs in its own process (``practiceflow sandbox``), so only the
importer is measured. The importer streams: the peak must stay flat (100k / 10k near 1)
and under 150 MB. The baseline is the same process's RSS before the import.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

import requests

TARGET_MB = 150.0
SIZES = (10_000, 100_000)


def _rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def child(base_url: str, limit: int) -> None:
    """Import ``limit`` entities and print baseline and peak RSS as JSON."""
    from practiceflow.api import Client, RateLimits

    limits = RateLimits(per_minute=10**6, per_hour=10**7, per_day=10**8)
    with Client(
        "5a4db0c0-0000-4000-8000-000000000011",
        "sandbox-anz-rw-secret",
        base_url=base_url,
        limits=limits,
        timeout=60,
    ) as client:
        client.get("/api/v1/entities", params={"pageNumber": 1})  # warm: imports, session
        baseline = _rss_mb()
        count = 0
        for row in client.paginate("/api/v1/entities", limit=limit):
            count += 1 if row.get("entityKey") else 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"count": count, "baseline": baseline, "peak": peak}))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    """Start a 100,000-entity sandbox, run both imports, print the figures."""
    port = _free_port()
    sandbox = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "practiceflow",
            "sandbox",
            "--port",
            str(port),
            "--entities",
            str(max(SIZES)),
            "--rate-per-minute",
            "1000000",
            "--rate-per-hour",
            "10000000",
            "--rate-per-day",
            "100000000",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/anz"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"http://127.0.0.1:{port}/_admin", timeout=2)
                break
            except requests.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        results = {}
        for size in SIZES:
            done = subprocess.run(
                [sys.executable, __file__, "--child", base, str(size)],
                capture_output=True,
                text=True,
                timeout=900,
                check=True,
            )
            results[size] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        sandbox.send_signal(signal.SIGTERM)
        sandbox.wait(timeout=30)
    small, large = results[SIZES[0]], results[SIZES[1]]
    flat = large["peak"] / small["peak"]
    for size in SIZES:
        row = results[size]
        print(
            f"{size:>7} entities: imported {row['count']:>7}, RSS before "
            f"{row['baseline']:6.1f} MB, peak {row['peak']:6.1f} MB"
        )
    print(f"peak 100k / peak 10k: {flat:.3f} (flat ~1.0; target peak < {TARGET_MB:g} MB)")
    result = {
        "name": "memory: peak RSS of a full 100,000-entity import",
        "figure": round(large["peak"] / large["baseline"], 3),
        "unit": "x RSS before import",
        "baseline": f"{large['baseline']:.1f} MB before; 10k-entity import peak "
        f"{small['peak']:.1f} MB",
        "target": f"flat, < {TARGET_MB:g} MB",
        "measured": f"peak {large['peak']:.1f} MB; 100k/10k peak {flat:.3f}",
        "ok": large["peak"] < TARGET_MB and flat < 1.1 and large["count"] == SIZES[1],
    }
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    sys.exit(main())
