"""Requests per second of an entities list page at 1,000 and 100,000 entities.

Runs the sandbox in a background thread on 127.0.0.1, authenticates with its throwaway
read-write credentials, and times page 1, a page deep inside the list, and a deep page of
a ``lastUpdated``-filtered list. The ratio of the 1,000 to the 100,000 figures shows
whether the list cost grows with size (target: under 2x). Runtime: well under a minute.
"""

from __future__ import annotations

import time

import requests

from practiceflow.sandbox.config import RateLimits
from practiceflow.testing import running_sandbox

SECONDS_PER_CASE = 1.5
UNLIMITED = RateLimits(10**9, 10**9, 10**9)


def _rate(session: requests.Session, url: str, params: dict[str, str | int]) -> float:
    session.get(url, params=params, timeout=30).raise_for_status()  # warm up
    count = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < SECONDS_PER_CASE:
        response = session.get(url, params=params, timeout=30)
        response.raise_for_status()
        count += 1
    return count / elapsed


def measure(entities: int) -> dict[str, float]:
    """Requests per second of each case with ``entities`` per region.

    Args:
        entities: how many entities to seed.

    Returns:
        Requests per second by case name.
    """
    with running_sandbox(entities=entities, rate_limits=UNLIMITED) as sandbox:
        client_id, secret = sandbox.credentials("anz", "rw")
        session = requests.Session()
        session.trust_env = False
        session.headers.update({"X-SVC-Auth-ID": client_id, "X-SVC-Auth-Key": secret})
        url = sandbox.base_url("anz") + "/api/v1/entities"
        seeding = time.perf_counter()
        session.get(url, timeout=60).raise_for_status()
        print(f"  {entities:>7} entities seeded in {time.perf_counter() - seeding:.2f}s")
        deep = max(1, entities // 100 // 2)
        rows = session.get(url, params={"pageNumber": deep}, timeout=30).json()
        middle = sorted(row["lastUpdated"] for row in rows)[0]
        # a filter that keeps about half of the entities, then a page deep inside it
        half_deep = max(1, deep // 2)
        return {
            "page 1": _rate(session, url, {"pageNumber": 1}),
            "deep page (middle)": _rate(session, url, {"pageNumber": deep}),
            "lastUpdated + deep page": _rate(
                session, url, {"lastUpdated": middle, "pageNumber": half_deep}
            ),
        }


def main() -> None:
    """Print the figures and the ratio per case."""
    small = measure(1_000)
    large = measure(100_000)
    print(f"\n{'entities list, 100 rows':<26}{'1k req/s':>10}{'100k req/s':>12}{'ratio':>8}")
    worst = 0.0
    for name, fast in small.items():
        ratio = fast / large[name]
        worst = max(worst, ratio)
        print(f"{name:<26}{fast:>10.0f}{large[name]:>12.0f}{ratio:>8.2f}")
    print(f"\nworst ratio 1k/100k: {worst:.2f} (target < 2)")


if __name__ == "__main__":
    main()
