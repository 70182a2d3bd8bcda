"""One :class:`~practiceflow.api.Client` shared by the threads of ``worker --concurrency N``.

procrastinate runs a replica's synchronous jobs in threads, and a practice's client (one
``requests.Session``, one auth method, one rate budget) is shared by all of them. These
tests drive two practices' clients from eight threads at once against the sandbox: each
answer belongs to its own request, no request carries the other practice's credentials,
each write happens once, and a shared budget admits exactly its window, no more.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from _fleet_support import REGIONS, SANDBOX_LIMITS

from practiceflow.api import Client
from practiceflow.budget.postgres_bucket import shared_budget
from practiceflow.budget.rate_budget import RateLimits
from practiceflow.errors import RateLimitError
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

THREADS = 8


@pytest.fixture
def clients(pg_url: str, sandbox: SandboxHandle) -> Iterator[dict[str, Client]]:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    made: dict[str, Client] = {}
    limits = RateLimits(per_minute=50_000, per_hour=900_000, per_day=9_000_000)
    for region in REGIONS.values():
        client_id, secret = sandbox.credentials(region, "rw")  # type: ignore[arg-type]
        budget = shared_budget(pg_url, client_id, limits)
        made[region] = Client(
            client_id, secret, base_url=sandbox.base_url(region), environ={}, budget=budget
        )
    try:
        yield made
    finally:
        for client in made.values():
            client.close()
            client.budget.close()


def test_threads_sharing_clients_get_their_own_answers_with_their_own_credentials(
    clients: dict[str, Client], sandbox: SandboxHandle
) -> None:
    keys = {
        region: [row["entityKey"] for row in sandbox.admin("GET", "/_admin/records/entities",
                                                           region=region)][:40]
        for region in clients
    }  # fmt: skip

    def work(n: int) -> tuple[str, str, str]:
        region = list(clients)[n % 2]
        client = clients[region]
        if n % 5 == 0:  # a write now and then, among the reads
            ref = f"thread-{n:03d}"
            body = {"entityType": "Company", "clientStatus": "Lead", "entityName": ref,
                    "externalSystemID": ref}  # fmt: skip
            client.post("/api/v1/entities", json=body)
            return region, ref, ref
        key = keys[region][n % len(keys[region])]
        answer: Any = client.get(f"/api/v1/entities/{key}")
        return region, key, str(answer.get("entityKey"))

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(work, range(120)))

    for region, asked, got in results:
        assert got == asked, f"{region}: asked for {asked}, got the answer for {got}"
    for region in clients:
        written = [
            row["externalSystemID"]
            for row in sandbox.admin("GET", "/_admin/records/entities", region=region)
            if str(row.get("externalSystemID") or "").startswith("thread-")
        ]
        expected = [ref for r, ref, _ in results if r == region and ref.startswith("thread-")]
        assert Counter(written) == dict.fromkeys(expected, 1)  # each write once
    log = sandbox.admin("GET", "/_admin/requests")
    assert len(log) == 120
    ids = {region: sandbox.credentials(region, "rw")[0] for region in clients}  # type: ignore[arg-type]
    assert all(row["clientId"] == ids[row["region"]] and row["status"] < 400 for row in log)


def test_threads_sharing_a_budget_never_exceed_its_window(
    pg_url: str, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    client_id, secret = sandbox.credentials("anz", "rw")
    limits = RateLimits(per_minute=30, per_hour=1000, per_day=10_000, max_wait=0)
    budget = shared_budget(pg_url, client_id, limits)
    client = Client(client_id, secret, base_url=sandbox.base_url("anz"), environ={}, budget=budget)

    def one(_: int) -> bool:
        try:
            client.get("/api/v1/entities", {"pageNumber": 1})
        except RateLimitError:
            return False
        return True

    try:
        started = time.monotonic()
        with ThreadPoolExecutor(THREADS) as pool:
            admitted = sum(pool.map(one, range(80)))
        assert time.monotonic() - started < 120  # refused at once (max_wait=0), never waited
    finally:
        client.close()
        budget.close()

    assert admitted == 30
    assert len(sandbox.admin("GET", "/_admin/requests")) == 30
