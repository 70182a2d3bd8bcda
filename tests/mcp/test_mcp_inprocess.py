"""The MCP server in-process (the SDK's client on its direct transport): the edges of tool
calls that need no subprocess."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp_support import (
    PERSONAL,
    REPO,
    active_client,
    api_requests,
    as_text,
    bill_count,
    leaks,
    result_text,
)

from mcp import Client
from practiceflow.api import Client as ApiClient
from practiceflow.console.data import ConsoleContext, recipes_view, run_view, runs_view
from practiceflow.manifest import default_registry
from practiceflow.mcp import build_catalog, build_mcp, run_key
from practiceflow.runner import validate_recipe
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

RECIPE = REPO / "recipes" / "proposal_to_bill_and_eform.yaml"


@pytest.fixture
def api(sandbox: SandboxHandle) -> Iterator[ApiClient]:
    client_id, secret = sandbox.credentials("anz", "rw")
    with ApiClient(client_id, secret, base_url=sandbox.base_url("anz")) as client:
        yield client


def _serve(api: ApiClient, tmp_path: Path, *, writes_on: bool, recipes: Any = ()) -> Any:
    store = open_store(str(tmp_path / "state.db"))
    server, desk = build_mcp(
        client=api,
        store=store,
        practice=api.settings.client_id,
        registry=default_registry(),
        recipes=recipes,
        writes_on=writes_on,
        recipes_dir=tmp_path / "recipes",
    )
    return server, desk, store


def _calls(server: Any, *calls: tuple[str, dict[str, Any]]) -> list[types.CallToolResult]:
    async def main() -> list[types.CallToolResult]:
        async with Client(server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(main)


def test_unknown_tools_and_bad_confirmations_are_tool_errors_and_send_nothing(
    sandbox, api, tmp_path
):
    server, _, store = _serve(api, tmp_path, writes_on=True)
    with store:
        unknown, no_token, extra, stale = _calls(
            server,
            ("find_client", {}),
            ("confirm_write", {}),
            ("confirm_write", {"confirm_token": "pfc_x", "entityKey": "x"}),
            ("confirm_write", {"confirm_token": "pfc_never_issued"}),
        )
    assert unknown.is_error
    assert "unknown tool 'find_client'; did you mean 'find_clients'?" in result_text(unknown)
    assert no_token.is_error
    assert "expected exactly one argument, confirm_token" in result_text(no_token)
    assert extra.is_error
    assert stale.is_error
    assert "unknown or expired token; nothing was sent" in result_text(stale)
    assert api_requests(sandbox) == []


def test_a_token_confirmed_after_its_preview_expired_still_answers_with_its_run(
    sandbox, api, tmp_path
):
    server, desk, store = _serve(api, tmp_path, writes_on=True)
    bill = {
        "entityKey": active_client(sandbox),
        "lineItems": [{"amount": 50, "taxAmount": 5}],
    }
    with store:
        (preview,) = _calls(server, ("create_bill", bill))
        token = preview.structured_content["confirm_token"]
        (first,) = _calls(server, ("confirm_write", {"confirm_token": token}))
        desk.ttl = 0.0  # every preview is expired from now on
        desk.pending("anything")  # forgets the expired ones
        (late,) = _calls(server, ("confirm_write", {"confirm_token": token}))
        (run,) = store.list_runs(event_id=run_key(token))
    assert not late.is_error, result_text(late)
    assert late.structured_content["run_id"] == first.structured_content["run_id"] == run.run_id
    assert len(api_requests(sandbox, "POST")) == 1


def test_a_writing_recipe_is_refused_when_writes_are_off(sandbox, api, tmp_path):
    recipe = validate_recipe(RECIPE)
    server, _, store = _serve(api, tmp_path, writes_on=False, recipes=[recipe])
    bills = bill_count(sandbox)
    with store:
        (result,) = _calls(
            server,
            ("run_recipe_proposal_to_bill_and_eform", {"entityKey": active_client(sandbox)}),
        )
    assert result.is_error
    assert "writes are off on this server, nothing was sent" in result_text(result)
    assert bill_count(sandbox) == bills
    assert api_requests(sandbox, "POST") == []


def test_two_recipes_with_one_tool_name_are_refused(tmp_path):
    copy = tmp_path / "proposal_to_bill_and_eform.yaml"
    copy.write_text(RECIPE.read_text(encoding="utf-8"), encoding="utf-8")
    recipes = [validate_recipe(RECIPE), validate_recipe(copy)]
    with pytest.raises(ValueError, match="is taken; rename the file"):
        build_catalog(default_registry(), recipes, writes_on=True)


def test_a_write_the_checks_refuse_at_run_time_is_a_failed_run_and_a_tool_error(
    sandbox, api, tmp_path
):
    lead = next(e.key for e in sandbox.state.practice("anz").order if e.status == "Lead")
    server, _, store = _serve(api, tmp_path, writes_on=True)
    bill = {"entityKey": lead, "lineItems": [{"amount": 10, "taxPercent": 10}]}
    with store:
        (preview,) = _calls(server, ("create_bill", bill))
        token = preview.structured_content["confirm_token"]
        (refused,) = _calls(server, ("confirm_write", {"confirm_token": token}))
        (run,) = store.list_runs()
    assert refused.is_error
    assert f"run {run.run_id} failed" in result_text(refused)
    assert "bills need an Active client" in result_text(refused)
    assert run.status == "failed"
    assert api_requests(sandbox, "POST") == []


def test_an_assistant_write_shows_in_the_console_with_its_steps_masked(sandbox, api, tmp_path):
    server, _, store = _serve(api, tmp_path, writes_on=True)
    person = {"entityType": "Individual", **PERSONAL}
    with store:
        (preview,) = _calls(server, ("create_client", person))
        token = preview.structured_content["confirm_token"]
        (done,) = _calls(server, ("confirm_write", {"confirm_token": token}))
        run_id = done.structured_content["run_id"]
        console = ConsoleContext(store, api.settings.client_id, who="tester")
        rows = runs_view(console)
        recipes = recipes_view(console)
        shown = run_view(console, run_id)
    assert [(row["run_id"], row["recipe"]) for row in rows] == [
        (run_id, "assistant: create_client")
    ]
    assert "assistant: create_client" in {row["name"] for row in recipes}
    assert shown is not None
    assert [step["step"] for step in shown["steps"]] == ["create_client"]
    assert leaks(as_text(shown["steps"])) == []


def test_a_field_with_dynamic_choices_names_its_list_tool():
    # create_bill's line items declare where their ledger account comes from (x-choices).
    catalog = build_catalog(default_registry(), [], writes_on=True)
    tool = catalog["create_bill"].tool
    assert "lineItems[].extAccountID: a row of list_ledger_accounts (its accountID)" in (
        tool.description
    )
    field = tool.input_schema["properties"]["lineItems"]["items"]["properties"]["extAccountID"]
    assert field["x-choices"]["action"] == "list_ledger_accounts"


def test_two_confirmations_at_once_send_one_bill(sandbox, api, tmp_path):
    server, _, store = _serve(api, tmp_path, writes_on=True)
    bill = {"entityKey": active_client(sandbox), "lineItems": [{"amount": 70, "taxPercent": 10}]}
    bills = bill_count(sandbox)

    async def main() -> list[types.CallToolResult]:
        async with Client(server) as client:
            preview = await client.call_tool("create_bill", bill)
            token = {"confirm_token": preview.structured_content["confirm_token"]}
            answers: list[types.CallToolResult] = []

            async def confirm() -> None:
                answers.append(await client.call_tool("confirm_write", token))

            async with anyio.create_task_group() as group:
                group.start_soon(confirm)
                group.start_soon(confirm)
            return answers

    with store:
        first, second = anyio.run(main)
        assert len(store.list_runs()) == 1
    assert not first.is_error, result_text(first)
    assert second.structured_content == first.structured_content
    assert bill_count(sandbox) == bills + 1
    assert len(api_requests(sandbox, "POST")) == 1
