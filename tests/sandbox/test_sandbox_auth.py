"""Authentication and write access of the sandbox (spec section 5) over real HTTP."""

from __future__ import annotations

import base64
import re

import pytest
import requests

from practiceflow.sandbox.routes import ALL_OPS
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration


def _get(url: str, headers: dict[str, str]) -> requests.Response:
    session = requests.Session()
    session.trust_env = False
    return session.get(url, headers=headers, timeout=10)


def _basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


@pytest.mark.parametrize("method", ["headers", "basic"])
def test_validate_accepts_both_auth_methods(sandbox: SandboxHandle, make_api, method: str) -> None:
    response = make_api(method=method).get("/api/v1/auth/validate")
    assert response.status_code == 200
    body = response.json()
    client_id, _ = sandbox.credentials("anz", "rw")
    assert body["authenticated"] is True
    assert body["clientID"] == client_id
    assert body["canWrite"] is True
    assert set(body) == {
        "authenticated",
        "message",
        "clientID",
        "clientName",
        "canWrite",
        "timestamp",
    }


def test_read_only_client_reads_and_reports_cannot_write(ro_api) -> None:
    assert ro_api.get("/api/v1/auth/validate").json()["canWrite"] is False
    assert ro_api.get("/api/v1/entities").status_code == 200


def _unauthorised_cases(sandbox: SandboxHandle) -> dict[str, dict[str, str]]:
    rw_id, rw_secret = sandbox.credentials("anz", "rw")
    inactive_id, inactive_secret = sandbox.credentials("anz", "inactive")
    uk_id, uk_secret = sandbox.credentials("uk", "rw")
    return {
        "missing": {},
        "only id": {"X-SVC-Auth-ID": rw_id},
        "wrong secret": {"X-SVC-Auth-ID": rw_id, "X-SVC-Auth-Key": "nope"},
        "unknown id": {
            "X-SVC-Auth-ID": "00000000-0000-4000-8000-000000000000",
            "X-SVC-Auth-Key": rw_secret,
        },
        "inactive": {"X-SVC-Auth-ID": inactive_id, "X-SVC-Auth-Key": inactive_secret},
        "other region": {"X-SVC-Auth-ID": uk_id, "X-SVC-Auth-Key": uk_secret},
        "other region basic": {"Authorization": _basic(uk_id, uk_secret)},
        "mixed methods": {
            "X-SVC-Auth-ID": rw_id,
            "X-SVC-Auth-Key": rw_secret,
            "Authorization": _basic(rw_id, rw_secret),
        },
        "basic wrong secret": {"Authorization": _basic(rw_id, "nope")},
        "basic not base64": {"Authorization": "Basic %%%"},
        "bearer": {"Authorization": "Bearer abc"},
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "only id",
        "wrong secret",
        "unknown id",
        "inactive",
        "other region",
        "other region basic",
        "mixed methods",
        "basic wrong secret",
        "basic not base64",
        "bearer",
    ],
)
def test_unacceptable_credentials_get_401_problem_details(
    sandbox: SandboxHandle, case: str
) -> None:
    headers = _unauthorised_cases(sandbox)[case]
    response = _get(sandbox.base_url("anz") + "/api/v1/auth/validate", headers)
    assert response.status_code == 401
    assert response.headers["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == 401
    assert body["title"] == "Unauthorized"
    assert body["instance"] == "/anz/api/v1/auth/validate"
    assert {"type", "detail"} <= set(body)
    _, secret = sandbox.credentials("anz", "rw")
    assert secret not in response.text


def test_each_region_accepts_only_its_own_credentials(make_api) -> None:
    for region in ("anz", "uk", "za"):
        assert make_api(region=region).get("/api/v1/auth/validate").status_code == 200
    uk_keys = {row["entityKey"] for row in make_api(region="uk").get("/api/v1/entities").json()}
    anz_keys = {row["entityKey"] for row in make_api().get("/api/v1/entities").json()}
    assert not uk_keys & anz_keys


def _concrete(path: str) -> str:
    path = re.sub(r"{\w+:uuid}", "11111111-1111-4111-8111-111111111111", path)
    return re.sub(r"{\w+:int}", "1", path)


WRITE_OPS = [op for op in ALL_OPS if op.method not in ("GET", "HEAD")]


@pytest.mark.parametrize("op", WRITE_OPS, ids=[f"{op.method} {op.path}" for op in WRITE_OPS])
def test_read_only_client_gets_403_on_every_write_route(sandbox: SandboxHandle, ro_api, op):
    before = len(sandbox.state.practice("anz").entities)
    response = ro_api.request(op.method, _concrete(op.path), json={})
    assert response.status_code == 403
    assert response.json()["title"] == "Forbidden"
    assert len(sandbox.state.practice("anz").entities) == before


def test_write_routes_cover_every_write_the_spec_details() -> None:
    paths = {(op.method, op.path) for op in WRITE_OPS}
    for expected in [
        ("POST", "/api/v1/entities"),
        ("POST", "/api/v1/bills"),
        ("POST", "/api/v1/webhooks"),
        ("DELETE", "/api/v1/webhooks/{id:uuid}"),
        ("POST", "/api/v1/onboardings/create"),
        ("POST", "/api/v1/eforms/send"),
        ("POST", "/api/v1/leads/{entityKey:uuid}/convert-to-client"),
    ]:
        assert expected in paths
