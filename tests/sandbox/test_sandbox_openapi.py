"""The sandbox's own /openapi.json, and schemathesis against it: no 5xx from any request."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from practiceflow.sandbox.config import RateLimits
from practiceflow.sandbox.routes import ALL_OPS
from practiceflow.testing import SandboxHandle, running_sandbox

pytestmark = pytest.mark.integration

EXAMPLES_PER_OPERATION = 12


@pytest.fixture(scope="module")
def roomy_sandbox() -> Iterator[SandboxHandle]:
    """A sandbox whose rate limits do not get in the way of generated traffic."""
    with running_sandbox(
        rate_limits=RateLimits(10**6, 10**6, 10**6), webhook_retry_scale=0
    ) as handle:
        yield handle


def _document(sandbox: SandboxHandle) -> dict:
    session = requests.Session()
    session.trust_env = False
    return session.get(sandbox.url + "/openapi.json", timeout=10).json()


def test_document_describes_every_route_under_one_region_with_both_auth_schemes(
    roomy_sandbox: SandboxHandle,
) -> None:
    document = _document(roomy_sandbox)
    assert document["openapi"].startswith("3.1")
    schemes = document["components"]["securitySchemes"]
    assert schemes["basic"] == {"type": "http", "scheme": "basic"}
    assert {schemes["svcAuthId"]["name"], schemes["svcAuthKey"]["name"]} == {
        "X-SVC-Auth-ID",
        "X-SVC-Auth-Key",
    }
    operations = sum(len(item) for item in document["paths"].values())
    assert operations == len(ALL_OPS)
    assert all(path.startswith("/anz/api/v1/") for path in document["paths"])


def test_document_points_to_the_admin_surface_it_does_not_describe(
    roomy_sandbox: SandboxHandle,
) -> None:
    description = _document(roomy_sandbox)["info"]["description"]
    assert "GET /_admin" in description
    assert "practiceflow sandbox --help" in description
    listed = roomy_sandbox.admin("GET", "/_admin")  # the route it names answers
    assert any("/_admin/faults" in str(route) for route in listed["routes"])


def test_generated_requests_never_get_a_server_error(roomy_sandbox: SandboxHandle) -> None:
    sandbox = roomy_sandbox
    client_id, secret = sandbox.credentials("anz", "rw")
    auth = {"X-SVC-Auth-ID": client_id, "X-SVC-Auth-Key": secret}
    schema = schemathesis.openapi.from_url(sandbox.url + "/openapi.json")
    session = requests.Session()
    session.trust_env = False
    started = time.monotonic()
    checked = 0
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: schemathesis.Case) -> None:
            case.headers = {**(case.headers or {}), **auth}
            case.call_and_validate(
                base_url=sandbox.url, session=session, checks=[not_a_server_error]
            )

        run()
        checked += 1
    assert checked == len(ALL_OPS)
    assert time.monotonic() - started < 60
    log = sandbox.admin("GET", "/_admin/requests")
    assert log
    assert all(row["status"] < 500 for row in log)
