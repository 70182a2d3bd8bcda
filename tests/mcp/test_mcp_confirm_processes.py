"""A confirmed write is sent once, whatever server process or replica the confirmation
reaches (issue 38): the preview is kept in the store every process shares and the client
carries a sealed state; the servers here are ``practiceflow mcp --transport http``
subprocesses, killed with SIGKILL between the preview and the confirmation, or two
replicas on one PostgreSQL store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
import pytest
from cryptography.fernet import Fernet
from mcp.client.stdio import stdio_client
from mcp_support import (
    PRACTICEFLOW,
    api_requests,
    bill_count,
    bill_input,
    confirmation,
    http_server,
    result_text,
    server_env,
)

from mcp import Client, StdioServerParameters
from pgserver import shared_server
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

_YES = {"confirm": types.ElicitResult(action="accept", content={"confirm": True})}
_CODE_LINE = "give the assistant this code"


def _call(url: str, scenario: Callable[[Client], Awaitable[Any]], **options: Any) -> Any:
    async def main() -> Any:
        async with Client(url, **options) as client:
            return await scenario(client)

    return anyio.run(main)


async def _never_asked(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError("the test answers the input_required itself")


def _stdio(
    sandbox: SandboxHandle, tmp_path: Any, scenario: Callable[[Client], Awaitable[Any]]
) -> Any:
    """One stdio server process for one scenario, as the MCP Inspector starts one per call."""
    params = StdioServerParameters(
        command=PRACTICEFLOW[0],
        args=[*PRACTICEFLOW[1:], "mcp", "--allow-writes"],
        env=server_env(sandbox, tmp_path / "state.db"),
        cwd=str(tmp_path),
    )

    async def main() -> Any:
        with (tmp_path / "server.log").open("a", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return await scenario(client)

    return anyio.run(main)


def test_a_stdio_process_per_call_confirms_what_the_previous_one_previewed(
    sandbox: SandboxHandle, tmp_path: Any
) -> None:
    bill = bill_input(sandbox)

    async def preview(client: Client) -> types.CallToolResult:
        return await client.call_tool("create_bill", bill)

    shown = _stdio(sandbox, tmp_path, preview)
    arguments = confirmation(shown, (tmp_path / "server.log").read_text(encoding="utf-8"))

    async def confirm(client: Client) -> types.CallToolResult:
        return await client.call_tool("confirm_write", arguments)

    first = _stdio(sandbox, tmp_path, confirm)
    again = _stdio(sandbox, tmp_path, confirm)
    assert not first.is_error, result_text(first)
    assert again.structured_content == first.structured_content
    assert [row["path"] for row in api_requests(sandbox, "POST")] == ["/api/v1/bills"]


def _tampered(state: str) -> str:
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]


@pytest.mark.parametrize(("mode", "revision"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_a_write_previewed_by_a_killed_process_is_sent_once_by_the_next(
    sandbox: SandboxHandle, tmp_path: Any, mode: str, revision: str
) -> None:
    bill = bill_input(sandbox)
    bills = bill_count(sandbox)

    async def preview(client: Client) -> tuple[str, types.CallToolResult]:
        return client.protocol_version, await client.call_tool("create_bill", bill)

    with http_server(sandbox, tmp_path, "--allow-writes", log="one.log") as (url, one):
        negotiated, shown = _call(url, preview, mode=mode)
        one.kill()  # SIGKILL: nothing of the preview survives in that process
        one.wait()
    assert negotiated == revision
    assert not shown.is_error, result_text(shown)
    arguments = confirmation(shown, (tmp_path / "one.log").read_text(encoding="utf-8"))

    async def confirm(client: Client) -> types.CallToolResult:
        return await client.call_tool("confirm_write", arguments)

    with http_server(sandbox, tmp_path, "--allow-writes", log="two.log") as (url, _):
        first = _call(url, confirm, mode=mode)
        posts = [row["path"] for row in api_requests(sandbox, "POST")]
        again = _call(url, confirm, mode=mode)
    assert not first.is_error, result_text(first)
    assert first.structured_content["status"] == "succeeded"
    assert posts == ["/api/v1/bills"]
    assert bill_count(sandbox) == bills + 1
    # The same confirmation again: the first result, and no new POST.
    assert not again.is_error, result_text(again)
    assert again.structured_content == first.structured_content
    assert len(api_requests(sandbox, "POST")) == 1


@pytest.mark.parametrize(
    ("point", "new_posts"),
    [
        ("sent:create_bill", 1),  # journaled sent, never left: read back absent, sent once
        ("answered:create_bill", 0),  # the API acted, the answer was lost: read back, found
    ],
)
def test_a_sender_killed_mid_send_leaves_the_write_to_a_read_back_not_a_guess(
    sandbox: SandboxHandle, tmp_path: Any, point: str, new_posts: int
) -> None:
    bill = bill_input(sandbox)
    bills = bill_count(sandbox)

    async def preview(client: Client) -> types.CallToolResult:
        return await client.call_tool("create_bill", bill)

    flags = ("--allow-writes",)
    with http_server(sandbox, tmp_path, *flags, log="one.log", kill_at=point) as (url, one):
        arguments = confirmation(
            _call(url, preview), (tmp_path / "one.log").read_text(encoding="utf-8")
        )

        async def confirm(client: Client) -> types.CallToolResult:
            return await client.call_tool("confirm_write", arguments)

        with pytest.raises(Exception):  # noqa: B017, PT011 - the server died mid-call
            _call(url, confirm)
        assert one.wait(timeout=60) == -9
    posts_before = len(api_requests(sandbox, "POST"))
    with http_server(sandbox, tmp_path, *flags, log="two.log") as (url, _):
        done = _call(url, confirm)
        again = _call(url, confirm)
    assert not done.is_error, result_text(done)
    assert done.structured_content["status"] == "succeeded"
    assert again.structured_content == done.structured_content
    assert len(api_requests(sandbox, "POST")) == posts_before + new_posts
    assert bill_count(sandbox) == bills + 1


def test_an_input_required_answer_is_settled_once_by_another_process(
    sandbox: SandboxHandle, tmp_path: Any
) -> None:
    bill = bill_input(sandbox)
    bills = bill_count(sandbox)

    async def ask(client: Client) -> Any:
        return await client.session.call_tool("create_bill", bill, allow_input_required=True)

    with http_server(sandbox, tmp_path, "--allow-writes", log="one.log") as (url, one):
        asked = _call(url, ask, elicitation_callback=_never_asked)
        one.kill()
        one.wait()
    # 2026-07-28: the user is asked through the client; no code is printed.
    assert isinstance(asked, types.InputRequiredResult)
    (question,) = asked.input_requests.values()
    assert "/api/v1/bills" in question.params.message
    assert _CODE_LINE not in (tmp_path / "one.log").read_text(encoding="utf-8")
    state = asked.request_state

    def answer(
        with_state: str, arguments: dict[str, Any], responses: dict[str, Any] = _YES
    ) -> Callable[[Client], Awaitable[types.CallToolResult]]:
        async def scenario(client: Client) -> types.CallToolResult:
            return await client.call_tool(
                "create_bill", arguments, input_responses=responses, request_state=with_state
            )

        return scenario

    declined = {"confirm": types.ElicitResult(action="decline")}
    with http_server(sandbox, tmp_path, "--allow-writes", log="two.log") as (url, _):
        options = {"elicitation_callback": _never_asked}
        refused = [
            _call(url, answer(_tampered(state), bill), **options),
            _call(url, answer(state, {**bill, "billDetails": "Something else"}), **options),
            _call(url, answer(state, bill, declined), **options),
        ]
        assert api_requests(sandbox, "POST") == []
        first = _call(url, answer(state, bill), **options)
        again = _call(url, answer(state, bill), **options)
    tampered, other_arguments, no = (result_text(result) for result in refused)
    assert "not a confirmation this practice's server issued, or it was altered" in tampered
    assert "the arguments are not the previewed ones; nothing was sent" in other_arguments
    assert "the user did not confirm (decline); nothing was sent" in no
    assert not first.is_error, result_text(first)
    assert first.structured_content["status"] == "succeeded"
    assert again.structured_content == first.structured_content
    assert bill_count(sandbox) == bills + 1
    assert len(api_requests(sandbox, "POST")) == 1


def test_two_replicas_on_postgresql_send_a_write_confirmed_on_both_once(
    sandbox: SandboxHandle, tmp_path: Any
) -> None:
    database = shared_server().new_database("mcp_replicas")
    env = {"PRACTICEFLOW_STATE_KEY": Fernet.generate_key().decode("ascii")}  # the fleet's key
    bill = bill_input(sandbox)
    bills = bill_count(sandbox)
    flags = ("--allow-writes",)
    with (
        http_server(sandbox, tmp_path, *flags, state=database, log="a.log", env=env) as (a, _),
        http_server(sandbox, tmp_path, *flags, state=database, log="b.log", env=env) as (b, _),
    ):

        async def preview(client: Client) -> types.CallToolResult:
            return await client.call_tool("create_bill", bill)

        shown = _call(a, preview)
        arguments = confirmation(shown, (tmp_path / "a.log").read_text(encoding="utf-8"))

        async def both() -> list[types.CallToolResult]:
            answers: list[types.CallToolResult] = []

            async def confirm(url: str) -> None:
                async with Client(url) as client:
                    answers.append(await client.call_tool("confirm_write", arguments))

            async with anyio.create_task_group() as group:
                group.start_soon(confirm, a)
                group.start_soon(confirm, b)
            return answers

        answers = anyio.run(both)

        async def replay(client: Client) -> types.CallToolResult:
            return await client.call_tool("confirm_write", arguments)

        later = [_call(a, replay), _call(b, replay)]
    sent = [answer for answer in answers if not answer.is_error]
    assert sent, [result_text(answer) for answer in answers]
    for answer in answers:  # the other one is the same result, or "being sent" (nothing sent)
        if answer.is_error:
            assert "is sending this write now; nothing was sent by this call" in (
                result_text(answer)
            )
        else:
            assert answer.structured_content == sent[0].structured_content
    assert [answer.structured_content for answer in later] == [sent[0].structured_content] * 2
    assert bill_count(sandbox) == bills + 1
    assert len(api_requests(sandbox, "POST")) == 1
