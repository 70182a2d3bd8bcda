"""Webhook intake: verified deliveries stored durably per second, against a bare endpoint.

Run: ``.venv/bin/python bench/webhook_intake.py [--deliveries N] [--workers W]``

Two servers run on 127.0.0.1 under the same uvicorn settings:

* **bare**: a starlette endpoint that only answers 200;
* **receiver**: practiceflow's receiver, which for each delivery looks the path up in the
  state store, verifies the HMAC and timestamp, maps the body, and commits the event to
  SQLite (WAL, ``synchronous=FULL``: fsynced) before it answers.

The same pre-signed deliveries (unique ids and bodies) are POSTed to both by the same
client threads. It prints both rates and their ratio (target: receiver >= 0.5x bare), and
checks that every delivery was stored exactly once. Takes well under 60 s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from practiceflow.state import SQLiteStore
from practiceflow.triggers import Receiver, load_definition, serve_receiver
from practiceflow.webhooks import delivery_headers

SECRET = "whsec_bench_secret"
TOKEN = "bench-token"


async def _ok(request: Request) -> Response:
    await request.body()
    return Response(status_code=200)


def _deliveries(count: int) -> list[tuple[bytes, dict[str, str]]]:
    out = []
    for number in range(count):
        body = json.dumps(
            {"event": "proposal.accepted", "data": {"proposalKey": f"p-{number}", "entityKey": "e"}}
        ).encode()
        headers = delivery_headers(SECRET, "proposal.accepted", f"evt-{number}", body)
        headers["Content-Type"] = "application/json"
        out.append((body, headers))
    return out


def _fire(url: str, deliveries: list[tuple[bytes, dict[str, str]]], workers: int) -> float:
    chunks = [deliveries[index::workers] for index in range(workers)]

    def send(chunk: list[tuple[bytes, dict[str, str]]]) -> int:
        # http.client sends headers and a bytes body in one write (no Nagle/delayed-ACK
        # stall), and keeps the connection alive, so the client is not the bottleneck.
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        failures = 0
        for body, headers in chunk:
            connection.request("POST", parts.path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            failures += response.status != 200
        connection.close()
        return failures

    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        failures = sum(pool.map(send, chunks))
    elapsed = time.perf_counter() - started
    if failures:
        sys.exit(f"{failures} deliveries were not answered 200 by {url}")
    return len(deliveries) / elapsed


def _serve(kind: str, folder: str, ports: Queue[int]) -> None:
    """Child process: serve the bare endpoint or the receiver until killed."""
    if kind == "bare":
        holder = Receiver(SQLiteStore(Path(folder) / "unused.db"))
        holder.app = Starlette(routes=[Route("/hooks/{token}", _ok, methods=["POST"])])
    else:
        store = SQLiteStore(Path(folder) / "state.db")
        holder = Receiver(store)
        spec = load_definition("proposal_accepted").webhook
        assert spec is not None
        holder.bind("bench", "proposal_accepted", spec, {})
        store.save_subscription(
            "bench", "proposal_accepted", "sub", "proposal.accepted", "u", SECRET, TOKEN, "active"
        )
    with serve_receiver(holder) as server:
        ports.put(server.port)
        while True:
            time.sleep(1)


def _measure(kind: str, folder: str, deliveries: list[Any], workers: int) -> float:
    ports: Queue[int] = multiprocessing.Queue()
    child = multiprocessing.Process(target=_serve, args=(kind, folder, ports), daemon=True)
    child.start()
    try:
        url = f"http://127.0.0.1:{ports.get(timeout=20)}/hooks/{TOKEN}"
        return _fire(url, deliveries, workers)
    finally:
        child.terminate()
        child.join(timeout=10)


def main() -> None:
    """Run both measurements (servers in child processes) and print the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    deliveries = _deliveries(args.deliveries)
    with tempfile.TemporaryDirectory() as folder:
        bare_rate = _measure("bare", folder, deliveries, args.workers)
        rate = _measure("receiver", folder, deliveries, args.workers)
        with SQLiteStore(Path(folder) / "state.db") as store:
            stored = len(store.pending_events("bench", limit=args.deliveries * 2))
    if stored != args.deliveries:
        sys.exit(f"stored {stored} events for {args.deliveries} deliveries")
    ratio = rate / bare_rate
    print(f"bare starlette endpoint  : {bare_rate:8.0f} deliveries/s")
    print(f"verified + stored (fsync): {rate:8.0f} deliveries/s ({stored} stored once each)")
    print(f"ratio                    : {ratio:8.2f}x (target >= 0.5x)")


if __name__ == "__main__":
    main()
