"""``practiceflow mcp --transport http``: streamable HTTP on 127.0.0.1, the cases every
transport must pass (:mod:`mcp_cases`), recipes as tools, resources, the token rule beyond
loopback and a taken port."""

from __future__ import annotations

import functools
import json
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_cases
import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp_cases import Scenario
from mcp_support import (
    PRACTICEFLOW,
    REPO,
    active_client,
    api_requests,
    bill_count,
    confirmation,
    free_port,
    server_env,
)
from starlette.testclient import TestClient

from mcp import Client
from practiceflow.api import Client as ApiClient
from practiceflow.cli import cli
from practiceflow.cli.mcp import mcp as mcp_command
from practiceflow.cli.runs import runs
from practiceflow.cli.sandbox import sandbox as sandbox_command
from practiceflow.manifest import default_registry
from practiceflow.mcp import DEFAULT_LISTEN, build_mcp, http_app
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

RECIPE = REPO / "recipes" / "proposal_to_bill_and_eform.yaml"


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def _http_server(sandbox: SandboxHandle, tmp_path: Path, *flags: str) -> Iterator[str]:
    """``practiceflow mcp --transport http`` in a subprocess; yields its MCP URL."""
    port = free_port()
    args = ["mcp", "--transport", "http", "--listen", f"127.0.0.1:{port}", *flags]
    with (tmp_path / "server.log").open("a", encoding="utf-8") as errlog:
        process = subprocess.Popen(  # noqa: S603 - our own CLI, fixed arguments
            [*PRACTICEFLOW, *args],
            env=server_env(sandbox, tmp_path / "state.db"),
            cwd=tmp_path,
            stdout=errlog,
            stderr=errlog,
        )
        try:
            deadline = time.monotonic() + 120  # generous: start-up on a busy machine
            while not _listening(port):
                assert process.poll() is None, (tmp_path / "server.log").read_text()
                assert time.monotonic() < deadline, "the MCP server did not start listening"
                time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            process.wait(timeout=60)


def _call(url: str, scenario: Callable[[Client], Awaitable[Any]], **options: Any) -> Any:
    async def main() -> Any:
        async with Client(url, **options) as client:
            return await scenario(client)

    return anyio.run(main)


def _drive(sandbox: SandboxHandle, tmp_path: Path, scenario: Scenario, *flags: str) -> Any:
    """Start the server over HTTP, run ``scenario`` with a connected client, stop it."""
    with _http_server(sandbox, tmp_path, *flags) as url:
        return _call(url, scenario)


def _driver(sandbox: SandboxHandle, tmp_path: Path) -> mcp_cases.Drive:
    return functools.partial(_drive, sandbox, tmp_path)


def test_over_http_bad_input_is_a_clear_tool_error_and_nothing_is_sent(sandbox, tmp_path):
    mcp_cases.bad_input_is_a_clear_tool_error_and_nothing_is_sent(
        sandbox, _driver(sandbox, tmp_path)
    )


def test_over_http_a_write_is_refused_without_allow_writes_and_nothing_is_sent(sandbox, tmp_path):
    mcp_cases.a_write_is_refused_without_allow_writes_and_nothing_is_sent(
        sandbox, _driver(sandbox, tmp_path)
    )


def test_over_http_no_personal_value_in_results_logs_or_journaled_requests(sandbox, tmp_path):
    mcp_cases.no_personal_value_in_results_logs_or_journaled_requests(
        sandbox, tmp_path, _driver(sandbox, tmp_path)
    )


def test_over_http_search_then_preview_and_confirm_twice_makes_one_bill(sandbox, tmp_path):
    bill = {
        "entityKey": active_client(sandbox),
        "lineItems": [{"amount": 120, "taxPercent": 10, "narration": "Setup"}],
    }

    async def scenario(client: Client) -> tuple[Any, ...]:
        tools = await client.list_tools()
        found = await client.call_tool("find_clients", {"limit": 3})
        preview = await client.call_tool("create_bill", bill)
        printed = (tmp_path / "server.log").read_text(encoding="utf-8")
        first = await client.call_tool("confirm_write", confirmation(preview, printed))
        again = await client.call_tool("confirm_write", confirmation(preview, printed))
        return tools, found, preview, first, again

    bills = bill_count(sandbox)
    with _http_server(sandbox, tmp_path, "--allow-writes") as url:
        tools, found, preview, first, again = _call(url, scenario)
    names = {tool.name for tool in tools.tools}
    assert names == {*default_registry().actions, "confirm_write"}
    assert not found.is_error
    assert len(found.structured_content["items"]) == 3
    assert preview.structured_content["preview"]["request"]["method"] == "POST"
    assert first.structured_content["status"] == "succeeded"
    assert again.structured_content == first.structured_content
    assert bill_count(sandbox) == bills + 1
    assert [row["path"] for row in api_requests(sandbox, "POST")] == ["/api/v1/bills"]
    env = {"PRACTICEFLOW_STATE": str(tmp_path / "state.db")}
    listed = json.loads(CliRunner().invoke(runs, ["list", "--json"], env=env).stdout)
    assert [(row["run_id"], row["recipe"]) for row in listed] == [
        (first.structured_content["run_id"], "assistant: create_bill")
    ]


def test_a_recipe_is_a_tool_with_its_triggers_shape_and_runs_once(sandbox, tmp_path):
    event = {
        "proposalKey": "549fac26-b50c-4efe-adba-ff5f537c53d1",
        "entityKey": active_client(sandbox),
        "title": "Engagement 2026",
    }

    async def scenario(client: Client) -> tuple[Any, ...]:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        preview = await client.call_tool("run_recipe_proposal_to_bill_and_eform", event)
        printed = (tmp_path / "server.log").read_text(encoding="utf-8")
        done = await client.call_tool("confirm_write", confirmation(preview, printed))
        return tools, preview, done

    bills = bill_count(sandbox)
    with _http_server(sandbox, tmp_path, "--allow-writes", "--recipe", str(RECIPE)) as url:
        tools, preview, done = _call(url, scenario)
    tool = tools["run_recipe_proposal_to_bill_and_eform"]
    assert tool.input_schema["properties"]["entityKey"]["title"] == "Client entity key"
    assert tool.input_schema["examples"][0]["proposalKey"]
    steps = preview.structured_content["preview"]["steps"]
    assert [(step["step"], step["would"]) for step in steps] == [
        ("bill", "would_send"),
        ("form", "would_send"),
    ]
    assert bill_count(sandbox) == bills + 1
    assert not done.is_error, done.content
    assert done.structured_content["steps"] == {"bill": "succeeded", "form": "succeeded"}
    posts = [row["path"] for row in api_requests(sandbox, "POST")]
    assert posts == ["/api/v1/bills", "/api/v1/eforms/send"]
    with open_store(str(tmp_path / "state.db")) as store:
        (run,) = store.list_runs()
    assert run.recipe == "accepted proposal -> first bill -> onboarding eForm"
    assert run.run_id == done.structured_content["run_id"]


def test_resources_give_the_lookup_lists_and_the_recent_runs(sandbox, tmp_path):
    async def scenario(client: Client) -> tuple[Any, ...]:
        listed = await client.list_resources()
        types_list = await client.read_resource("practiceflow://lists/list_entity_types")
        recent = await client.read_resource("practiceflow://runs/recent")
        return listed, types_list, recent

    with _http_server(sandbox, tmp_path) as url:
        listed, types_list, recent = _call(url, scenario)
    uris = {str(resource.uri) for resource in listed.resources}
    assert "practiceflow://lists/list_lead_sources" in uris
    assert "practiceflow://runs/recent" in uris
    assert not any("create_" in uri for uri in uris)
    (content,) = types_list.contents
    assert isinstance(content, types.TextResourceContents)
    entity_types = json.loads(content.text)
    names = {row["name"] for row in entity_types["items"]}
    assert "Individual" in names
    (runs_content,) = recent.contents
    assert isinstance(runs_content, types.TextResourceContents)
    assert json.loads(runs_content.text) == []


def test_listening_beyond_loopback_needs_a_token(sandbox, tmp_path):
    result = CliRunner().invoke(
        cli,
        ["mcp", "--transport", "http", "--listen", "0.0.0.0:0"],
        env=server_env(sandbox, tmp_path / "state.db"),
    )
    assert result.exit_code == 2
    assert "with no token" in result.output
    assert "--token" in result.output
    assert api_requests(sandbox) == []  # refused before the credentials check


def test_with_a_token_every_http_request_must_carry_it(sandbox, tmp_path):
    client_id, secret = sandbox.credentials("anz", "rw")
    with (
        ApiClient(client_id, secret, base_url=sandbox.base_url("anz")) as api,
        open_store(str(tmp_path / "state.db")) as store,
    ):
        server, _ = build_mcp(
            client=api,
            store=store,
            practice=client_id,
            registry=default_registry(),
            recipes_dir=tmp_path / "recipes",
        )
        app = http_app(server, "0.0.0.0", "s3cret-token")  # noqa: S104 - token-protected
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
        headers = {"Accept": "application/json, text/event-stream"}
        with TestClient(app, base_url="http://mcp.example") as http:
            refused = http.post("/mcp", json=hello, headers=headers)
            wrong = http.post(
                "/mcp", json=hello, headers={**headers, "Authorization": "Bearer nope"}
            )
            allowed = http.post(
                "/mcp", json=hello, headers={**headers, "Authorization": "Bearer s3cret-token"}
            )
    assert refused.status_code == 401
    assert wrong.status_code == 401
    assert "s3cret-token" not in refused.text
    assert allowed.status_code == 200, allowed.text
    assert "practiceflow" in allowed.text


def test_a_taken_port_is_a_configuration_error_naming_the_address(sandbox, tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = CliRunner().invoke(
            cli,
            ["mcp", "--transport", "http", "--listen", f"127.0.0.1:{port}"],
            env=server_env(sandbox, tmp_path / "state.db"),
        )
    assert result.exit_code == 2, result.output  # configuration, not credentials (3)
    assert f"mcp --listen 127.0.0.1:{port}: cannot listen" in result.output
    assert "pass --listen with a free port" in result.output
    assert "Errno" not in result.output
    assert api_requests(sandbox) == []  # refused before the credentials check


def test_the_default_http_address_is_not_the_sandboxs():
    listen = next(p for p in mcp_command.params if p.name == "listen")
    port = next(p for p in sandbox_command.params if p.name == "port")
    assert listen.default == DEFAULT_LISTEN == "127.0.0.1:8766"
    assert not DEFAULT_LISTEN.endswith(f":{port.default}")
