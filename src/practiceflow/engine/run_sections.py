"""Running the optional ``list``, ``download`` and ``warn_if`` sections of an action.

:func:`prepare` refuses bad ``list.limit`` or download destinations before anything is sent;
:func:`send` replaces ``client.request`` and hands the answer back as a response, so API errors
keep their class and ``output.map`` works unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from practiceflow.engine.binary import DownloadClient, download_output, resolve_destination
from practiceflow.engine.search import Collected, PagingClient, collect_pages, collect_rows
from practiceflow.errors import BugError, ConfigError, InputError, Issue
from practiceflow.hooks import ActionContext, ClientLike
from practiceflow.manifest.models import ActionModule
from practiceflow.manifest.optional_sections import Template
from practiceflow.templating import CompiledTemplate, utcnow

_LIMIT = "list_limit"
_DEST = "download_to"


@dataclass(frozen=True)
class Answer:
    """A response built by the engine (a collected list, a written file).

    Attributes:
        status: the HTTP status of the (last) answer.
        headers: its headers.
        data: the output-shaped body.
    """

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    data: Any = None


def _render(template: Template, context: Mapping[str, Any]) -> Any:
    if isinstance(template, CompiledTemplate):
        return template.render(context)
    return template


def _field_of(template: Template, default: str) -> str:
    if isinstance(template, CompiledTemplate):
        fields = sorted(template.attributes.get("input", ()))
        if len(fields) == 1:
            return fields[0]
    return default


def prepare(
    module: ActionModule,
    ctx: ActionContext,
    request: dict[str, Any],
    masked: dict[str, Any],
) -> None:
    """Check what a list or download needs before anything is sent; add it to ``request``.

    A paged list's described request shows the first page's ``pageNumber`` (and
    ``pageSize``).

    Raises:
        InputError: the limit or the destination is not acceptable; nothing was sent.
    """
    spec = module.extensions
    context = {"input": ctx.input, "now": utcnow()}
    if spec.list is not None:
        limit = _render(spec.list.limit, context)
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            field_name = _field_of(spec.list.limit, "limit")
            message = f"got {limit!r}; expected an integer of 0 or more"
            raise InputError(module.key, [Issue("input", 0, 0, field_name, message)])
        request[_LIMIT] = limit
        if spec.list.paged:
            params = dict(masked.get("params") or {})
            params["pageNumber"] = 1
            if spec.list.page_size is not None:
                params["pageSize"] = spec.list.page_size
            masked["params"] = params
    if spec.download is not None:
        target, issue = resolve_destination(
            _render(spec.download.to, context),
            _render(spec.download.filename, context),
            _field_of(spec.download.to, "download.to"),
        )
        if issue is not None:
            raise InputError(module.key, [issue])
        request[_DEST] = target


def _keeper(module: ActionModule, ctx: ActionContext) -> Any:
    spec = module.extensions.list
    template = spec.filter if spec is not None else None
    if not isinstance(template, CompiledTemplate):
        return None
    now = utcnow()

    def keep(row: Any) -> bool:
        return bool(template.render({"item": row, "input": ctx.input, "now": now}))

    return keep


def _collect(
    module: ActionModule, ctx: ActionContext, client: ClientLike, request: dict[str, Any]
) -> Answer:
    spec = module.extensions.list
    if spec is None:
        message = f"{module.key}: collecting a list for a module without a list section"
        raise BugError(message)
    where = f"{request['method']} {request['path']}"
    limit = request.get(_LIMIT)
    keep = _keeper(module, ctx)
    collected: Collected
    if spec.paged:
        if not isinstance(client, PagingClient):
            message = f"{module.key}: this client cannot page lists (it has no pages method)"
            raise ConfigError(message)
        pages = client.pages(
            request["path"], params=request.get("params"), page_size=spec.page_size
        )
        collected = collect_pages(pages, where=where, limit=limit, keep=keep)
        ctx.warnings.extend(collected.warnings)
        return Answer(200, {}, collected.output())
    response = client.request(
        request["method"],
        request["path"],
        params=request.get("params"),
        json=request.get("json"),
        headers=request.get("headers"),
    )
    collected = collect_rows(response.data, where=where, limit=limit, keep=keep)
    return Answer(response.status, response.headers, collected.output())


def send(
    module: ActionModule, ctx: ActionContext, client: ClientLike, request: dict[str, Any]
) -> Any:
    """Send the request of an action and return its answer (see the module docstring).

    Raises:
        ApiError: the API answered with an error.
        InDoubtError: a write may have been acted on.
        ConfigError: a list answer that holds no list, or a client that cannot page or
            download.
    """
    spec = module.extensions
    response: Any
    if spec.download is not None:
        if not isinstance(client, DownloadClient):
            message = f"{module.key}: this client cannot download files (no download method)"
            raise ConfigError(message)
        result = client.download(request["path"], request[_DEST], params=request.get("params"))
        headers = {"content-type": result.content_type} if result.content_type else {}
        response = Answer(200, headers, download_output(result))
    elif spec.list is not None:
        response = _collect(module, ctx, client, request)
    else:
        response = client.request(
            request["method"],
            request["path"],
            params=request.get("params"),
            json=request.get("json"),
            headers=request.get("headers"),
        )
    if spec.warn_if:
        headers = {str(key).lower(): value for key, value in response.headers.items()}
        context = {"response": response.data, "headers": headers, "input": ctx.input}
        context["now"] = utcnow()
        for entry in spec.warn_if:
            if _render(entry.when, context):
                ctx.warnings.append(str(_render(entry.message, context)))
    return response
