"""The execution of one action module: nothing is sent before the last check passed (input,
hook, checks, rendering; a dry run describes and stops). An output that does not fit its schema
is a warning, never an error: the API has already acted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from practiceflow.api.client import RequestHooks
from practiceflow.engine import run_sections
from practiceflow.engine.masking import (
    ErrorT,
    mask_error,
    mask_for_template,
    mask_request,
    pii_match,
    values_at,
)
from practiceflow.engine.run_sections import Answer
from practiceflow.errors import (
    ApiError,
    InDoubtError,
    InputError,
    Issue,
    PracticeflowError,
    TemplateError,
)
from practiceflow.hooks import ActionContext, ClientLike, get_check, get_hook
from practiceflow.manifest.choices import ChoiceSource, accepted_values, options_from_rows
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.manifest.module_registry import ModuleRegistry, default_registry
from practiceflow.manifest.validation import issues_for
from practiceflow.manifest.yamlpos import JsonPath, Located
from practiceflow.templating import CompiledTemplate, render_tree, utcnow

logger = logging.getLogger("practiceflow.engine")


@dataclass(frozen=True)
class ActionResult:
    """What running an action produced.

    Attributes:
        output: the mapped output (empty in a dry run).
        warnings: what the user should know (skipped checks, output surprises...).
        request: the request as sent (or, in a dry run, as it would be), secrets and
            personal fields masked.
        status: the HTTP status of the answer; None in a dry run.
    """

    action: str
    output: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    request: dict[str, Any] = field(default_factory=dict)
    status: int | None = None
    dry_run: bool = False


def validate_input(
    module: ActionModule,
    data: Any,
    *,
    file: str = "input",
    located: Located | None = None,
    prefix: JsonPath = (),
) -> list[Issue]:
    """Check input against an action's input schema; personal values are not echoed."""
    pii = module.pii_paths

    def personal(path: JsonPath) -> bool:
        return pii_match(path[len(prefix) :], pii)

    return issues_for(
        module.input_validator, data, file=file, located=located, prefix=prefix, redact=personal
    )


def run_action(
    key_or_module: str | ActionModule,
    input: Mapping[str, Any],
    client: ClientLike | None,
    *,
    dry_run: bool = False,
    registry: ModuleRegistry | None = None,
    show_personal: bool = False,
    hooks: RequestHooks | None = None,
) -> ActionResult:
    """Run one action (see the module docstring for the order of events).

    Args:
        key_or_module: an action key (looked up in ``registry``) or a loaded module.
        input: the action's input.
        client: a :class:`practiceflow.api.Client` (or anything with its methods); may be
            None in a dry run, which then shows the path without a base URL.
        dry_run: render and describe the request; send nothing.
        registry: where to find the key; default: the shipped modules.
        show_personal: in a dry run, describe the request with the caller's own personal
            data unmasked (credentials stay masked). For a person's own terminal only:
            the runner never asks for it, so nothing unmasked reaches a journal or a log.
        hooks: told about the action's own request(s) (every page of a list), not about
            the reads its checks, hooks or read-back make; the runner journals through it.

    Returns:
        The result.

    Raises:
        InputError: the input does not fit, or a check refused it; nothing was sent.
        TemplateError: a template failed to render; nothing was sent.
        ApiError: the API answered with an error (same class, the module's hint added).
        InDoubtError: a write may or may not have been acted on.
        TransportError: no usable answer.
        ConfigError: unknown action key, or no client outside a dry run.
    """
    if isinstance(key_or_module, ActionModule):
        module = key_or_module
    else:
        module = (registry or default_registry()).action(key_or_module)
    issues = validate_input(module, input)
    if issues:
        raise InputError(module.key, issues)
    if client is None and not dry_run:
        raise InputError(module.key, [Issue("input", 0, 0, "", "no client to send with")])

    ctx = ActionContext(module=module, input=dict(input), client=client, dry_run=dry_run)
    _run_hooks(ctx)
    request, masked = _render_request(module, ctx.input)
    if module.extensions:  # list, download, warn_if: see engine/run_sections.py
        run_sections.prepare(module, ctx, request, masked)
    # By value too: a hook or a template may have moved a personal value anywhere.
    masked = mask_request(
        mask_request(masked, ctx.input, module.pii_paths), input, module.pii_paths
    )

    if dry_run or client is None:
        described = _describe(client, request if show_personal else masked)
        return ActionResult(module.key, {}, ctx.warnings, described, None, True)

    described = _describe_sent(client, masked)
    try:
        sender = client if hooks is None else client.hooked(hooks)
        if module.extensions:  # list, download, warn_if: see engine/run_sections.py
            response = run_sections.send(module, ctx, sender, request)
        else:  # a plain request stays on the short path (one file fewer per event)
            response = sender.request(
                request["method"],
                request["path"],
                params=request.get("params"),
                json=request.get("json"),
                headers=request.get("headers"),
            )
        response = _completed(module, client, response)
    except PracticeflowError as exc:
        # Everything that shows this error (the CLI, logs, the journal, the console) shows
        # it masked: personal values of the input, fragments of them, and named fields.
        raise _masked(_with_module_hints(_masked(exc, input, ctx), module), input, ctx) from exc
    output = _map_output(module, ctx, response)
    return ActionResult(module.key, output, ctx.warnings, described, response.status, False)


def _completed(module: ActionModule, client: ClientLike, response: Any) -> Any:
    """A create answered 2xx with no body or only an id is completed by reading the record its
    ``Location`` names: a read, never a second write. Anything else is returned as it came."""
    data = response.data
    if module.kind != "create" or not 200 <= int(response.status) < 300:
        return response
    if isinstance(data, Mapping) and len(data) > 1:
        return response
    headers = {str(key).lower(): value for key, value in response.headers.items()}
    location = headers.get("location")
    if not isinstance(location, str) or "/api/" not in location:
        return response
    path = location[location.index("/api/") :].split("?", 1)[0]
    try:
        record = client.get(path)
    except PracticeflowError as exc:
        logger.warning("%s: reading the created record back failed: %s", module.key, exc)
        return response
    if not isinstance(record, Mapping):
        return response
    merged = {**record, **(data if isinstance(data, Mapping) else {})}
    return Answer(int(response.status), dict(response.headers), merged)


def _run_hooks(ctx: ActionContext) -> None:
    module = ctx.module
    steps = [("hook", get_hook(module.hook))] if module.hook else []
    steps += [("check", get_check(name)) for name in module.checks]
    for what, named in steps:
        if ctx.dry_run and named.reads:
            ctx.warnings.append(
                f"{what} {named.name!r} not run: it reads the API and a dry run sends nothing"
            )
            continue
        result = named.func(ctx)
        if ctx.problems:
            raise InputError(module.key, ctx.problems)
        if what == "hook" and result is not None:
            ctx.input = dict(result)


def _render_pair(
    tree: Any, context: Mapping[str, Any], pii: frozenset[tuple[str, ...]]
) -> tuple[Any, Any]:
    """Render a tree, and at the same time its copy with personal fields masked."""
    if isinstance(tree, CompiledTemplate):
        value = tree.render(context)
        return value, mask_for_template(tree, value, pii)
    if isinstance(tree, dict):
        plain: dict[str, Any] = {}
        masked: dict[str, Any] = {}
        for key, child in tree.items():
            value, hidden = _render_pair(child, context, pii)
            if value is not None:
                plain[key] = value
                masked[key] = hidden
        return plain, masked
    if isinstance(tree, list):
        pairs = [_render_pair(child, context, pii) for child in tree]
        kept = [pair for pair in pairs if pair[0] is not None]
        return [pair[0] for pair in kept], [pair[1] for pair in kept]
    return tree, tree


#: Each part of a request spec and the name the client takes it by.
_PARTS = (("path", "path"), ("query", "params"), ("headers", "headers"), ("body", "json"))


def _render_request(
    module: ActionModule, data: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = module.request
    context = {"input": data, "now": utcnow()}
    pii = module.pii_paths
    request: dict[str, Any] = {"method": spec.method}
    masked: dict[str, Any] = {"method": spec.method}
    for part, name in _PARTS:
        tree = getattr(spec, part)
        if tree is None:
            continue
        value, hidden = _render_pair(tree, context, pii)
        if part == "path":
            _check_path(spec.path, value)
        elif part == "headers" and isinstance(value, dict):
            value = {key: str(item) for key, item in value.items()}
            hidden = {key: str(item) for key, item in hidden.items()}
        if value is not None:
            request[name], masked[name] = value, hidden
    return request, masked


def _check_path(template: CompiledTemplate | str, path: Any) -> None:
    segments = path.split("/") if isinstance(path, str) else []
    bad = (
        not isinstance(path, str)
        or not path.startswith("/api/v1/")
        or any(segment in (".", "..") for segment in segments)
        or any(char in path for char in "?# \t\r\n")
    )
    if bad:
        message = (
            f"rendered path {path!r} is not a clean path under /api/v1/ (use the pathseg filter)"
        )
        if isinstance(template, CompiledTemplate):
            raise TemplateError(template.origin.issue(message))
        raise TemplateError(Issue("<module>", 0, 0, "request.path", message))  # pragma: no cover


def _describe(client: ClientLike | None, masked: Mapping[str, Any]) -> dict[str, Any]:
    if client is None:
        return _describe_sent(None, masked)
    return client.describe_request(
        masked["method"],
        masked["path"].replace("***", "%2A%2A%2A"),  # a masked segment, as a valid path
        params=masked.get("params"),
        json=masked.get("json"),
        headers=masked.get("headers"),
    )


def _describe_sent(client: ClientLike | None, masked: Mapping[str, Any]) -> dict[str, Any]:
    """A light description of a request being sent (the client adds its own headers)."""
    url = str(getattr(client, "base_url", "")) + masked["path"]
    if masked.get("params"):
        url += "?" + urlencode(masked["params"], doseq=True)
    return {
        "method": masked["method"],
        "url": url,
        "headers": dict(masked.get("headers") or {}),
        "json": masked.get("json"),
    }


def _masked(exc: ErrorT, input: Mapping[str, Any], ctx: ActionContext) -> ErrorT:
    pii = ctx.module.pii_paths
    return mask_error(mask_error(exc, ctx.input, pii), input, pii)


def _with_module_hints(exc: PracticeflowError, module: ActionModule) -> PracticeflowError:
    if isinstance(exc, ApiError):
        return _with_module_hint(exc, module)
    cause = exc.cause if isinstance(exc, InDoubtError) else None
    if (
        isinstance(exc, InDoubtError)
        and isinstance(cause, ApiError)
        and cause.status in module.errors
    ):
        hinted = InDoubtError(exc.method, exc.path, _with_module_hint(cause, module))
        hinted.__cause__ = exc
        return hinted
    return exc


def _with_module_hint(exc: ApiError, module: ActionModule) -> ApiError:
    hint = module.errors.get(exc.status)
    if not hint:
        return exc
    if exc.hint and exc.hint != type(exc).default_hint:
        hint = f"{hint}; {exc.hint}"
    # Same class, same attributes (retry_after included): only the hint and message change.
    clone = exc.__class__.__new__(exc.__class__)
    clone.__dict__.update(exc.__dict__)
    clone.hint = hint
    clone.args = (clone._render(),)
    return clone


def _map_output(module: ActionModule, ctx: ActionContext, response: Any) -> dict[str, Any]:
    data = response.data
    spec = module.output
    if spec.map is None:
        mapped: Any = {}
    else:
        headers = (
            {str(key).lower(): value for key, value in response.headers.items()}
            if spec.reads_headers
            else {}
        )
        context = {"response": data, "headers": headers, "input": ctx.input, "now": utcnow()}
        mapped = render_tree(spec.map, context)
        if not isinstance(mapped, Mapping):
            message = f"output.map rendered {type(mapped).__name__}; expected a mapping"
            origin = spec.map.origin if isinstance(spec.map, CompiledTemplate) else None
            raise TemplateError(
                origin.issue(message)
                if origin
                else Issue(module.source, 0, 0, "output.map", message)
            )
    output = dict(mapped)
    if spec.passthrough or spec.map is None:
        if isinstance(data, Mapping):
            output = {**data, **mapped}
        elif isinstance(data, list):
            output = {"items": data, **mapped}
    for issue in issues_for(spec.validator, output, file="output"):
        where = issue.path or "(top)"
        message = f"the answer does not fit the output schema of {module.key}: {where}: "
        ctx.warnings.append(message + issue.message)
    return output


#: Valid values named in one message at most.
SHOWN = 20


def check_choices(
    module: ActionModule | TriggerModule,
    data: Any,
    client: ClientLike,
    registry: ModuleRegistry,
    *,
    file: str = "input",
    located: Located | None = None,
) -> list[Issue]:
    """Compare the input's ``x-choices`` fields with the lists they come from, each read once
    (a failed read raises; the caller sends nothing), as case-insensitive text, as the API
    resolves names; the module's own checks stay the stricter judge."""
    issues: list[Issue] = []
    lists: dict[tuple[str, str], list[Any]] = {}
    for path, source in module.choices.items():
        places = list(values_at(data, path))
        if not places:
            continue
        rows = _rows(source, client, registry, lists)
        accepted = accepted_values(rows, source)
        for at, value in places:
            if str(value).casefold() in accepted:
                continue
            valid = [option for option, _label in options_from_rows(rows, source)]
            more = f" and {len(valid) - SHOWN} more" if len(valid) > SHOWN else ""
            message = (
                f"got {value!r}; valid values are {valid[:SHOWN]!r}{more} (from {source.action})"
            )
            issues.append((located or Located(None)).issue(file, at, message))
    return issues


def _rows(
    source: ChoiceSource,
    client: ClientLike,
    registry: ModuleRegistry,
    cache: dict[tuple[str, str], list[Any]],
) -> list[Any]:
    key = (source.action, repr(sorted(source.with_.items())))
    if key not in cache:
        result = run_action(source.action, dict(source.with_), client, registry=registry)
        items = result.output.get("items")
        cache[key] = list(items) if isinstance(items, list) else []
    return cache[key]
