"""The MCP server in-process (the SDK's client on its direct transport): the edges of tool
calls that need no subprocess, and the confirmation of writes (issue 38): sealed, bound to
its practice, tool, arguments and expiry, confirmed by the user's code, sent at most once."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
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
    confirmation,
    leaks,
    result_text,
)

from mcp import Client
from practiceflow.api import Client as ApiClient
from practiceflow.console.data import ConsoleContext, recipes_view, run_view, runs_view
from practiceflow.manifest import default_registry
from practiceflow.mcp import WriteDesk, build_catalog, build_mcp, run_key
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


@dataclass
class Served:
    """A server in this process, its desk and store, and what it printed for the user."""

    server: Any
    desk: WriteDesk
    store: Any
    printed: list[str] = field(default_factory=list)

    @property
    def notices(self) -> str:
        return "\n".join(self.printed)


def _serve(
    api: ApiClient,
    tmp_path: Path,
    *,
    writes_on: bool,
    recipes: Any = (),
    practice: str | None = None,
    later: list[timedelta] | None = None,
) -> Served:
    """A server over the store in ``tmp_path``; ``later`` shifts its store's clock."""
    shift = later if later is not None else [timedelta(0)]
    store = open_store(str(tmp_path / "state.db"), clock=lambda: datetime.now(UTC) + shift[0])
    printed: list[str] = []
    server, desk = build_mcp(
        client=api,
        store=store,
        practice=practice or api.settings.client_id,
        registry=default_registry(),
        recipes=recipes,
        writes_on=writes_on,
        recipes_dir=tmp_path / "recipes",
        announce=printed.append,
    )
    return Served(server, desk, store, printed)


def _calls(server: Any, *calls: tuple[str, dict[str, Any]]) -> list[types.CallToolResult]:
    async def main() -> list[types.CallToolResult]:
        async with Client(server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(main)


def _bill(sandbox: SandboxHandle, amount: int = 50) -> dict[str, Any]:
    return {"entityKey": active_client(sandbox), "lineItems": [{"amount": amount, "taxAmount": 5}]}


def test_unknown_tools_and_bad_confirmations_are_tool_errors_and_send_nothing(
    sandbox, api, tmp_path
):
    served = _serve(api, tmp_path, writes_on=True)
    with served.store:
        unknown, no_token, extra, stale = _calls(
            served.server,
            ("find_client", {}),
            ("confirm_write", {}),
            ("confirm_write", {"confirm_token": "pfw1.x", "entityKey": "x"}),
            ("confirm_write", {"confirm_token": "pfc_never_issued", "user_code": "123456"}),
        )
    assert unknown.is_error
    assert "unknown tool 'find_client'; did you mean 'find_clients'?" in result_text(unknown)
    assert no_token.is_error
    assert "expected confirm_token" in result_text(no_token)
    assert extra.is_error
    assert stale.is_error
    assert "not a confirmation this practice's server issued" in result_text(stale)
    assert "nothing was sent" in result_text(stale)
    assert api_requests(sandbox) == []


def test_the_code_is_shown_to_the_user_only_and_confirms_the_write_once(sandbox, api, tmp_path):
    served = _serve(api, tmp_path, writes_on=True)
    bills = bill_count(sandbox)
    with served.store:
        (preview,) = _calls(served.server, ("create_bill", _bill(sandbox)))
        token = preview.structured_content["confirm_token"]
        (code_missing,) = _calls(served.server, ("confirm_write", {"confirm_token": token}))
        arguments = confirmation(preview, served.notices)
        first, again = _calls(
            served.server, ("confirm_write", arguments), ("confirm_write", arguments)
        )
    code = arguments["user_code"]
    # The code went to the person at the server, never to the assistant.
    (notice,) = served.printed
    assert "create_bill: POST" in notice
    assert "/api/v1/bills" in notice
    assert code not in as_text(preview.model_dump()) + result_text(code_missing)
    assert code_missing.is_error
    assert "user_code is missing; nothing was sent" in result_text(code_missing)
    assert "never in a tool result" in result_text(code_missing)
    assert not first.is_error, result_text(first)
    assert again.structured_content == first.structured_content
    assert bill_count(sandbox) == bills + 1
    assert len(api_requests(sandbox, "POST")) == 1


def _tampered(state: str) -> str:
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("tampered", "not a confirmation this practice's server issued, or it was altered"),
        ("another practice's", "this confirmation is another practice's"),
        ("expired", "the preview expired at"),
        ("wrong code", "user_code is not this preview's code (4 tries left)"),
    ],
)
def test_a_tampered_foreign_expired_or_wrongly_coded_confirmation_is_refused(
    sandbox, api, tmp_path, case, expected
):
    later = [timedelta(0)]
    served = _serve(api, tmp_path, writes_on=True, later=later)
    with served.store:
        (preview,) = _calls(served.server, ("create_bill", _bill(sandbox)))
        arguments = confirmation(preview, served.notices)
        if case == "tampered":
            arguments["confirm_token"] = _tampered(arguments["confirm_token"])
        elif case == "another practice's":
            # Another practice's server on the same store (and key) previewed it.
            other = _serve(api, tmp_path, writes_on=True, practice="another-practice")
            (theirs,) = _calls(other.server, ("create_bill", _bill(sandbox)))
            arguments = confirmation(theirs, other.notices)
        elif case == "expired":
            later[0] = timedelta(seconds=served.desk.ttl + 1)
        else:
            arguments["user_code"] = "000000" if arguments["user_code"] != "000000" else "111111"
        (refused,) = _calls(served.server, ("confirm_write", arguments))
        runs = served.store.list_runs()
    assert refused.is_error
    assert expected in result_text(refused)
    assert "nothing was sent" in result_text(refused)
    assert runs == []
    assert api_requests(sandbox, "POST") == []


def test_five_wrong_codes_void_the_preview(sandbox, api, tmp_path):
    served = _serve(api, tmp_path, writes_on=True)
    with served.store:
        (preview,) = _calls(served.server, ("create_bill", _bill(sandbox)))
        right = confirmation(preview, served.notices)
        wrong = {**right, "user_code": "000000" if right["user_code"] != "000000" else "1"}
        answers = _calls(served.server, *[("confirm_write", wrong)] * 5, ("confirm_write", right))
    assert all(answer.is_error for answer in answers)
    assert "too many wrong codes voided this preview" in result_text(answers[-1])
    assert api_requests(sandbox, "POST") == []


def test_a_confirmation_replayed_after_the_preview_expired_answers_with_its_run(
    sandbox, api, tmp_path
):
    later = [timedelta(0)]
    served = _serve(api, tmp_path, writes_on=True, later=later)
    with served.store:
        (preview,) = _calls(served.server, ("create_bill", _bill(sandbox)))
        arguments = confirmation(preview, served.notices)
        (first,) = _calls(served.server, ("confirm_write", arguments))
        later[0] = timedelta(days=2)  # expired, and forgotten by the next preview
        _calls(served.server, ("create_bill", _bill(sandbox, 60)))
        (late,) = _calls(served.server, ("confirm_write", arguments))
        (run,) = served.store.list_runs(event_id=run_key(preview.structured_content["write_id"]))
    assert not late.is_error, result_text(late)
    assert late.structured_content == first.structured_content
    assert late.structured_content["run_id"] == run.run_id
    assert len(api_requests(sandbox, "POST")) == 1


def test_a_write_previewed_by_one_server_is_confirmed_by_another_on_the_same_store(
    sandbox, api, tmp_path
):
    one = _serve(api, tmp_path, writes_on=True)
    two = _serve(api, tmp_path, writes_on=True)
    bills = bill_count(sandbox)
    with one.store, two.store:
        (preview,) = _calls(one.server, ("create_bill", _bill(sandbox)))
        arguments = confirmation(preview, one.notices)
        (done,) = _calls(two.server, ("confirm_write", arguments))
        (again,) = _calls(one.server, ("confirm_write", arguments))
    assert not done.is_error, result_text(done)
    assert again.structured_content == done.structured_content
    assert bill_count(sandbox) == bills + 1
    assert len(api_requests(sandbox, "POST")) == 1


def test_a_dropped_answer_mid_send_is_read_back_not_sent_again(sandbox, api, tmp_path):
    served = _serve(api, tmp_path, writes_on=True)
    bills = bill_count(sandbox)
    with served.store:
        (preview,) = _calls(served.server, ("create_bill", _bill(sandbox)))
        arguments = confirmation(preview, served.notices)
        sandbox.admin("POST", "/_admin/faults", {"kind": "drop", "method": "POST", "count": 1})
        (done,) = _calls(served.server, ("confirm_write", arguments))
        (again,) = _calls(served.server, ("confirm_write", arguments))
        run_id = done.structured_content["run_id"]
        history = served.store.step_history(run_id, "create_bill")
    assert not done.is_error, result_text(done)
    assert done.structured_content["status"] == "succeeded"
    assert done.structured_content["output"]["create_bill"]  # the bill read back
    assert "in_doubt" in [move.to_status for move in history]  # the answer was lost ...
    assert bill_count(sandbox) == bills + 1  # ... and the bill read back, not sent again
    assert len(api_requests(sandbox, "POST")) == 1
    assert again.structured_content == done.structured_content


def _dead_pid() -> int:
    process = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(process.stdout)


@pytest.mark.parametrize(
    ("holder", "sends"),
    [
        (f"{socket.gethostname()}:{os.getppid()}:live", False),  # a live process sends it
        (f"{socket.gethostname()}:{{dead}}:gone", True),  # its process died: taken over
        ("another-host:12345:far", False),  # another machine's: its lease tells
    ],
)
def test_a_write_another_process_holds_is_not_sent_unless_that_process_is_gone(
    sandbox, api, tmp_path, holder, sends
):
    served = _serve(api, tmp_path, writes_on=True)
    with served.store:
        (preview,) = _calls(served.server, ("create_bill", _bill(sandbox)))
        arguments = confirmation(preview, served.notices)
        write_id = preview.structured_content["write_id"]
        claimant = holder.format(dead=_dead_pid())
        taken = served.store.claim_pending_write(
            api.settings.client_id, write_id, claimant, lambda *_: False
        )
        assert taken is None
        (answer,) = _calls(served.server, ("confirm_write", arguments))
    if sends:
        assert not answer.is_error, result_text(answer)
        assert len(api_requests(sandbox, "POST")) == 1
    else:
        assert answer.is_error
        assert f"another practiceflow mcp process ({claimant}) is sending this write now" in (
            result_text(answer)
        )
        assert api_requests(sandbox, "POST") == []


def test_a_writing_recipe_is_refused_when_writes_are_off(sandbox, api, tmp_path):
    recipe = validate_recipe(RECIPE)
    served = _serve(api, tmp_path, writes_on=False, recipes=[recipe])
    bills = bill_count(sandbox)
    with served.store:
        (result,) = _calls(
            served.server,
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
    served = _serve(api, tmp_path, writes_on=True)
    bill = {"entityKey": lead, "lineItems": [{"amount": 10, "taxPercent": 10}]}
    with served.store:
        (preview,) = _calls(served.server, ("create_bill", bill))
        arguments = confirmation(preview, served.notices)
        refused, again = _calls(
            served.server, ("confirm_write", arguments), ("confirm_write", arguments)
        )
        (run,) = served.store.list_runs()
    assert refused.is_error
    assert f"run {run.run_id} failed" in result_text(refused)
    assert "bills need an Active client" in result_text(refused)
    assert run.status == "failed"
    assert result_text(again) == result_text(refused)  # a replay answers the same
    assert api_requests(sandbox, "POST") == []


def test_an_assistant_write_shows_in_the_console_with_its_steps_masked(sandbox, api, tmp_path):
    served = _serve(api, tmp_path, writes_on=True)
    person = {"entityType": "Individual", **PERSONAL}
    with served.store:
        (preview,) = _calls(served.server, ("create_client", person))
        (done,) = _calls(served.server, ("confirm_write", confirmation(preview, served.notices)))
        run_id = done.structured_content["run_id"]
        console = ConsoleContext(served.store, api.settings.client_id, who="tester")
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
    served = _serve(api, tmp_path, writes_on=True)
    bill = {"entityKey": active_client(sandbox), "lineItems": [{"amount": 70, "taxPercent": 10}]}
    bills = bill_count(sandbox)

    async def main() -> list[types.CallToolResult]:
        async with Client(served.server) as client:
            preview = await client.call_tool("create_bill", bill)
            token = confirmation(preview, served.notices)
            answers: list[types.CallToolResult] = []

            async def confirm() -> None:
                answers.append(await client.call_tool("confirm_write", token))

            async with anyio.create_task_group() as group:
                group.start_soon(confirm)
                group.start_soon(confirm)
            return answers

    with served.store:
        first, second = anyio.run(main)
        assert len(served.store.list_runs()) == 1
    assert not first.is_error, result_text(first)
    assert second.structured_content == first.structured_content
    assert bill_count(sandbox) == bills + 1
    assert len(api_requests(sandbox, "POST")) == 1


def test_a_previewed_write_is_kept_encrypted_in_the_store(sandbox, api, tmp_path):
    served = _serve(api, tmp_path, writes_on=True)
    with served.store:
        (preview,) = _calls(
            served.server, ("create_client", {"entityType": "Individual", **PERSONAL})
        )
        kept = served.store.get_pending_write(
            api.settings.client_id, preview.structured_content["write_id"]
        )
    assert kept is not None
    assert {
        key: kept.sealed["arguments"][key] for key in PERSONAL
    } == PERSONAL  # the store reads it
    with sqlite3.connect(tmp_path / "state.db") as db:  # a dump of the file does not
        rows = repr(db.execute("SELECT * FROM pending_writes").fetchall())
    assert leaks(rows) == []
    assert kept.write_id in rows
