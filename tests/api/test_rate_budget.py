"""The rate budget: three windows, Retry-After pauses, caps; all on a fake clock."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import responses

from practiceflow.api import Client, RateBudget, RateLimits, RetryPolicy
from practiceflow.budget.rate_budget import parse_retry_after
from practiceflow.errors import ConfigError, RateLimitError
from practiceflow.testing import FakeClock

from .conftest import BASE

GROUPS = f"{BASE}/api/v1/groups/list"


def _budget(clock: FakeClock, limits: RateLimits | None = None) -> RateBudget:
    return RateBudget(limits, clock=clock.monotonic, sleep=clock.sleep)


def test_61st_call_in_a_minute_waits_for_the_window(
    rsps: responses.RequestsMock, client: Client, clock: FakeClock
) -> None:
    sent_at: list[float] = []

    def answer(_request: object) -> tuple[int, dict[str, str], str]:
        sent_at.append(clock.monotonic())
        return 200, {}, "[]"

    rsps.add_callback(responses.GET, GROUPS, callback=answer)
    for _ in range(61):
        client.get("/api/v1/groups/list")
    assert sent_at[:60] == [1000.0] * 60
    assert clock.sleeps == [pytest.approx(60.001)]
    assert sent_at[60] >= 1000.0 + 60


@pytest.mark.parametrize(
    ("limits", "calls", "window"),
    [
        pytest.param(RateLimits(), 1001, 3600, id="hour"),
        pytest.param(RateLimits(), 10001, 86400, id="day"),
        pytest.param(RateLimits(per_minute=5, per_hour=20, per_day=50), 51, 86400, id="custom-day"),
    ],
)
def test_longer_windows_hold_too(
    clock: FakeClock, limits: RateLimits, calls: int, window: int
) -> None:
    budget = _budget(clock, limits)
    admitted: list[float] = []
    for _ in range(calls):
        budget.acquire("GET", "/x")
        admitted.append(clock.monotonic())
    # The last call waited until the first one left the longest window it shares.
    assert admitted[-1] - admitted[0] >= window
    # ... and never more often than the minute window allows in any rolling minute.
    per_minute = limits.per_minute
    for i in range(per_minute, len(admitted)):
        assert admitted[i] - admitted[i - per_minute] >= 60


def test_a_pause_holds_every_request_of_the_budget(clock: FakeClock) -> None:
    budget = _budget(clock)
    budget.pause_for(7)
    assert budget.paused_until == 1007
    assert budget.acquire("GET", "/a") == 7
    assert budget.acquire("POST", "/b") == 0
    assert clock.sleeps == [7]


def test_a_pause_is_never_shorter_than_the_floor(clock: FakeClock) -> None:
    budget = _budget(clock, RateLimits(retry_after_floor=2.5))
    budget.pause_for(0)
    budget.acquire("GET", "/a")
    assert clock.sleeps == [2.5]


def test_429_with_retry_after_pauses_then_retries(
    rsps: responses.RequestsMock, client: Client, clock: FakeClock
) -> None:
    rsps.get(GROUPS, status=429, headers={"Retry-After": "7"}, json={"status": 429})
    sent_at: list[float] = []

    def answer(_request: object) -> tuple[int, dict[str, str], str]:
        sent_at.append(clock.monotonic())
        return 200, {}, "[1]"

    rsps.add_callback(responses.GET, GROUPS, callback=answer)
    assert client.get("/api/v1/groups/list") == [1]
    assert clock.sleeps == [7]
    assert sent_at == [1007]


def test_retry_after_zero_is_not_a_busy_loop(
    rsps: responses.RequestsMock, make_client: Callable[..., Client], clock: FakeClock
) -> None:
    rsps.get(GROUPS, status=429, headers={"Retry-After": "0"})
    client = make_client(retry=RetryPolicy(max_rate_limited=5))
    with pytest.raises(RateLimitError, match="gave up after 6 answers of 429"):
        client.get("/api/v1/groups/list")
    assert clock.sleeps == [1.0] * 5
    assert len(rsps.calls) == 6


def test_429_without_retry_after_backs_off_exponentially_with_jitter(
    rsps: responses.RequestsMock, make_client: Callable[..., Client], clock: FakeClock
) -> None:
    rsps.get(GROUPS, status=429)
    policy = RetryPolicy(max_rate_limited=6, backoff_base=2, backoff_max=10)
    client = make_client(retry=policy, rng=random.Random(7))
    with pytest.raises(RateLimitError):
        client.get("/api/v1/groups/list")
    ceilings = [2, 4, 8, 10, 10, 10]
    assert len(clock.sleeps) == len(ceilings)
    for slept, ceiling in zip(clock.sleeps, ceilings, strict=True):
        assert max(1.0, ceiling / 2) <= slept <= ceiling
    assert len(set(clock.sleeps)) > 1


def test_backoff_jitter_stays_within_bounds() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=30)
    rng = random.Random(0)
    for attempt in range(1, 12):
        ceiling = min(30, 0.5 * 2 ** (attempt - 1))
        draws = [policy.backoff(attempt, rng) for _ in range(200)]
        assert min(draws) >= ceiling / 2
        assert max(draws) <= ceiling
        assert len(set(draws)) > 100


def test_retry_after_past_the_wait_cap_raises_at_once(
    rsps: responses.RequestsMock, make_client: Callable[..., Client], clock: FakeClock
) -> None:
    rsps.get(GROUPS, status=429, headers={"Retry-After": "120"})
    client = make_client(limits=RateLimits(max_wait=30))
    with pytest.raises(RateLimitError, match=r"wait cap \(RateLimits.max_wait=30s\)") as info:
        client.get("/api/v1/groups/list")
    assert info.value.retry_after == 120
    assert clock.sleeps == []
    assert len(rsps.calls) == 1


def test_total_wait_cap_counts_every_pause(
    rsps: responses.RequestsMock, make_client: Callable[..., Client], clock: FakeClock
) -> None:
    rsps.get(GROUPS, status=429, headers={"Retry-After": "20"})
    client = make_client(limits=RateLimits(max_wait=50))
    with pytest.raises(RateLimitError, match="wait cap"):
        client.get("/api/v1/groups/list")
    assert clock.sleeps == [20, 20]
    assert len(rsps.calls) == 3


def test_local_budget_past_the_cap_raises_without_sending(
    rsps: responses.RequestsMock, make_client: Callable[..., Client], clock: FakeClock
) -> None:
    rsps.get(GROUPS, json=[])
    limits = RateLimits(per_minute=1, per_hour=2, per_day=3, max_wait=10)
    client = make_client(limits=limits)
    client.get("/api/v1/groups/list")
    with pytest.raises(RateLimitError, match="local rate budget") as info:
        client.get("/api/v1/groups/list")
    assert info.value.retry_after == pytest.approx(60.001)
    assert len(rsps.calls) == 1
    assert clock.sleeps == []


def test_clients_sharing_a_budget_share_the_pause(
    rsps: responses.RequestsMock, make_client: Callable[..., Client], clock: FakeClock
) -> None:
    budget = _budget(clock)
    first = make_client(budget=budget)
    second = make_client(budget=budget)
    rsps.get(GROUPS, status=429, headers={"Retry-After": "9999"})
    rsps.get(f"{BASE}/api/v1/users/list", json=[])
    with pytest.raises(RateLimitError):
        first.get("/api/v1/groups/list")
    # The first gave up (past its cap) without pausing; a pause it did take is shared:
    budget.pause_for(5)
    second.get("/api/v1/users/list")
    assert clock.sleeps == [5]


def test_rate_limit_headers_are_exposed(rsps: responses.RequestsMock, client: Client) -> None:
    assert client.rate_limit_status is None
    rsps.get(
        GROUPS,
        json=[],
        headers={
            "X-RateLimit-Limit": "60",
            "X-RateLimit-Remaining": "41",
            "X-RateLimit-Reset": "1764",
        },
    )
    client.get("/api/v1/groups/list")
    status = client.rate_limit_status
    assert status is not None
    assert (status.limit, status.remaining, status.reset) == (60, 41, "1764")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7", 7.0),
        ("0", 0.0),
        ("1.5", 1.5),
        ("-3", 0.0),
        (None, None),
        ("", None),
        ("soon", None),
        ("nan", None),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
    ],
)
def test_retry_after_header_forms(value: str | None, expected: float | None) -> None:
    wall = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert parse_retry_after(value, wall_clock=lambda: wall) == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {"per_minute": 0},
        {"per_minute": 100, "per_hour": 50},
        {"per_minute": 60, "per_hour": 100000},
        {"max_wait": -1},
        {"per_day": True},
    ],
)
def test_inconsistent_limits_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="RateLimits"):
        RateLimits(**kwargs)  # type: ignore[arg-type]


def test_admitted_requests_are_reported_to_bookkeeping_and_a_failing_callback_is_harmless(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = [1000.0]
    budget = RateBudget(
        RateLimits(per_minute=2, per_hour=100, per_day=1000),
        clock=lambda: clock[0],
        sleep=lambda seconds: clock.__setitem__(0, clock[0] + seconds),
    )
    seen: list[float] = []
    budget.on_admit(lambda: seen.append(clock[0]))

    def broken() -> None:
        raise RuntimeError("disk full")

    budget.on_admit(broken)
    for _ in range(3):
        budget.acquire("GET", "/api/v1/entities")
    assert len(seen) == 3  # once per admitted request, the third after waiting
    assert seen[2] >= seen[0] + 60
    assert "bookkeeping failed" in caplog.text
