"""Engine overhead of running an action, against a hand-written ``requests`` call.

Two figures, each with its target:

1. **End to end, on the sandbox** (127.0.0.1, real HTTP): ``run_action`` (validate the
   input, run the checks, render, send with the Client, map and validate the output) against
   a hand-written ``requests`` session doing the same HTTP calls and parsing the JSON.
   Printed as the ratio of median times; target under 1.3x.
2. **Engine CPU per action, no network**: ``run_action`` against an in-memory client that
   answers at once, timed with ``time.process_time`` over many iterations; target under
   200 microseconds.

Modules are loaded once, before any timing. Runtime: about half a minute.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import requests

from practiceflow.api import ApiResponse, Client
from practiceflow.api import RateLimits as ClientLimits
from practiceflow.engine import run_action
from practiceflow.manifest import ActionModule, ModuleRegistry, load_modules
from practiceflow.sandbox.config import RateLimits
from practiceflow.testing import running_sandbox

ROUNDS = 300
CPU_ITERATIONS = 3000
UNLIMITED = RateLimits(10**9, 10**9, 10**9)
ENTITY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
CLIENT_INPUT = {"entityType": "Company", "entityName": "Bench Pty Ltd", "email": "a@example.com"}
LINES = [{"amount": 100, "taxPercent": 10, "narration": "Onboarding fee"}]


# -- end to end -------------------------------------------------------------------------------


def _hand_client(session: requests.Session, base: str) -> Any:
    response = session.post(base + "/api/v1/entities", json=dict(CLIENT_INPUT), timeout=30)
    response.raise_for_status()
    return response.json()


def _hand_bill(session: requests.Session, base: str, key: str) -> Any:
    entity = session.get(f"{base}/api/v1/entities/{key}", timeout=30)
    entity.raise_for_status()
    if entity.json().get("status") != "Active":
        raise SystemExit("the bench client is not Active")
    ledger = session.get(base + "/api/v1/bills/ledger/status", timeout=30)
    ledger.raise_for_status()
    body = {"entityKey": key, "billDate": "2024-05-01", "lineItems": LINES}
    response = session.post(base + "/api/v1/bills", json=body, timeout=30)
    response.raise_for_status()
    return response.json()


def _median_ms(func: Callable[[], Any], samples: list[float]) -> None:
    started = time.perf_counter()
    func()
    samples.append((time.perf_counter() - started) * 1000)


def end_to_end(registry: ModuleRegistry) -> dict[str, tuple[float, float]]:
    """Median milliseconds (engine, hand-written) per action, interleaved on one sandbox.

    Args:
        registry: the loaded modules.

    Returns:
        Action key -> (engine ms, hand-written ms).
    """
    with running_sandbox(rate_limits=UNLIMITED) as sandbox:
        client_id, secret = sandbox.credentials("anz", "rw")
        base = sandbox.base_url("anz")
        session = requests.Session()
        session.trust_env = False
        session.headers.update({"X-SVC-Auth-ID": client_id, "X-SVC-Auth-Key": secret})
        limits = ClientLimits(per_minute=10**6, per_hour=10**7, per_day=10**8)
        # Both sides use a session that ignores proxy settings of the environment, so the
        # comparison is of the engine, not of requests' environment lookups.
        engine_session = requests.Session()
        engine_session.trust_env = False
        with Client(
            client_id,
            secret,
            base_url=base,
            limits=limits,
            session=engine_session,
            environ={},
            profiles_file=Path("/nonexistent/profiles.toml"),
        ) as client:
            key = run_action("create_client", CLIENT_INPUT, client, registry=registry).output[
                "entityKey"
            ]
            bill = {"entityKey": key, "billDate": "2024-05-01", "lineItems": LINES}
            cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
                "create_client": (
                    lambda: run_action("create_client", CLIENT_INPUT, client, registry=registry),
                    lambda: _hand_client(session, base),
                ),
                "create_bill": (
                    lambda: run_action("create_bill", bill, client, registry=registry),
                    lambda: _hand_bill(session, base, key),
                ),
            }
            results: dict[str, tuple[float, float]] = {}
            for name, (engine, hand) in cases.items():
                for _ in range(20):  # warm up both paths
                    engine()
                    hand()
                engine_ms: list[float] = []
                hand_ms: list[float] = []
                for _ in range(ROUNDS):
                    _median_ms(engine, engine_ms)
                    _median_ms(hand, hand_ms)
                results[name] = (statistics.median(engine_ms), statistics.median(hand_ms))
    return results


# -- CPU without network ----------------------------------------------------------------------


class _Instant:
    """A client that answers from memory: only the engine's own work is timed."""

    def __init__(self, data: Any, status: int, reads: Mapping[str, Any]) -> None:
        self._response = ApiResponse(status, {"Location": "/api/v1/entities/x"}, data, "")
        self._reads = reads

    def request(self, method: str, path: str, **_: Any) -> ApiResponse:
        return self._response

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self._reads[path]

    def describe_request(self, method: str, path: str, **parts: Any) -> dict[str, Any]:
        return {"method": method, "url": path, **parts}


def _cpu_case(module: ActionModule) -> tuple[dict[str, Any], _Instant]:
    data = module.example_input()
    reads: dict[str, Any] = {
        f"/api/v1/entities/{ENTITY}": {"entityKey": ENTITY, "status": "Active"},
        "/api/v1/bills/ledger/status": {"connected": True},
        "/api/v1/bills/ledger/tax-rates": [{"rate": 10.0}, {"rate": 0.0}],
        "/api/v1/settings/lead-sources": [{"name": "Referral"}, {"name": "Website"}],
        "/api/v1/settings/lead-statuses": [{"name": "New"}],
    }
    if module.key == "create_bill":
        data["lineItems"] = [dict(line, extAccountID=200) for line in LINES]
    return data, _Instant(dict(module.sample), 201, reads)


def cpu_microseconds(keys: list[str]) -> dict[str, float]:
    """Engine CPU time per run, in microseconds, for each action (modules loaded afresh).

    Args:
        keys: the actions to time.

    Returns:
        Action key -> microseconds of CPU per run.
    """
    registry = load_modules()
    out: dict[str, float] = {}
    for key in keys:
        module = registry.actions[key]
        data, client = _cpu_case(module)
        run_action(module, data, client)  # warm up, and prove it runs cleanly
        started = time.process_time()
        for _ in range(CPU_ITERATIONS):
            run_action(module, data, client)
        out[key] = (time.process_time() - started) / CPU_ITERATIONS * 1e6
    return out


def main() -> int:
    """Run both measurements and print them with their targets; exit 0."""
    started = time.perf_counter()
    registry = load_modules()
    print(f"modules loaded once in {(time.perf_counter() - started) * 1000:.0f} ms")
    keys = ["create_lead", "create_client", "convert_lead", "create_bill"]

    print(f"\nend to end on the sandbox (median of {ROUNDS}, target ratio < 1.3x):")
    for name, (engine, hand) in end_to_end(registry).items():
        print(
            f"  {name:<14} engine {engine:6.2f} ms   hand-written {hand:6.2f} ms   "
            f"ratio {engine / hand:4.2f}x"
        )

    print(f"\nengine CPU per action, no network ({CPU_ITERATIONS} runs, target < 200 us):")
    cpu = cpu_microseconds(keys)
    for key in keys:
        print(f"  {key:<14} {cpu[key]:7.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
