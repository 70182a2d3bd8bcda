"""The runtimes of the conformance table: each drives a module as its own user does.

A runtime is a function ``(case) -> Outcome``: it replays the case's cassette through a
:class:`practiceflow.testing.CassettePlayer` mounted under a real
:class:`practiceflow.api.Client`, and returns what its user would see (an output, or the
HTTP status of an error). Declared differences are the functions' ``normalize`` (what a
runtime changes in a request on purpose) and :class:`Outcome.declared` (what it does not
do and says so); :mod:`test_conformance` checks both.

* ``action``: ``practiceflow action`` (the engine's ``run_action``);
* ``run``: the one step of a recipe under the runner, SQLite store (``practiceflow run``);
* ``worker``: the fleet worker's job function (``run_shared``), PostgreSQL store;
* ``mcp``: ``tools/call`` of ``practiceflow mcp``, a write confirmed with ``confirm_write``;
* ``openapi``: a client that knows only the exported OpenAPI document.

Triggers are polled (``Poller.poll_once``) by ``run`` (SQLite) and ``worker``
(PostgreSQL); the other runtimes offer no trigger.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import mcp_types as types
import yaml

from conformance.record import SINCE, TODAY
from mcp import Client as McpClient
from practiceflow.api import Client
from practiceflow.engine import run_action
from practiceflow.engine.masking import mask_output, mask_secrets, mask_values, personal_values
from practiceflow.errors import ApiError, ConfigError, PracticeflowError
from practiceflow.hooks.read_backs import marker_in
from practiceflow.manifest import ActionModule, default_registry
from practiceflow.mcp import build_mcp
from practiceflow.runner import Runner, run_shared, validate_recipe
from practiceflow.state import StateStore, open_store
from practiceflow.testing import (
    REPLAY_BASE_URL,
    Cassette,
    CassetteMismatch,
    CassettePlayer,
    RecordedRequest,
)
from practiceflow.triggers import Poller
from practiceflow.triggers.definition import definition

CREDENTIALS = ("11111111-2222-3333-4444-555555555555", "conformance-secret")
_MARKER = re.compile(r" ?\[?\bpf-[0-9a-f]{10}\b\]?")


@dataclass
class Outcome:
    """What a runtime's user saw, and how its requests compared with the cassette.

    Attributes:
        result: ``("ok", output)`` or ``("error", status or error type)``.
        mismatches: requests that matched no exchange.
        unplayed: recorded exchanges the runtime did not send (short descriptions).
        declared: the declared differences this cell relied on (shown in the table).
        sent: the requests as sent (before normalizing).
    """

    result: tuple[str, Any]
    mismatches: list[str] = field(default_factory=list)
    unplayed: list[str] = field(default_factory=list)
    declared: list[str] = field(default_factory=list)
    sent: list[RecordedRequest] = field(default_factory=list)
    detail: str = ""


@dataclass(frozen=True)
class Case:
    """One cassette to replay, and where a runtime may keep its files and stores."""

    cassette: Cassette
    folder: Path
    pg_url: str | None = None


def _client(player: CassettePlayer) -> Client:
    return Client(*CREDENTIALS, base_url=REPLAY_BASE_URL, session=player.session(), timeout=5)


def _finish(
    player: CassettePlayer, result: tuple[str, Any], declared: list[str], detail: str = ""
) -> Outcome:
    unplayed = [
        f"{ex.request.method} {ex.request.path} {ex.request.query}" for ex in player.unplayed
    ]
    sent = list(player.raw_sent)
    return Outcome(result, list(player.mismatches), unplayed, declared, sent, detail)


def _error(exc: BaseException) -> tuple[str, Any]:
    cause = exc
    while cause is not None and not isinstance(cause, ApiError):
        cause = cause.__cause__ or getattr(cause, "cause", None)  # type: ignore[assignment]
    if isinstance(cause, ApiError):
        return ("error", cause.status)
    return ("error", type(exc).__name__)


# -- what a runtime changes on purpose -------------------------------------------------------


def unmarked(request: RecordedRequest) -> RecordedRequest:
    """A request without the runner's run-unique marker (runner/step_executor.py; the field is
    the module's ``read_back.marker``): a declared difference."""
    if not isinstance(request.body, Mapping):
        return request
    body = dict(request.body)
    for name, value in request.body.items():  # the module's declared marker field
        if isinstance(value, str) and marker_in(value):
            stripped = _MARKER.sub("", value).strip()
            if stripped:
                body[name] = stripped
            else:
                del body[name]
    return replace(request, body=body)


def unmarked_output(value: Any) -> Any:
    """An output with the marker taken out of every text (the record carries it)."""
    if isinstance(value, Mapping):
        return {k: unmarked_output(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unmarked_output(v) for v in value]
    if isinstance(value, str) and marker_in(value):
        stripped = _MARKER.sub("", value).strip()
        return stripped or None
    return value


def shown(module: ActionModule, data: Any, output: Any) -> Any:
    """An output as every runtime may show it: secrets and personal fields masked (the
    journal and the MCP write answer mask them; the comparison is made in that view)."""
    masked = mask_output(mask_secrets(output, module.secret_paths), module.output.schema)
    masked = mask_values(masked, personal_values(data, module.pii_paths))
    return unmarked_output(masked)


# -- actions ---------------------------------------------------------------------------------


def run_with_action(case: Case) -> Outcome:
    """``practiceflow action``: the engine runs the module with the user's input."""
    cassette = case.cassette
    player = CassettePlayer(cassette)
    data = _input(case)
    with _client(player) as api:
        detail = ""
        try:
            result: tuple[str, Any] = ("ok", run_action(cassette.module, data, api).output)
        except (PracticeflowError, CassetteMismatch) as exc:
            result, detail = _error(exc), str(exc)
    return _finish(player, result, [], detail)


def _input(case: Case) -> dict[str, Any]:
    data = dict(case.cassette.input)
    if "saveTo" in data:
        target = case.folder / "downloads"
        target.mkdir(parents=True, exist_ok=True)
        data["saveTo"] = str(target)
    return data


def _recipe(case: Case) -> Path:
    """The one-step recipe of the module, with the input as its ``with``."""
    cassette = case.cassette
    recipe = {
        "name": f"conformance {cassette.module}",
        "trigger": {"use": "new_client"},
        "steps": [{"id": "step", "use": cassette.module, "with": _input(case)}],
    }
    path = case.folder / f"{cassette.module}.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
    return path


def _run_recipe(case: Case, store: StateStore, drive: Callable[..., Any]) -> Outcome:
    cassette = case.cassette
    recipe = validate_recipe(_recipe(case), registry=default_registry())
    player = CassettePlayer(cassette, normalize=unmarked)
    practice = f"{cassette.preset}/{cassette.module}"
    with _client(player) as api:
        store.record_event(practice, recipe.trigger.key, "conformance", "ev-1", {})
        runner = Runner(recipe, store, api, practice=practice)
        (event,) = store.pending_events(practice, 1)
        (outcome,) = drive(store, practice, [runner], event)
    steps = {step.step_id: step for step in store.get_steps(outcome.run_id)}
    step = steps.get("step")
    if step is not None and step.status == "succeeded":
        return _finish(player, ("ok", step.output), [])
    error = step.error if step is not None else outcome.error
    if not isinstance(error, Mapping):
        return _finish(player, ("error", str(error)), [], str(error))
    result = ("error", error.get("status") or error.get("type"))
    return _finish(player, result, [], str(error.get("message", "")))


def _single(store: StateStore, practice: str, runners: list[Runner], event: Any) -> list[Any]:
    return [runners[0].run_event(event)]


def run_as_recipe_step(case: Case) -> Outcome:
    """``practiceflow run``: the runner drives the one-step recipe, SQLite store."""
    with open_store(str(case.folder / "run.db")) as store:
        return _run_recipe(case, store, _single)


def run_as_worker_job(case: Case) -> Outcome:
    """A fleet worker's ``run_event`` job: ``run_shared`` over a PostgreSQL store."""
    assert case.pg_url is not None
    with open_store(case.pg_url) as store:
        return _run_recipe(case, store, run_shared)


def run_as_mcp_tool(case: Case) -> Outcome:
    """``tools/call`` of ``practiceflow mcp``; a write is confirmed with ``confirm_write``."""
    cassette = case.cassette
    player = CassettePlayer(cassette, normalize=unmarked)
    data = _input(case)

    notices: list[str] = []

    async def call(server: Any) -> types.CallToolResult:
        async with McpClient(server) as client:
            first = await client.call_tool(cassette.module, data)
            shown = first.structured_content or {}
            token = shown.get("confirm_token")
            if first.is_error or not token:
                return first
            # The user reads the code the server printed for this write, and gives it.
            write = str(shown.get("write_id", ""))[:8]
            codes = re.findall(rf"\(write {write}\).*?code: (\d{{6}})", "\n".join(notices))
            confirm = {"confirm_token": token, "user_code": codes[-1] if codes else ""}
            return await client.call_tool("confirm_write", confirm)

    with _client(player) as api, open_store(str(case.folder / "mcp.db")) as store:
        server, _ = build_mcp(
            client=api,
            store=store,
            practice="conformance",
            registry=default_registry(),
            writes_on=True,
            recipes_dir=case.folder / "mcp-recipes",
            show_personal=True,
            announce=notices.append,
        )
        answer = anyio.run(call, server)
    payload = answer.structured_content
    if answer.is_error:
        text = " ".join(getattr(part, "text", "") for part in answer.content)
        found = re.search(r"-> ([45]\d\d)\b", text)
        result: tuple[str, Any] = ("error", int(found.group(1)) if found else text[:80])
        return _finish(player, result, [], text)
    elif isinstance(payload, Mapping) and "run_id" in payload and "output" in payload:
        result = ("ok", payload["output"].get("step", payload["output"].get(cassette.module)))
    else:
        result = ("ok", payload.get("result", payload) if isinstance(payload, Mapping) else payload)
    return _finish(player, result, [])


# -- the OpenAPI client ------------------------------------------------------------------------


def _operation(document: Mapping[str, Any], key: str) -> tuple[str, str, Mapping[str, Any]]:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if isinstance(operation, Mapping) and operation.get("operationId") == key:
                return method.upper(), path, operation
    message = f"the exported OpenAPI document has no operation {key!r}"
    raise ConfigError(message)


def _schema(document: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        found: Mapping[str, Any] = document
        for part in ref.removeprefix("#/").split("/"):
            found = found[part]
        return found
    return node


def run_with_openapi(case: Case, document: Mapping[str, Any]) -> Outcome:
    """A generic client that knows only the exported OpenAPI document: the operation's path
    and query parameters and its request body, built from the input; where the document
    declares ``pageNumber`` it pages by the rule the operation's description states, and
    stops once it holds the ``limit`` rows its user asked for."""
    cassette = case.cassette
    method, template, operation = _operation(document, cassette.module)
    parameters = operation.get("parameters", [])
    pages = any(p.get("name") == "pageNumber" for p in parameters)
    declared = []
    normalize = None
    if not pages and any(ex.request.query.get("pageNumber") for ex in cassette.exchanges):
        declared.append("cannot page: the export declares no pageNumber")

        def normalize(request: RecordedRequest) -> RecordedRequest:
            query = {k: v for k, v in request.query.items() if k not in ("pageNumber", "pageSize")}
            return replace(request, query=query)

    player = CassettePlayer(cassette, normalize=normalize)
    data = _input(case)
    path = template
    query: dict[str, Any] = {}
    for parameter in parameters:
        name = parameter["name"]
        if name not in data:
            continue
        if parameter.get("in") == "path":
            path = path.replace("{" + name + "}", quote(str(data[name]), safe=""))
        elif parameter.get("in") == "query":
            query[name] = data[name]
    body = None
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is not None:
        schema = _schema(document, content.get("schema", {}))
        fields = default_registry().action(cassette.module).input_schema.get("properties", {})
        whole = [name for name, field_schema in fields.items() if field_schema == schema]
        if whole and whole[0] in data:  # the body is one input field (create_contact's contact)
            body = data[whole[0]]
        else:
            names = set(schema.get("properties", {}))
            open_schema = schema.get("additionalProperties", True) is not False
            taken = {p["name"] for p in parameters}
            body = {k: v for k, v in data.items() if (k in names or open_schema) and k not in taken}
    if pages and "pageSize" in {p["name"] for p in parameters} and cassette.exchanges:
        # The page size is the user's choice: the one the recording used.
        size = cassette.exchanges[0].request.query.get("pageSize")
        if size is not None:
            query["pageSize"] = size
    need = data.get("limit") if isinstance(data.get("limit"), int) else None
    session = player.session()
    answers: list[Any] = []
    rows: list[Any] = []
    previous: list[Any] | None = None
    first: int | None = None
    number = 1
    while True:
        sent_query = dict(query)
        if pages:
            sent_query["pageNumber"] = number
        try:
            response = session.request(
                method,
                REPLAY_BASE_URL + path,
                params={k: _text(v) for k, v in sent_query.items()},
                json=body,
                headers={"X-SVC-Auth-ID": CREDENTIALS[0], "X-SVC-Auth-Key": CREDENTIALS[1]},
            )
        except CassetteMismatch:
            return _finish(player, ("error", "CassetteMismatch"), declared)
        if response.status_code >= 400:
            return _finish(player, ("error", response.status_code), declared)
        answer = (
            response.json()
            if response.content and "json" in response.headers.get("Content-Type", "")
            else None
        )
        answers.append(answer)
        if not pages:
            break
        # The document's rule: the next page while hasMore, or, without hasMore, while a
        # page is as full as the first and not the page before again; the user stops once
        # they have the rows they need.
        page = _rows(answer)
        repeated = bool(page) and page == previous
        previous = page
        rows += [] if repeated else page
        first = len(page) if first is None else first
        flag = answer.get("hasMore") if isinstance(answer, Mapping) else None
        more = flag is True if isinstance(flag, bool) else bool(page) and len(page) >= first
        more = more and not repeated
        if not more or (need is not None and len(rows) >= need):
            break
        number += 1
    extra_reads = [ex for ex in player.unplayed if ex.request.method == "GET"]
    if extra_reads:
        declared.append(
            f"{len(extra_reads)} read(s) only the engine makes (checks, read-back, pages)"
        )
    player.mismatches += [
        f"not sent: {ex.request.method} {ex.request.path}"
        for ex in player.unplayed
        if ex.request.method != "GET"
    ]
    return _finish(player, ("ok", answers[-1] if len(answers) == 1 else answers), declared)


def _rows(answer: Any) -> list[Any]:
    if isinstance(answer, list):
        return answer
    if isinstance(answer, Mapping):
        for value in answer.values():
            if isinstance(value, list):
                return value
    return []


def _text(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


# -- triggers ----------------------------------------------------------------------------------


def poll_trigger(case: Case, store: StateStore) -> Outcome:
    """One ``poll_once`` from the recorded start, as ``run`` and the worker's ``poll`` job do."""
    cassette = case.cassette
    player = CassettePlayer(cassette)
    found = definition(default_registry().trigger(cassette.module))
    practice = f"{cassette.preset}/{cassette.module}"
    if found.poll is None:
        return Outcome(("ok", []), declared=["webhook only: nothing to poll"])
    with _client(player) as api:
        options = dict(cassette.input)
        poller = Poller(api, store, practice, found, options, since=SINCE, today=lambda: TODAY)
        try:
            poller.poll_once()
        except (PracticeflowError, CassetteMismatch) as exc:
            return _finish(player, _error(exc), [], str(exc))
        events = [event.payload for event in store.pending_events(practice, 10_000)]
    return _finish(player, ("ok", events), [])


def dumps(value: Any) -> str:
    """Stable text of a value for comparisons in messages."""
    return json.dumps(value, sort_keys=True, default=str)[:300]


__all__ = [
    "Case",
    "Outcome",
    "dumps",
    "poll_trigger",
    "run_as_mcp_tool",
    "run_as_recipe_step",
    "run_as_worker_job",
    "run_with_action",
    "run_with_openapi",
    "shown",
    "unmarked",
]
