"""Rate limits (spec 8) and injected faults (429, 500, slow, dropped connection)."""

from __future__ import annotations

import math
import time

import pytest
import requests

from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration


def _limits(sandbox: SandboxHandle, **limits: int) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": limits})


def test_every_answer_carries_rate_limit_headers(api) -> None:
    first = api.get("/api/v1/auth/validate")
    second = api.get("/api/v1/entities")
    assert first.headers["X-RateLimit-Limit"] == "60"
    assert int(first.headers["X-RateLimit-Remaining"]) == 59
    assert int(second.headers["X-RateLimit-Remaining"]) == 58
    assert 1 <= int(first.headers["X-RateLimit-Reset"]) <= 60
    assert "Retry-After" not in first.headers
    assert api.get("/api/v1/entities", params={"pageNumber": 0}).headers["X-RateLimit-Remaining"]


def test_minute_window_429_with_headers_and_problem_body(sandbox: SandboxHandle, api) -> None:
    _limits(sandbox, perMinute=3)
    statuses = [api.get("/api/v1/auth/validate").status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    refused = api.get("/api/v1/auth/validate")
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    assert refused.headers["X-RateLimit-Limit"] == "3"
    body = refused.json()
    assert body["status"] == 429
    assert body["title"] == "Too Many Requests"


def test_budget_is_per_client_id(sandbox: SandboxHandle, api, ro_api) -> None:
    _limits(sandbox, perMinute=2)
    api.get("/api/v1/auth/validate")
    api.get("/api/v1/auth/validate")
    assert api.get("/api/v1/auth/validate").status_code == 429
    assert ro_api.get("/api/v1/auth/validate").status_code == 200


def test_moving_the_clock_renews_the_minute_but_not_the_hour(sandbox: SandboxHandle, api) -> None:
    # The windows are fixed, on the sandbox clock: start it 10 s into an hour, so that
    # moving on 61 s never crosses into the next hour (run within a minute of a full hour,
    # the test would otherwise see the hour renewed too).
    now = time.time()
    sandbox.admin("POST", "/_admin/clock", {"offset": math.ceil(now / 3600) * 3600 + 10 - now})
    _limits(sandbox, perMinute=2, perHour=3)
    assert [api.get("/api/v1/auth/validate").status_code for _ in range(3)] == [200, 200, 429]
    sandbox.admin("POST", "/_admin/clock", {"advance": 61})
    assert api.get("/api/v1/auth/validate").status_code == 200
    refused = api.get("/api/v1/auth/validate")
    assert refused.status_code == 429
    assert refused.headers["X-RateLimit-Limit"] == "3"  # the hour window is the one spent
    assert int(refused.headers["Retry-After"]) > 60


def test_day_window(sandbox: SandboxHandle, api) -> None:
    _limits(sandbox, perMinute=100, perHour=100, perDay=2)
    assert [api.get("/api/v1/auth/validate").status_code for _ in range(3)] == [200, 200, 429]


def test_injected_429_with_and_without_retry_after(sandbox: SandboxHandle, api) -> None:
    sandbox.admin("POST", "/_admin/faults", {"kind": "429", "retryAfter": 7})
    sandbox.admin("POST", "/_admin/faults", {"kind": "rate_limit"})
    with_header = api.get("/api/v1/entities")
    without = api.get("/api/v1/entities")
    assert with_header.status_code == 429
    assert with_header.headers["Retry-After"] == "7"
    assert without.status_code == 429
    assert "Retry-After" not in without.headers
    assert without.json()["title"] == "Too Many Requests"
    assert api.get("/api/v1/entities").status_code == 200


def test_injected_500_matches_method_and_path_for_n_requests(sandbox: SandboxHandle, api) -> None:
    sandbox.admin(
        "POST",
        "/_admin/faults",
        {"kind": "500", "count": 2, "method": "GET", "pathPrefix": "/api/v1/groups"},
    )
    assert api.get("/api/v1/entities").status_code == 200
    first = api.get("/api/v1/groups/list")
    assert first.status_code == 500
    assert first.json()["status"] == 500
    assert api.get("/api/v1/groups/list").status_code == 500
    assert api.get("/api/v1/groups/list").status_code == 200
    log = sandbox.admin("GET", "/_admin/requests")
    assert [row["status"] for row in log if row["path"] == "/api/v1/groups/list"] == [500, 500, 200]


def test_slow_fault_holds_the_answer_back(sandbox: SandboxHandle, api) -> None:
    sandbox.admin("POST", "/_admin/faults", {"kind": "slow", "delay": 0.4})
    started = time.perf_counter()
    assert api.get("/api/v1/auth/validate").status_code == 200
    assert time.perf_counter() - started >= 0.4
    sandbox.admin("POST", "/_admin/faults", {"kind": "slow", "delay": 1.0})
    with pytest.raises(requests.Timeout):
        api.get("/api/v1/auth/validate", timeout=0.2)


def test_drop_fault_acts_then_the_client_sees_a_connection_error(
    sandbox: SandboxHandle, api
) -> None:
    sandbox.admin(
        "POST",
        "/_admin/faults",
        {"kind": "drop", "method": "POST", "pathPrefix": "/anz/api/v1/entities"},
    )
    with pytest.raises(requests.ConnectionError):
        api.post("/api/v1/entities", {"entityType": "CO", "entityName": "Half Done Pty"})
    names = [row["entityName"] for row in sandbox.admin("GET", "/_admin/records/entities")]
    assert "Half Done Pty" in names  # the server acted
    assert api.get("/api/v1/auth/validate").status_code == 200  # and serves the next request


def test_request_log_records_method_path_client_and_status(sandbox: SandboxHandle, api) -> None:
    api.get("/api/v1/entities", params={"pageNumber": 2})
    anonymous = requests.Session()
    anonymous.trust_env = False
    anonymous.get(sandbox.base_url() + "/api/v1/entities", timeout=5)
    log = sandbox.admin("GET", "/_admin/requests")
    client_id, _ = sandbox.credentials()
    assert log[0]["method"] == "GET"
    assert log[0]["path"] == "/api/v1/entities"
    assert log[0]["clientId"] == client_id
    assert log[0]["status"] == 200
    assert log[0]["query"] == "pageNumber=2"
    assert log[1]["clientId"] is None
    assert log[1]["status"] == 401


def test_admin_surface_requires_its_token(sandbox: SandboxHandle) -> None:
    session = requests.Session()
    session.trust_env = False
    assert session.get(sandbox.url + "/_admin", timeout=5).status_code == 401
    wrong = session.get(sandbox.url + "/_admin", headers={"X-Admin-Token": "x"}, timeout=5)
    assert wrong.status_code == 401
    assert sandbox.admin("GET", "/_admin")["regions"] == ["anz", "uk", "za"]


def test_clock_moves_both_ways(sandbox: SandboxHandle, api) -> None:
    before = api.get("/api/v1/auth/validate").json()["timestamp"]
    sandbox.admin("POST", "/_admin/clock", {"advance": -86400})
    earlier = api.get("/api/v1/auth/validate").json()["timestamp"]
    assert earlier < before
    sandbox.admin("POST", "/_admin/clock", {"offset": 0})
    created = api.post("/api/v1/entities", {"entityType": "IND", "entityName": "Now"}).json()
    assert created["lastUpdated"] >= before
