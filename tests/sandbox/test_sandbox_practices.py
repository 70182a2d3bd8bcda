"""``sandbox --practices N``: each practice its own credentials, budget, records, webhooks;
``--latency`` / ``--jitter`` hold every answer back.

A sandbox of three practices per region is started for this module, over real HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests

from practiceflow.sandbox import SandboxConfig, start_sandbox
from practiceflow.sandbox.config import RateLimits, parse_duration, practice_credential
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

LATENCY = 0.2


@pytest.fixture(scope="module")
def many() -> Iterator[SandboxHandle]:
    config = SandboxConfig(
        practices=3, entities=5, latency=LATENCY, rate_limits=RateLimits(3, 100, 1000)
    )
    with start_sandbox(config) as handle:
        yield handle


def _session(number: int, region: str = "anz") -> requests.Session:
    credential = practice_credential(number, region)
    session = requests.Session()
    session.trust_env = False
    session.headers.update(
        {"X-SVC-Auth-ID": credential.client_id, "X-SVC-Auth-Key": credential.secret}
    )
    return session


def _keys(sandbox: SandboxHandle, number: int) -> set[str]:
    with _session(number) as api:
        answer = api.get(sandbox.base_url() + "/api/v1/entities/list", timeout=10)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    rows = body["data"] if isinstance(body, dict) else body
    return {row["entityKey"] for row in rows}


def test_each_practice_has_its_own_credentials_and_records(many: SandboxHandle) -> None:
    sandbox = many
    sandbox.reset()
    first, second = practice_credential(1, "anz"), practice_credential(2, "anz")
    assert first.client_id == "5a4db0c0-0001-4000-8000-000000000011"
    assert second.secret == "sandbox-p2-anz-rw-secret"
    seeded = [_keys(sandbox, number) for number in range(3)]
    assert all(len(keys) == 5 for keys in seeded)
    assert not seeded[0] & seeded[1]
    assert not seeded[1] & seeded[2]
    made = sandbox.admin(
        "POST", "/_admin/entities", {"entityType": "Company", "entityName": "Only In One"},
        practice=1,
    )  # fmt: skip
    assert made["entityKey"] in _keys(sandbox, 1)
    assert made["entityKey"] not in _keys(sandbox, 0) | _keys(sandbox, 2)
    rows = sandbox.admin("GET", "/_admin/records/entities", practice=1)
    assert made["entityKey"] in {row["entityKey"] for row in rows}
    # A practice's credentials work in its region only, as practice 0's do.
    with _session(1) as api:
        elsewhere = api.get(sandbox.base_url("uk") + "/api/v1/auth/validate", timeout=10)
    assert elsewhere.status_code == 401


def test_a_practice_spending_its_budget_leaves_the_others_theirs(many: SandboxHandle) -> None:
    sandbox = many
    sandbox.reset()
    # Windows follow the sandbox clock's minutes: start just after one begins, so that the
    # four requests share it however slowly this machine sends them.
    offset = sandbox.admin("GET", "/_admin/clock")["offset"]
    sandbox.admin("POST", "/_admin/clock", {"advance": 61 - (time.time() + offset) % 60})
    url = sandbox.base_url() + "/api/v1/auth/validate"
    with _session(1) as one, _session(2) as two:
        statuses = [one.get(url, timeout=10).status_code for _ in range(4)]
        other = two.get(url, timeout=10)
    assert statuses == [200, 200, 200, 429]
    assert other.status_code == 200
    assert other.headers["X-RateLimit-Remaining"] == "2"


def test_webhook_subscriptions_are_per_practice(many: SandboxHandle) -> None:
    sandbox = many
    sandbox.reset()
    body = {"webhookEvent": "client.created", "targetUrl": "http://127.0.0.1:9/hooks/x"}
    with _session(1) as one, _session(2) as two:
        made = one.post(sandbox.base_url() + "/api/v1/webhooks", json=body, timeout=10)
        assert made.status_code == 201, made.text
        mine = one.get(sandbox.base_url() + "/api/v1/webhooks", timeout=10).json()
        theirs = two.get(sandbox.base_url() + "/api/v1/webhooks", timeout=10).json()
    assert [row["id"] for row in mine] == [made.json()["id"]]
    assert theirs == []
    assert sandbox.admin("GET", "/_admin/records/subscriptions", practice=2) == []


def test_every_api_answer_is_held_back_by_the_latency(many: SandboxHandle) -> None:
    sandbox = many
    sandbox.reset()
    with _session(2) as api:
        started = time.monotonic()
        answer = api.get(sandbox.base_url() + "/api/v1/auth/validate", timeout=10)
        took = time.monotonic() - started
    assert answer.status_code == 200
    assert took >= LATENCY  # a lower bound only: a busy machine can only add to it


def test_an_unknown_practice_is_refused_by_the_admin_surface(many: SandboxHandle) -> None:
    with pytest.raises(requests.HTTPError) as refused:
        many.admin("GET", "/_admin/records/entities", practice=3)
    assert refused.value.response.status_code == 400
    assert "expected 0 to 2" in refused.value.response.text


@pytest.mark.parametrize(
    ("text", "seconds"), [("150ms", 0.15), ("0.15s", 0.15), ("0.15", 0.15), ("0ms", 0.0)]
)
def test_durations_are_read_in_milliseconds_or_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["fast", "-5ms", "61s"])
def test_a_bad_duration_is_refused_with_what_would_be_valid(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_duration(text)
