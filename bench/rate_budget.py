"""Rate-budget efficiency: a full import of 10,000 entities (every list page, then every
entity's detail: 10,100 requests) under the spec's default limits (60/min, 1000/h,
10000/day) on both sides, with time simulated.

The sandbox runs in this process; its clock and the client's budget clock are the same
fake clock, and the client's ``sleep`` advances it, so a 24-hour import runs in seconds of
real time. The theoretical minimum is the finish time of the greedy schedule (each request
at the earliest moment the three rolling windows allow), which is optimal for sliding
windows. Prints achieved / minimum (target under 1.05) and the number of 429s (target 0).
"""

from __future__ import annotations

import bisect
import json
import sys
import time

from practiceflow.api import Client, RateLimits
from practiceflow.testing import running_sandbox

ENTITIES = 10_000
WINDOWS = ((60, 60.0), (1000, 3600.0), (10_000, 86_400.0))
TARGET = 1.05


def theoretical_minimum(requests: int) -> float:
    """Finish time of the earliest-possible schedule under the three rolling windows."""
    sent: list[float] = []
    t = 0.0
    for _ in range(requests):
        while True:
            later = t
            for limit, span in WINDOWS:
                # the request `limit` back must have left the window (t - span, t]
                if len(sent) >= limit:
                    oldest = sent[-limit]
                    if oldest > t - span:
                        later = max(later, oldest + span)
            if later == t:
                break
            t = later
        bisect.insort(sent, t)
    return t


def main() -> int:
    """Run the import and print the figures (exit 0 even above target: not a test)."""
    fake = [1_750_000_000.0]  # a fixed moment; the sandbox and the budget read it

    def clock() -> float:
        return fake[0]

    def sleep(seconds: float) -> None:
        fake[0] += max(seconds, 0.0)

    with running_sandbox(entities=ENTITIES) as sandbox:
        sandbox.state.clock.now = clock  # type: ignore[method-assign]
        client_id, secret = sandbox.credentials("anz", "rw")
        limits = RateLimits(max_wait=3 * 86_400.0)  # spec defaults; may wait a day
        started_real = time.perf_counter()
        start = fake[0]
        with Client(
            client_id,
            secret,
            base_url=sandbox.base_url("anz"),
            limits=limits,
            clock=clock,
            sleep=sleep,
            timeout=30,
        ) as client:
            keys = [row["entityKey"] for row in client.paginate("/api/v1/entities")]
            for key in keys:
                client.get(f"/api/v1/entities/{key}")
        achieved = fake[0] - start
        log = sandbox.state.request_log()
    real = time.perf_counter() - started_real
    requests = len(log)
    too_many = sum(1 for row in log if row.get("status") == 429)
    minimum = theoretical_minimum(requests - too_many)
    ratio = achieved / minimum if minimum else float("nan")
    print(f"entities imported:        {len(keys)}")
    print(f"requests sent:            {requests} ({too_many} answered 429)")
    print(f"achieved (simulated):     {achieved:,.0f} s ({achieved / 3600:.2f} h)")
    print(f"theoretical minimum:      {minimum:,.0f} s ({minimum / 3600:.2f} h)")
    print(f"achieved / minimum:       {ratio:.4f} (target < {TARGET})")
    print(f"real time:                {real:.1f} s")
    result = {
        "name": "rate-budget efficiency (10,000-entity import, spec limits, simulated time)",
        "figure": round(ratio, 4),
        "unit": "x of theoretical minimum",
        "baseline": f"greedy optimum {minimum:,.0f} s",
        "target": f"< {TARGET}, zero 429s",
        "measured": f"{achieved:,.0f} s simulated, {requests} requests, {too_many} x 429",
        "ok": ratio < TARGET and too_many == 0 and len(keys) == ENTITIES,
    }
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
