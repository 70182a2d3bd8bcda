"""Webhook intake: verified deliveries stored durably per second, against a bare endpoint.

Run: ``.venv/bin/python bench/webhook_intake.py [--deliveries N] [--workers 4,16]``

Two servers run on 127.0.0.1 under the same uvicorn settings:

* **bare**: a starlette endpoint that only answers 200;
* **receiver**: practiceflow's receiver, which for each delivery looks the path up in the
  state store, verifies the HMAC and timestamp, maps the body, and commits the event to
  SQLite (WAL, ``synchronous=FULL``: fsynced) before it answers.

The same pre-signed deliveries (unique ids and bodies) are POSTed to both by the same
client threads, in short rounds that alternate between the two servers (the machine is
shared: alternating lets both see the same load). For each number of concurrent senders
(4 and 16 by default: how concurrently the API delivers is not shown in the spec, and
deliveries that arrive together share a commit), it prints the median rates and the
median of the per-round ratios (a figure, judged against no target: intake is compared
with a peer, n8n on the same machine, side by side; durability is kept). It checks that every
delivery was stored exactly once. Takes about a minute.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.queues import Queue
from pathlib import Path
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


def _start(kind: str, folder: str) -> tuple[multiprocessing.Process, str]:
    ports: Queue[int] = multiprocessing.Queue()
    child = multiprocessing.Process(target=_serve, args=(kind, folder, ports), daemon=True)
    child.start()
    return child, f"http://127.0.0.1:{ports.get(timeout=20)}/hooks/{TOKEN}"


def _compare(
    bare_url: str,
    url: str,
    deliveries: list[tuple[bytes, dict[str, str]]],
    rounds: int,
    workers: int,
) -> tuple[list[float], list[float]]:
    """Alternate rounds between the bare endpoint and the receiver; their rates."""
    size = max(1, len(deliveries) // rounds)
    chunks = [deliveries[start : start + size] for start in range(0, len(deliveries), size)]
    bare_rates: list[float] = []
    rates: list[float] = []
    # The machine is shared and noisy: alternate short rounds so that both sides see the
    # same load, and compare them round by round.
    for chunk in chunks:
        bare_rates.append(_fire(bare_url, chunk, workers))
        rates.append(_fire(url, chunk, workers))
    return bare_rates, rates


def main() -> None:
    """Run both servers (child processes), alternate rounds between them, print ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=4000, help="per sender count")
    parser.add_argument(
        "--workers", default="4,16", help="concurrent senders, comma-separated (one run each)"
    )
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    counts = [int(part) for part in str(args.workers).split(",") if part.strip()]
    total = args.deliveries * len(counts)
    every = _deliveries(total + 200)
    results: list[tuple[int, list[float], list[float]]] = []
    with tempfile.TemporaryDirectory() as folder:
        bare, bare_url = _start("bare", folder)
        receiver, url = _start("receiver", folder)
        try:
            # Warm both up alike (imports, caches) with deliveries of their own.
            warm = every[total:]
            _fire(bare_url, warm, counts[0])
            _fire(url, warm, counts[0])
            for index, workers in enumerate(counts):
                batch = every[index * args.deliveries : (index + 1) * args.deliveries]
                results.append((workers, *_compare(bare_url, url, batch, args.rounds, workers)))
        finally:
            for child in (bare, receiver):
                child.terminate()
                child.join(timeout=10)
        with SQLiteStore(Path(folder) / "state.db") as store:
            stored = len(store.pending_events("bench", limit=total * 2 + 400))
    if stored != total + 200:
        sys.exit(f"stored {stored} events for {total + 200} deliveries")
    print(f"{args.rounds} alternated rounds per sender count; {stored} deliveries stored once each")
    for workers, bare_rates, rates in results:
        ratios = sorted(r / b for r, b in zip(rates, bare_rates, strict=True))
        ratio = statistics.median(ratios)
        print(
            f"{workers:3d} senders: bare {statistics.median(bare_rates):6.0f}/s, verified + stored "
            f"(fsync) {statistics.median(rates):6.0f}/s; ratio {ratio:.2f}x "
            f"median of rounds, {ratios[0]:.2f}x-{ratios[-1]:.2f}x"
        )
        result = {
            "name": f"webhook intake, {workers} concurrent senders",
            "figure": round(ratio, 2),
            "unit": "x bare endpoint (median of rounds)",
            "baseline": f"bare starlette endpoint, {statistics.median(bare_rates):.0f}/s",
            "target": "none (compared with a peer side by side)",
            "measured": f"{statistics.median(rates):.0f}/s verified and fsynced; rounds "
            f"{ratios[0]:.2f}x-{ratios[-1]:.2f}x",
            "ok": None,
        }
        print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
