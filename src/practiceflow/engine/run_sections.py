"""Running the optional ``list``, ``download`` and ``warn_if`` sections of an action.

:func:`prepare` refuses a bad limit or destination before anything is sent; :func:`send` hands
the answer back as a response, so API errors keep their class and ``output.map`` works as is.
A list's ``hasMore`` is true only when one more kept row exists (collection reads past ``limit``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from practiceflow.api.paging import Page, extract_items
from practiceflow.errors import ConfigError, InputError, Issue
from practiceflow.hooks import ActionContext, ClientLike
from practiceflow.manifest.models import ActionModule, ListSpec, Template
from practiceflow.templating import CompiledTemplate, utcnow

_LIMIT = "list_limit"
_DEST = "download_to"

Keep = Callable[[Any], bool]


@dataclass(frozen=True)
class Answer:
    """A response built by the engine (a collected list, a written file)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    data: Any = None


@dataclass(frozen=True)
class Collected:
    """What collection found."""

    items: list[Any]
    has_more: bool
    pages: int
    warnings: tuple[str, ...] = ()

    def output(self) -> dict[str, Any]:
        """The list output: ``{items, count, hasMore}``."""
        return {"items": self.items, "count": len(self.items), "hasMore": self.has_more}


def _take(rows: Iterable[Any], items: list[Any], limit: int | None, keep: Keep | None) -> bool:
    """Append kept rows to ``items``; True as soon as a kept row lies beyond ``limit``."""
    for row in rows:
        if keep is not None and not keep(row):
            continue
        if limit is not None and len(items) >= limit:
            return True
        items.append(row)
    return False


def collect_rows(
    data: Any, *, where: str, limit: int | None = None, keep: Keep | None = None
) -> Collected:
    """Collect the rows of one list answer, not paged (ConfigError: it holds no list)."""
    rows, flag = extract_items(data, where=where)
    items: list[Any] = []
    beyond = _take(rows, items, limit, keep)
    return Collected(items, beyond or flag is True, 1)


def collect_pages(
    pages: Iterator[Page], *, where: str, limit: int | None = None, keep: Keep | None = None
) -> Collected:
    """Collect rows page by page until the list ends or one row lies beyond ``limit``; a page
    repeating the one before (``pageNumber`` ignored) stops with a warning, not a loop."""
    items: list[Any] = []
    previous: list[Any] | None = None
    count = 0
    for page in pages:
        count += 1
        if page.repeated or (previous is not None and page.items and page.items == previous):
            warning = (
                f"{where}: page {page.number} repeats page {page.number - 1}, so the endpoint "
                "seems to ignore pageNumber; stopped reading there"
            )
            return Collected(items, False, count, (warning,))
        previous = page.items
        if _take(page.items, items, limit, keep):
            return Collected(items, True, count)
    return Collected(items, False, count)


def resolve_destination(to: Any, filename: Any, field: str) -> tuple[Path | None, Issue | None]:
    """Turn the rendered ``download.to`` (and ``filename``) into the file to write."""
    if not isinstance(to, str | os.PathLike) or not str(to).strip():
        return None, Issue("input", 0, 0, field, f"got {to!r}; expected a file or folder path")
    target = Path(to).expanduser()
    if target.is_dir():
        name = Path(str(filename)).name if filename else ""
        if not name or name in (".", ".."):
            message = f"got the folder {str(target)!r}; give a file path to write"
            return None, Issue("input", 0, 0, field, message)
        return target / name, None
    if not target.parent.is_dir():
        message = (
            f"got {str(target)!r}; its folder {str(target.parent)!r} does not exist "
            "(create it first, or give an existing folder)"
        )
        return None, Issue("input", 0, 0, field, message)
    return target, None


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
    """Check a list's limit or a download's destination (InputError) and add it to
    ``request``; a paged list's ``masked`` request shows the first page's parameters."""
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


def _request(client: ClientLike, request: Mapping[str, Any]) -> Any:
    return client.request(
        request["method"],
        request["path"],
        params=request.get("params"),
        json=request.get("json"),
        headers=request.get("headers"),
    )


def _collect(
    module: ActionModule,
    spec: ListSpec,
    ctx: ActionContext,
    client: ClientLike,
    request: dict[str, Any],
) -> Answer:
    where = f"{request['method']} {request['path']}"
    limit = request.get(_LIMIT)
    keep: Keep | None = None
    if isinstance(spec.filter, CompiledTemplate):
        template, now = spec.filter, utcnow()

        def keep(row: Any) -> bool:
            return bool(template.render({"item": row, "input": ctx.input, "now": now}))

    if not spec.paged:
        response = _request(client, request)
        collected = collect_rows(response.data, where=where, limit=limit, keep=keep)
        return Answer(response.status, response.headers, collected.output())
    pages = getattr(client, "pages", None)
    if pages is None:
        message = f"{module.key}: this client cannot page lists (it has no pages method)"
        raise ConfigError(message)
    found = pages(request["path"], params=request.get("params"), page_size=spec.page_size)
    collected = collect_pages(found, where=where, limit=limit, keep=keep)
    ctx.warnings.extend(collected.warnings)
    return Answer(200, {}, collected.output())


def send(
    module: ActionModule, ctx: ActionContext, client: ClientLike, request: dict[str, Any]
) -> Any:
    """Send the request of an action and return its answer (as the client would)."""
    spec = module.extensions
    response: Any
    if spec.download is not None:
        download = getattr(client, "download", None)
        if download is None:
            message = f"{module.key}: this client cannot download files (no download method)"
            raise ConfigError(message)
        result = download(request["path"], request[_DEST], params=request.get("params"))
        headers = {"content-type": result.content_type} if result.content_type else {}
        path = Path(result.path)
        output = {
            "path": str(path),
            "fileName": path.name,
            "size": int(result.size),
            "sha256": str(result.sha256),
            "contentType": result.content_type,
        }
        response = Answer(200, headers, output)
    elif spec.list is not None:
        response = _collect(module, spec.list, ctx, client, request)
    else:
        response = _request(client, request)
    if spec.warn_if:
        headers = {str(key).lower(): value for key, value in response.headers.items()}
        context = {"response": response.data, "headers": headers, "input": ctx.input}
        context["now"] = utcnow()
        for entry in spec.warn_if:
            if _render(entry.when, context):
                ctx.warnings.append(str(_render(entry.message, context)))
    return response
