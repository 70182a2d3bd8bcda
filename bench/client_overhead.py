"""How much the practiceflow Client adds to a plain ``requests.Session`` GET.

Starts a small HTTP/1.1 keep-alive server on 127.0.0.1 that answers every GET with a small
JSON array, then times 200 GETs with a plain session and 200 with :class:`Client` (limits
raised so the rate budget never waits), alternating the two several times, and prints the
best run of each and their ratio (target: under 1.5x). Runs in a few seconds.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

from practiceflow.api import Client, RateLimits

CALLS = 200
ROUNDS = 5
TARGET = 1.5
PATH = "/api/v1/groups/list"
BODY = json.dumps(
    [
        {"groupID": i, "groupName": f"Group {i}", "groupCode": f"G{i}", "isActive": True}
        for i in range(5)
    ]
).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the API does
    disable_nagle_algorithm = True  # headers and body go out in two writes

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args: object) -> None:
        pass


def _time(calls: Callable[[], object]) -> float:
    started = time.perf_counter()
    for _ in range(CALLS):
        calls()
    return time.perf_counter() - started


def main() -> int:
    """Run the benchmark and print the figures; exit 0 even above target (not a test)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    plain = requests.Session()
    plain.trust_env = False  # never route loopback traffic through a proxy from the env
    client_session = requests.Session()
    client_session.trust_env = False
    limits = RateLimits(per_minute=1_000_000, per_hour=10_000_000, per_day=100_000_000)
    client = Client(
        "bench-id",
        "bench-secret",
        base_url=f"{base}/anz",
        limits=limits,
        session=client_session,
        environ={},
    )

    def plain_get() -> object:
        response = plain.get(
            f"{base}/anz{PATH}",
            headers={"X-SVC-Auth-ID": "bench-id", "X-SVC-Auth-Key": "bench-secret"},
            timeout=30,
        )
        response.raise_for_status()
        return response.json()

    def client_get() -> object:
        return client.get(PATH)

    # Warm up both (connection, imports, caches).
    _time(plain_get)
    _time(client_get)
    plain_runs: list[float] = []
    client_runs: list[float] = []
    for _ in range(ROUNDS):
        plain_runs.append(_time(plain_get))
        client_runs.append(_time(client_get))

    best_plain, best_client = min(plain_runs), min(client_runs)
    ratio = best_client / best_plain
    median_ratio = statistics.median(client_runs) / statistics.median(plain_runs)
    print(f"{CALLS} GETs x {ROUNDS} rounds against {base} (best run of each)")
    for label, best in (("requests.Session", best_plain), ("practiceflow", best_client)):
        print(f"  {label:<17}: {best * 1000:8.1f} ms  ({best / CALLS * 1e6:6.0f} us/call)")
    print(
        f"  ratio            : {ratio:.2f}x best, {median_ratio:.2f}x median (target < {TARGET}x)"
    )

    client.close()
    plain.close()
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
