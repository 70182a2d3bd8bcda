"""The cases of issue 29's "Done means" that every transport must pass, written once.

Each case takes the sandbox, the test's folder and a ``drive`` function of the transport
under test: ``drive(scenario, *flags)`` starts ``practiceflow mcp *flags`` (its log in
``tmp_path/server.log``, its store in ``tmp_path/state.db``), runs ``scenario`` with the
SDK's client connected to it, stops it and returns what the scenario returned. The stdio
and HTTP test modules each call every case with their own ``drive``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import mcp_types as types
from mcp_support import (
    PERSONAL,
    api_requests,
    as_text,
    bill_count,
    bill_input,
    confirmation,
    leaks,
    result_text,
)

from mcp import Client
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle

Scenario = Callable[[Client], Awaitable[Any]]


class Drive(Protocol):
    """Runs a scenario against a fresh ``practiceflow mcp`` started with ``flags``."""

    def __call__(self, scenario: Scenario, *flags: str) -> Any: ...


def bad_input_is_a_clear_tool_error_and_nothing_is_sent(
    sandbox: SandboxHandle, drive: Drive
) -> None:
    async def scenario(client: Client) -> list[types.CallToolResult]:
        return [
            await client.call_tool("find_clients", {"limit": "many", "entityCode": ""}),
            await client.call_tool("create_bill", {"entityKey": "acme", "lineItems": []}),
        ]

    search, write = drive(scenario, "--allow-writes")
    assert search.is_error
    assert "input for action 'find_clients' is not valid; nothing was sent" in result_text(search)
    assert "limit: got 'many'; expected an integer" in result_text(search)
    assert "entityCode" in result_text(search)
    assert write.is_error
    assert "entityKey: got 'acme'; expected a UUID" in result_text(write)
    assert "lineItems" in result_text(write)
    # Only the credentials check at start-up reached the API.
    assert [row["path"] for row in api_requests(sandbox)] == ["/api/v1/auth/validate"]


def a_write_is_refused_without_allow_writes_and_nothing_is_sent(
    sandbox: SandboxHandle, drive: Drive
) -> None:
    async def scenario(client: Client) -> types.CallToolResult:
        return await client.call_tool("create_bill", bill_input(sandbox))

    bills = bill_count(sandbox)
    result = drive(scenario)
    assert result.is_error
    assert "writes are off on this server, nothing was sent" in result_text(result)
    assert "--allow-writes" in result_text(result)
    assert bill_count(sandbox) == bills
    assert api_requests(sandbox, "POST") == []


def no_personal_value_in_results_logs_or_journaled_requests(
    sandbox: SandboxHandle, tmp_path: Path, drive: Drive
) -> None:
    client_input = {"entityType": "Individual", **PERSONAL}

    async def scenario(client: Client) -> list[types.CallToolResult]:
        preview = await client.call_tool("create_client", client_input)
        printed = (tmp_path / "server.log").read_text(encoding="utf-8")
        done = await client.call_tool("confirm_write", confirmation(preview, printed))
        found = await client.call_tool("find_clients", {"email": PERSONAL["email"]})
        wrong = await client.call_tool("create_client", {**client_input, "email": 5})
        return [preview, done, found, wrong]

    results = drive(scenario, "--allow-writes", "-v")
    preview, done, found, wrong = results
    assert not preview.is_error, result_text(preview)
    assert not done.is_error, result_text(done)
    assert done.structured_content["output"]["create_client"]["entityKey"]
    assert found.structured_content["items"], "the new client is found by its email"
    assert wrong.is_error
    for result in results:
        assert leaks(result_text(result)) == []
        assert leaks(as_text(result.structured_content)) == []
    # The client was created with the real values (masking is for what is shown only).
    practice = sandbox.state.practice("anz")
    assert any(entity.surname == PERSONAL["entitySurname"] for entity in practice.order)
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert "mcp create_client" in log  # the calls were logged
    assert_log_and_journal_masked(sandbox, tmp_path, done.structured_content["run_id"])


def assert_log_and_journal_masked(sandbox: SandboxHandle, tmp_path: Path, run_id: str) -> None:
    """No personal value of ``PERSONAL`` nor the secret in the server's log, nor in the
    journaled requests and errors of ``run_id``'s steps (nor the secret in their outputs)."""
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert leaks(log) == []
    _, secret = sandbox.credentials("anz", "rw")
    assert secret not in log
    with open_store(str(tmp_path / "state.db")) as store:
        steps = [step for step in store.get_steps(run_id) if not step.step_id.startswith("@")]
    assert steps
    for step in steps:
        # The journaled request and error are masked; a step's output is kept as the API
        # answered it (secrets masked), since a resumed run's later steps read it.
        entry = as_text([step.request, step.error])
        assert leaks(entry) == []
        assert secret not in entry + as_text(step.output)
