"""The MCP server over the SDK's lowlevel ``Server``: tools, resources, and the person's
confirmation of writes: elicitation (``input_required`` from protocol 2026-07-28,
``elicitation/create`` before), else ``confirm_write`` with the code the server prints on its
standard error (never in a tool result). See docs/mcp.md.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from practiceflow import __version__
from practiceflow.budget.rate_budget import RateBudget
from practiceflow.errors import ConfigError, PracticeflowError
from practiceflow.hooks import ClientLike
from practiceflow.manifest import ActionModule, ModuleRegistry
from practiceflow.manifest.validation import hint
from practiceflow.mcp._catalog import (
    CONFIRM_TOOL,
    ToolEntry,
    build_catalog,
    settings_lists,
    wraps_result,
)
from practiceflow.mcp._desk import ASK_FOR_CODE, Preview, RunNotDone, WriteDesk
from practiceflow.mcp._resources import ASSISTANT_LIMITS, TEMPLATES, Resources
from practiceflow.runner import ValidRecipe
from practiceflow.service.state_location import practice_budget
from practiceflow.state import StateStore

logger = logging.getLogger("practiceflow.mcp")

#: The key of the confirmation form in an ``input_required`` answer.
_CONFIRM_KEY = "confirm"
_CONFIRM_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Send this request",
            "description": "Yes sends the request above to the practice's API, once.",
        }
    },
    "required": ["confirm"],
}
_INSTRUCTIONS = (
    "Tools of a practice-management platform's API (clients, leads, bills, proposals, "
    "eForms, onboarding). Read and search tools run at once. A write answers first with a "
    "preview of the exact request; show it to the user and send it only when the user "
    f"agrees ({CONFIRM_TOOL} with the preview's confirm_token, unless the app asked the user "
    "itself). Look up ids in the lists resources (entity types, lead sources, users...) "
    "before filling a form, and recent runs in practiceflow://runs/recent."
)

T = TypeVar("T")
Ctx = ServerRequestContext[Any, Any]


def _text(payload: Any) -> str:
    return json.dumps(payload, indent=2, ensure_ascii=False, default=str)


def _ok(payload: Any) -> types.CallToolResult:
    structured = payload if isinstance(payload, dict) else {"result": payload}
    content: list[types.ContentBlock] = [types.TextContent(text=_text(payload))]
    return types.CallToolResult(content=content, structured_content=structured)


def _error(message: str) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(text=message)]
    return types.CallToolResult(content=content, is_error=True)


def _question(preview: Preview) -> str:
    """The question for the user (an elicitation, not the model): it shows the request
    unmasked, so it is never a tool result or logged."""
    entry = preview.entry
    return (
        f"{entry.tool.title or entry.name}: the assistant asks to send this to the practice's "
        f"API:\n{_text(preview.for_user)}\nSend it?"
    )


def _code_notice(preview: Preview) -> str:
    """The line on the server's standard error: the confirming code and what it confirms."""
    until = preview.expires_at.strftime("%H:%M UTC")
    return (
        f"practiceflow mcp: the assistant asks to send {preview.entry.name}"
        f"{_request_line(preview.shown)} (write {preview.write_id[:8]}). If you agree, give "
        f"the assistant this code: {preview.code} (valid until {until}). If you did not ask "
        "for it, give no code and nothing is sent."
    )


def _request_line(shown: Mapping[str, Any]) -> str:
    request = shown.get("request")
    if isinstance(request, Mapping):
        return f": {request.get('method', '')} {request.get('url', '')}"
    steps = shown.get("steps")
    if isinstance(steps, list):
        return " (recipe steps: " + ", ".join(str(step.get("step")) for step in steps) + ")"
    return ""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class _Handlers:
    """The request handlers, over one desk and one catalog."""

    desk: WriteDesk
    catalog: Mapping[str, ToolEntry]
    resources: Resources
    announce: Callable[[str], None]

    async def _blocking(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(func, *args, **kwargs))

    async def list_tools(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[entry.tool for entry in self.catalog.values()])

    async def call_tool(
        self, ctx: Ctx, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        entry = self.catalog.get(params.name)
        if entry is None:
            known = hint(params.name, self.catalog, "see the tool list")
            return _error(f"unknown tool {params.name!r}; {known}")
        arguments: dict[str, Any] = dict(params.arguments or {})
        try:
            return await self._call(ctx, entry, arguments, params)
        except (PracticeflowError, RunNotDone) as exc:
            logger.info("mcp %s: refused (%s)", entry.name, type(exc).__name__)
            return _error(self.desk.error_text(entry, arguments, exc))

    async def _call(
        self,
        ctx: Ctx,
        entry: ToolEntry,
        arguments: dict[str, Any],
        params: types.CallToolRequestParams,
    ) -> types.CallToolResult | types.InputRequiredResult:
        if entry.kind == "read" and entry.action is not None:
            output = await self._blocking(self.desk.read, entry.action, arguments)
            return _ok({"result": output} if wraps_result(entry.action) else output)
        if entry.kind == "confirm":
            return await self._confirm_write(arguments)
        if params.request_state is not None:
            # Retried with the user's answer; the request state is the preview's sealed
            # state, which any process sharing the store opens.
            answer = (params.input_responses or {}).get(_CONFIRM_KEY)
            elicited = answer if isinstance(answer, types.ElicitResult) else None
            state = params.request_state
            return await self._decided(entry, state, elicited, tool=entry.name, arguments=arguments)
        preview = await self._blocking(self.desk.preview, entry, arguments)
        if not entry.writes:  # a recipe that only reads: nothing to confirm
            return _ok(
                await self._blocking(self.desk.confirm, preview.state, person_confirmed=True)
            )
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            if not self.desk.assistant_confirms:
                self.announce(_code_notice(preview))
            return _ok(self._preview_payload(preview))
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            ask = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=_question(preview), requested_schema=_CONFIRM_FORM
                )
            )
            return types.InputRequiredResult(
                input_requests={_CONFIRM_KEY: ask}, request_state=preview.state
            )
        answer = await ctx.session.elicit_form(
            _question(preview), _CONFIRM_FORM, related_request_id=ctx.request_id
        )
        return await self._decided(entry, preview.state, answer)

    async def _confirm_write(self, arguments: dict[str, Any]) -> types.CallToolResult:
        token = arguments.get("confirm_token")
        code = arguments.get("user_code")
        if (
            not isinstance(token, str)
            or not token
            or not set(arguments) <= {"confirm_token", "user_code"}
            or not isinstance(code, str | None)
        ):
            message = (
                f"{CONFIRM_TOOL}: expected confirm_token (the text of a preview's "
                "confirm_token) and user_code (the code the user gives you); nothing was sent"
            )
            return _error(message)
        return _ok(await self._blocking(self.desk.confirm, token, code=code))

    async def _decided(
        self, entry: ToolEntry, state: str, answer: types.ElicitResult | None, **bound: Any
    ) -> types.CallToolResult:
        if (
            answer is None
            or answer.action != "accept"
            or (answer.content or {}).get("confirm") is not True
        ):
            action = answer.action if answer is not None else "no answer"
            return _error(f"{entry.name}: the user did not confirm ({action}); nothing was sent")
        confirm = self.desk.confirm
        return _ok(await self._blocking(confirm, state, person_confirmed=True, **bound))

    def _preview_payload(self, preview: Preview) -> dict[str, Any]:
        if self.desk.assistant_confirms:
            how = (
                "Show this preview to the user. Only if the user agrees, call "
                f"{CONFIRM_TOOL} with this confirm_token; it sends exactly this request, once."
            )
        else:
            how = (
                "Show this preview to the user. It is sent only if the user agrees and gives "
                f"you the confirmation code of write {preview.write_id[:8]}: call "
                f"{CONFIRM_TOOL} with this confirm_token and user_code. {ASK_FOR_CODE}"
            )
        return {
            "status": "preview: nothing was sent",
            "preview": preview.shown,
            "write_id": preview.write_id,
            "confirm_token": preview.state,
            "expires_in_seconds": int(self.desk.ttl),
            "next": how,
        }

    async def list_resources(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=self.resources.listed())

    async def list_resource_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=list(TEMPLATES))

    async def read_resource(
        self, ctx: Ctx, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            payload = await self._blocking(self.resources.read, uri)
        except ConfigError as exc:  # an unknown resource: the client's parameter
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        contents = types.TextResourceContents(
            uri=uri, mime_type="application/json", text=_text(payload)
        )
        return types.ReadResourceResult(contents=[contents])


def build_server(
    desk: WriteDesk,
    catalog: Mapping[str, ToolEntry],
    lists: Mapping[str, ActionModule],
    *,
    announce: Callable[[str], None] = _stderr,
) -> Server[Any]:
    """The MCP server over a desk (see the module docstring)."""
    handlers = _Handlers(desk, catalog, Resources(desk, lists), announce)
    return Server(
        "practiceflow",
        version=__version__,
        title="practiceflow",
        instructions=_INSTRUCTIONS,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_resource_templates,
        on_read_resource=handlers.read_resource,
    )


def assistant_budget(state: str | None, client_id: str) -> RateBudget:
    """The rate budget of an assistant's requests: :data:`ASSISTANT_LIMITS` (a third of
    the practice's) counted in the practice's shared bucket, as ``serve`` and ``run`` do."""
    return practice_budget(state, client_id, ASSISTANT_LIMITS)


def build_mcp(
    *,
    client: ClientLike,
    store: StateStore,
    practice: str,
    registry: ModuleRegistry,
    recipes: Sequence[ValidRecipe] = (),
    writes_on: bool = False,
    recipes_dir: Path,
    show_personal: bool = False,
    assistant_confirms: bool = False,
    announce: Callable[[str], None] | None = None,
) -> tuple[Server[Any], WriteDesk]:
    """Build the MCP server of one practice."""
    catalog = build_catalog(registry, recipes, writes_on=writes_on)
    desk = WriteDesk(
        store=store,
        client=client,
        practice=practice,
        registry=registry,
        catalog=catalog,
        recipes_dir=recipes_dir,
        writes_on=writes_on,
        show_personal=show_personal,
        assistant_confirms=assistant_confirms,
    )
    if writes_on:
        desk.resume_pending()
    lists = {module.key: module for module in settings_lists(registry)}
    return build_server(desk, catalog, lists, announce=announce or _stderr), desk
