"""The client against the local sandbox, over real HTTP on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from practiceflow.api import Client, CredentialCheck, EntitySummary
from practiceflow.errors import AuthError, NotFoundError, WriteAccessError

pytestmark = pytest.mark.integration


def _client(sandbox: Any, region: str = "anz", access: str = "rw", **kwargs: Any) -> Client:
    client_id, secret = sandbox.credentials(region, access)
    return Client(client_id, secret, base_url=sandbox.base_url(region), environ={}, **kwargs)


@pytest.mark.parametrize("auth_method", ["header", "basic"])
def test_both_auth_methods_validate(sandbox: Any, auth_method: str) -> None:
    with _client(sandbox, auth_method=auth_method) as client:
        check = client.validate()
    assert isinstance(check, CredentialCheck)
    assert check.authenticated is True
    assert check.can_write is True


def test_paginate_reads_every_entity_once(sandbox: Any) -> None:
    with _client(sandbox) as client:
        entities = [
            EntitySummary.model_validate(row) for row in client.paginate("/api/v1/entities")
        ]
        assert client.rate_limit_status is not None
    keys = {entity.entity_key for entity in entities}
    assert len(entities) == len(keys) > 0


def test_wrong_region_is_an_auth_error(sandbox: Any) -> None:
    client_id, secret = sandbox.credentials("anz", "rw")
    with (
        Client(client_id, secret, base_url=sandbox.base_url("uk"), environ={}) as client,
        pytest.raises(AuthError, match="region"),
    ):
        client.validate()


def test_read_only_write_is_a_write_access_error(sandbox: Any) -> None:
    body = {"targetUrl": "https://hooks.test/x", "webhookEvent": "proposal.accepted"}
    with _client(sandbox, access="ro") as client, pytest.raises(WriteAccessError):
        client.post("/api/v1/webhooks", json=body)


def test_unknown_entity_is_not_found_with_problem_details(sandbox: Any) -> None:
    path = "/api/v1/entities/00000000-0000-0000-0000-000000000000/integrations"
    with _client(sandbox) as client, pytest.raises(NotFoundError) as info:
        client.get(path)
    assert info.value.path == path
    assert info.value.problem.get("status") == 404
