"""``practiceflow mcp`` over stdio, driven by the SDK's own client against the sandbox.

The server runs as a desktop assistant starts it: a subprocess speaking MCP on its
standard input and output, credentials in its environment, the state store in a file.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import mcp_cases
import mcp_types as types
import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from mcp.client.stdio import stdio_client
from mcp_cases import Scenario
from mcp_support import (
    PERSONAL,
    PRACTICEFLOW,
    api_requests,
    as_text,
    bill_count,
    bill_input,
    confirmation,
    leaks,
    result_text,
    server_env,
)

from mcp import Client, StdioServerParameters
from practiceflow.cli.runs import runs
from practiceflow.manifest import default_registry
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


def _drive(
    sandbox: SandboxHandle,
    tmp_path: Path,
    scenario: Scenario,
    *flags: str,
    elicit: Elicit | None = None,
    mode: str = "auto",
    extra_env: dict[str, str] | None = None,
) -> Any:
    """Start the server over stdio, run ``scenario`` with a connected client, stop it."""
    params = StdioServerParameters(
        command=PRACTICEFLOW[0],
        args=[*PRACTICEFLOW[1:], "mcp", "--log-json", *flags],
        env={**server_env(sandbox, tmp_path / "state.db"), **(extra_env or {})},
        cwd=str(tmp_path),
    )

    async def main() -> Any:
        with (tmp_path / "server.log").open("a", encoding="utf-8") as errlog:
            transport = stdio_client(params, errlog=errlog)
            async with Client(transport, elicitation_callback=elicit, mode=mode) as client:
                return await scenario(client)

    return anyio.run(main)


def _driver(sandbox: SandboxHandle, tmp_path: Path) -> mcp_cases.Drive:
    return functools.partial(_drive, sandbox, tmp_path)


def test_lists_one_tool_per_action_module_with_the_modules_schemas(sandbox, tmp_path):
    async def scenario(client: Client) -> types.ListToolsResult:
        return await client.list_tools()

    listed = _drive(sandbox, tmp_path, scenario)
    tools = {tool.name: tool for tool in listed.tools}
    registry = default_registry()
    assert set(tools) == {*registry.actions, "confirm_write"}
    for key, module in registry.actions.items():
        tool = tools[key]
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["properties"] == module.input_schema["properties"]
        assert tool.title == module.title
        assert tool.description.startswith(module.description.strip())
        assert tool.annotations.read_only_hint is (not module.needs_write)
    # Without --allow-writes, a write tool says it is off.
    assert "Off on this server" in tools["create_bill"].description
    assert "examples" in tools["create_bill"].input_schema["properties"]["entityKey"]


def test_a_search_runs_at_once_and_returns_the_modules_output(sandbox, tmp_path):
    async def scenario(client: Client) -> types.CallToolResult:
        return await client.call_tool("find_clients", {"limit": 5})

    before = len(api_requests(sandbox, "GET"))
    result = _drive(sandbox, tmp_path, scenario)
    assert not result.is_error, result_text(result)
    items = result.structured_content["items"]
    assert len(items) == 5
    assert all(len(item["entityKey"]) == 36 for item in items)
    assert json.loads(result_text(result)) == result.structured_content
    # Personal fields of the result are masked for the assistant by default.
    assert {item["entityName"] for item in items} == {"***"}
    got = api_requests(sandbox, "GET")[before:]
    assert any(row["path"].endswith("/api/v1/entities") for row in got)


def test_bad_input_is_a_clear_tool_error_and_nothing_is_sent(sandbox, tmp_path):
    mcp_cases.bad_input_is_a_clear_tool_error_and_nothing_is_sent(
        sandbox, _driver(sandbox, tmp_path)
    )


def test_a_write_is_refused_without_allow_writes_and_nothing_is_sent(sandbox, tmp_path):
    mcp_cases.a_write_is_refused_without_allow_writes_and_nothing_is_sent(
        sandbox, _driver(sandbox, tmp_path)
    )


def test_read_only_credentials_keep_writes_off_even_with_allow_writes(sandbox, tmp_path):
    async def scenario(client: Client) -> types.CallToolResult:
        return await client.call_tool("create_bill", bill_input(sandbox))

    params_env = server_env(sandbox, tmp_path / "state.db", kind="ro")

    async def main() -> types.CallToolResult:
        params = StdioServerParameters(
            command=PRACTICEFLOW[0],
            args=[*PRACTICEFLOW[1:], "mcp", "--allow-writes"],
            env=params_env,
            cwd=str(tmp_path),
        )
        with (tmp_path / "server.log").open("a", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return await scenario(client)

    result = anyio.run(main)
    assert result.is_error
    assert "writes are off" in result_text(result)
    assert api_requests(sandbox, "POST") == []
    assert "cannot write" in (tmp_path / "server.log").read_text(encoding="utf-8")


def test_preview_then_confirm_twice_creates_exactly_one_bill_found_in_runs(sandbox, tmp_path):
    bill = bill_input(sandbox)

    async def scenario(client: Client) -> tuple[Any, ...]:
        preview = await client.call_tool("create_bill", bill)
        # The user reads the code where the server was started (here: its log).
        printed = (tmp_path / "server.log").read_text(encoding="utf-8")
        first = await client.call_tool("confirm_write", confirmation(preview, printed))
        second = await client.call_tool("confirm_write", confirmation(preview, printed))
        return preview, first, second

    bills = bill_count(sandbox)
    preview, first, second = _drive(sandbox, tmp_path, scenario, "--allow-writes")
    assert not preview.is_error, result_text(preview)
    shown = preview.structured_content
    assert shown["status"] == "preview: nothing was sent"
    request = shown["preview"]["request"]
    assert request["method"] == "POST"
    assert request["url"].endswith("/anz/api/v1/bills")
    assert request["json"]["lineItems"] == bill["lineItems"]
    _, secret = sandbox.credentials("anz", "rw")
    assert secret not in result_text(preview)
    assert not first.is_error, result_text(first)
    assert not second.is_error, result_text(second)
    assert first.structured_content["status"] == "succeeded"
    assert second.structured_content["run_id"] == first.structured_content["run_id"]
    output = first.structured_content["output"]["create_bill"]
    assert output["billTotal"] == 330
    assert second.structured_content["output"] == first.structured_content["output"]
    # Exactly one bill, and one POST, even though the confirmation was sent twice.
    assert bill_count(sandbox) == bills + 1
    assert [row["path"] for row in api_requests(sandbox, "POST")] == ["/api/v1/bills"]

    run_id = first.structured_content["run_id"]
    env = {"PRACTICEFLOW_STATE": str(tmp_path / "state.db")}
    listed = CliRunner().invoke(runs, ["list", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.stdout)
    assert row["run_id"] == run_id
    assert row["recipe"] == "assistant: create_bill"
    assert row["status"] == "succeeded"
    shown_run = CliRunner().invoke(runs, ["show", run_id, "--json"], env=env)
    steps = json.loads(shown_run.stdout)["steps"]
    assert [(step["step"], step["status"]) for step in steps] == [("create_bill", "succeeded")]
    assert steps[0]["request"]["use"] == "create_bill"
    # The assistant's requests are counted in the practice's store (the console's budget
    # chart), all but the credentials check made before the store is opened.
    client_id, _ = sandbox.credentials("anz", "rw")
    with open_store(str(tmp_path / "state.db")) as store:
        counted = store.request_counts(client_id, since=datetime.now(UTC) - timedelta(hours=1))
    assert counted == len(api_requests(sandbox)) - 1


def test_elicitation_confirms_with_the_user_and_a_decline_sends_nothing(sandbox, tmp_path):
    asked: list[str] = []
    answers = iter(["decline", "accept"])

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        action = next(answers)
        content = {"confirm": True} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    bill = bill_input(sandbox)

    async def scenario(client: Client) -> tuple[types.CallToolResult, ...]:
        declined = await client.call_tool("create_bill", bill)
        accepted = await client.call_tool("create_bill", bill)
        return declined, accepted

    bills = bill_count(sandbox)
    declined, accepted = _drive(sandbox, tmp_path, scenario, "--allow-writes", elicit=elicit)
    assert declined.is_error
    assert "did not confirm (decline); nothing was sent" in result_text(declined)
    assert not accepted.is_error, result_text(accepted)
    assert accepted.structured_content["status"] == "succeeded"
    assert "confirm_token" not in accepted.structured_content
    assert bill_count(sandbox) == bills + 1
    assert len(asked) == 2
    assert "/api/v1/bills" in asked[0]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_user_confirms_the_real_values_while_the_assistant_sees_them_masked(
    sandbox, tmp_path, mode
):
    # The elicitation goes to the user, who must see what will be sent; the tool result
    # goes to the model, which must not.
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async def scenario(client: Client) -> types.CallToolResult:
        return await client.call_tool("create_client", {"entityType": "Individual", **PERSONAL})

    result = _drive(sandbox, tmp_path, scenario, "--allow-writes", "-v", elicit=elicit, mode=mode)
    (question,) = asked
    shown = json.loads(question[question.index("{") : question.rindex("}") + 1])
    body = shown["request"]["json"]
    assert {key: body[key] for key in PERSONAL} == PERSONAL
    assert sorted(leaks(question)) == sorted(PERSONAL.values())
    # The credentials stay masked, even for the user.
    _, secret = sandbox.credentials("anz", "rw")
    assert secret not in question
    assert "***" in as_text(shown["request"]["headers"])
    assert not result.is_error, result_text(result)
    assert result.structured_content["status"] == "succeeded"
    assert leaks(result_text(result)) == []
    assert leaks(as_text(result.structured_content)) == []
    mcp_cases.assert_log_and_journal_masked(sandbox, tmp_path, result.structured_content["run_id"])


def test_elicitation_on_a_legacy_protocol_client(sandbox, tmp_path):
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"confirm": True})

    async def scenario(client: Client) -> types.CallToolResult:
        return await client.call_tool("create_bill", bill_input(sandbox))

    bills = bill_count(sandbox)
    result = _drive(sandbox, tmp_path, scenario, "--allow-writes", elicit=elicit, mode="legacy")
    assert not result.is_error, result_text(result)
    assert result.structured_content["status"] == "succeeded"
    assert bill_count(sandbox) == bills + 1


def test_no_personal_value_in_results_logs_or_journaled_requests(sandbox, tmp_path):
    mcp_cases.no_personal_value_in_results_logs_or_journaled_requests(
        sandbox, tmp_path, _driver(sandbox, tmp_path)
    )


def test_a_confirmed_call_left_unfinished_is_finished_at_the_next_start(sandbox, tmp_path):
    # As a server killed right after recording a confirmation leaves it: the event only.
    client_id, _ = sandbox.credentials("anz", "rw")
    with open_store(str(tmp_path / "state.db")) as store:
        store.record_event(
            client_id, "mcp", "assistant.create_bill", "mcp-" + "0" * 32, bill_input(sandbox)
        )

    async def scenario(client: Client) -> Any:
        return await client.read_resource("practiceflow://runs/recent")

    bills = bill_count(sandbox)
    recent = _drive(sandbox, tmp_path, scenario, "--allow-writes")
    (run,) = json.loads(recent.contents[0].text)
    assert (run["recipe"], run["status"]) == ("assistant: create_bill", "succeeded")
    assert bill_count(sandbox) == bills + 1
    # Started again, nothing is left to do and nothing is sent twice.
    _drive(sandbox, tmp_path, scenario, "--allow-writes")
    assert bill_count(sandbox) == bills + 1
    assert len(api_requests(sandbox, "POST")) == 1


def test_a_practice_named_in_the_fleet_file_files_the_assistants_runs_under_that_name(
    sandbox, tmp_path
):
    """One state for every command (issue 24): mcp keys its runs as serve does."""
    client_id, secret = sandbox.credentials("anz", "rw")
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "practices:\n"
        "  acme:\n"
        f"    client_id: {client_id}\n"
        "    client_secret_env: ACME_SECRET\n"
        f"    base_url: {sandbox.base_url('anz')}\n"
        f"    recipes: [{Path(__file__).parents[2] / 'recipes' / 'won_lead_to_client.yaml'}]\n",
        encoding="utf-8",
    )
    bill = bill_input(sandbox)

    async def scenario(client: Client) -> Any:
        preview = await client.call_tool("create_bill", bill)
        token = preview.structured_content["confirm_token"]
        return await client.call_tool("confirm_write", {"confirm_token": token})

    # --confirm-by-assistant: the model's confirmation alone sends it, and no code is printed.
    extra = {"PRACTICEFLOW_FLEET": str(fleet), "ACME_SECRET": secret}
    flags = ("--allow-writes", "--confirm-by-assistant")
    done = _drive(sandbox, tmp_path, scenario, *flags, extra_env=extra)
    assert "give the assistant this code" not in (tmp_path / "server.log").read_text()
    assert not done.is_error, result_text(done)
    with open_store(str(tmp_path / "state.db")) as store:
        (run,) = store.list_runs()
    assert run.run_id == done.structured_content["run_id"]
    assert run.practice == "acme"
