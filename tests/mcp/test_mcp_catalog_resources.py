"""What an assistant needs to act well (issue 38): every tool annotated and with an output
schema its results fit; resources and templates for runs, runs held for a person and the
budget; staff names and emails masked like clients'."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp_support import active_client, api_requests, as_text, confirmation, result_text

from mcp import Client
from practiceflow.api import Client as ApiClient
from practiceflow.engine.masking import mask_output, mask_secrets
from practiceflow.manifest import default_registry
from practiceflow.mcp import CONFIRM_TOOL, build_catalog, build_mcp
from practiceflow.runner import validate_recipe
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle

REGISTRY = default_registry()
CATALOG = build_catalog(
    REGISTRY,
    [validate_recipe(Path(__file__).parents[2] / "recipes" / "proposal_to_bill_and_eform.yaml")],
    writes_on=True,
)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_tool_says_whether_it_reads_destroys_or_repeats_safely(name: str) -> None:
    entry = CATALOG[name]
    hints = entry.tool.annotations
    assert hints is not None
    assert hints.read_only_hint is (not entry.writes and entry.kind != "confirm")
    assert hints.destructive_hint is not None
    assert hints.idempotent_hint is not None
    assert hints.open_world_hint is True
    if entry.action is not None:
        overwrites = entry.action.request.method in ("PUT", "PATCH", "DELETE")
        assert hints.destructive_hint is (entry.writes and overwrites)
        assert hints.idempotent_hint is (not entry.writes)
    if entry.kind == "confirm":  # the same confirmation twice sends once
        assert (hints.destructive_hint, hints.idempotent_hint) == (False, True)


def test_deleting_and_overwriting_tools_are_marked_destructive() -> None:
    destructive = {name for name, e in CATALOG.items() if e.tool.annotations.destructive_hint}
    assert destructive == {"unsubscribe_webhook", "update_contact"}


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_tool_declares_an_object_output_schema(name: str) -> None:
    schema = CATALOG[name].tool.output_schema
    assert schema is not None
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"


@pytest.mark.parametrize("key", sorted(k for k, m in REGISTRY.actions.items() if not m.needs_write))
def test_a_read_tools_masked_output_fits_its_output_schema(key: str) -> None:
    module = REGISTRY.actions[key]
    masked = mask_output(mask_secrets(module.sample, module.secret_paths), module.output.schema)
    Draft202012Validator(CATALOG[key].tool.output_schema).validate(masked)


@pytest.fixture
def api(sandbox: SandboxHandle) -> Iterator[ApiClient]:
    client_id, secret = sandbox.credentials("anz", "rw")
    with ApiClient(client_id, secret, base_url=sandbox.base_url("anz")) as client:
        yield client


def _session(api: ApiClient, tmp_path: Path, scenario: Any) -> tuple[Any, list[str]]:
    printed: list[str] = []
    with open_store(str(tmp_path / "state.db")) as store:
        server, _ = build_mcp(
            client=api,
            store=store,
            practice=api.settings.client_id,
            registry=REGISTRY,
            writes_on=True,
            recipes_dir=tmp_path / "recipes",
            announce=printed.append,
        )

        async def main() -> Any:
            async with Client(server) as client:
                return await scenario(client, printed)

        return anyio.run(main), printed


def _json(result: Any) -> Any:
    (content,) = result.contents
    return json.loads(content.text)


@pytest.mark.integration
def test_staff_names_and_emails_are_masked_like_clients(sandbox, api, tmp_path):
    async def scenario(client: Client, printed: list[str]) -> Any:
        return (
            await client.call_tool("list_users", {}),
            await client.read_resource("practiceflow://lists/list_users"),
        )

    (listed, resource), _ = _session(api, tmp_path, scenario)
    staff = sandbox.state.practice("anz").users
    assert not listed.is_error, result_text(listed)
    for rows in (listed.structured_content["items"], _json(resource)["items"]):
        assert len(rows) == len(staff)
        assert {(row["name"], row["email"]) for row in rows} == {("***", "***")}
        assert all(row["userKey"] for row in rows)  # what an assistant needs stays
    shown = as_text(listed.structured_content) + as_text(_json(resource))
    assert not [user["email"] for user in staff if user["email"] in shown]


@pytest.mark.integration
def test_the_resources_say_what_is_stuck_and_why_and_the_budget(sandbox, api, tmp_path):
    form = {"templateId": 101, "entityKey": active_client(sandbox)}

    async def scenario(client: Client, printed: list[str]) -> Any:
        templates = await client.list_resource_templates()
        preview = await client.call_tool("send_eform", form)
        sandbox.admin("POST", "/_admin/faults", {"kind": "drop", "method": "POST", "count": 1})
        held = await client.call_tool(CONFIRM_TOOL, confirmation(preview, "\n".join(printed)))
        runs = _json(await client.read_resource("practiceflow://runs/held"))
        run_id = runs[0]["run_id"]
        return (
            templates,
            held,
            runs,
            _json(await client.read_resource(f"practiceflow://runs/{run_id}")),
            _json(await client.read_resource(f"practiceflow://runs/{run_id}/held")),
            _json(await client.read_resource("practiceflow://budget")),
            _json(await client.read_resource("practiceflow://budget/minute")),
        )

    (templates, held, runs, run, steps, budget, minute), _ = _session(api, tmp_path, scenario)
    assert {t.uri_template for t in templates.resource_templates} == {
        "practiceflow://runs/{run_id}",
        "practiceflow://runs/{run_id}/held",
        "practiceflow://budget/{window}",
        "practiceflow://lists/{action}",
    }
    # An eForm whose answer was lost has no read-back: held for a person, never re-sent.
    assert held.is_error
    assert "held for a person and will not be sent again on a guess" in result_text(held)
    assert len(api_requests(sandbox, "POST")) == 1
    (stuck,) = runs
    assert (stuck["recipe"], stuck["status"]) == ("assistant: send_eform", "in_doubt")
    assert [entry["step"] for entry in stuck["held"]] == ["send_eform"]
    assert "runs resolve" in stuck["held"][0]["settle"]
    assert run["steps"][0]["status"] == "in_doubt"
    assert steps == stuck["held"]
    assert set(budget) == {"minute", "hour", "day"}
    assert minute == budget["minute"]
    assert (minute["limit"], minute["assistant_share"]) == (60, 20)
    assert minute["sent"] == minute["limit"] - minute["left"]


@pytest.mark.integration
def test_an_unknown_resource_is_an_error_naming_what_exists(sandbox, api, tmp_path):
    async def scenario(client: Client, printed: list[str]) -> Any:
        try:
            await client.read_resource("practiceflow://runs/no-such-run")
        except Exception as exc:  # the SDK's error for a failed read
            return str(exc)
        return "read"

    message, _ = _session(api, tmp_path, scenario)
    assert "unknown resource 'practiceflow://runs/no-such-run'" in message
    assert "practiceflow://runs/{run_id}" in message
