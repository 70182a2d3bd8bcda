"""Compiles the optional sections of an action module: ``list``, ``download`` and ``warn_if``.

Also registers the ``omit`` filter tolerant modules use to pass extra input fields through.
Running the sections is :mod:`practiceflow.engine.run_sections`' business.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from practiceflow.errors import Issue
from practiceflow.manifest.yamlpos import JsonPath, Located
from practiceflow.templating import CompiledTemplate, add_filter

#: Names module templates may read: requests, ``list.limit`` and ``download`` read input;
#: ``list.filter`` and polls read rows too; ``output.map`` and ``warn_if`` read the answer.
INPUT_NAMES = frozenset({"input", "now"})
ITEM_NAMES = INPUT_NAMES | {"item"}
ANSWER_NAMES = INPUT_NAMES | {"response", "headers"}

Template = CompiledTemplate | str | None


def filter_omit(value: Any, *keys: str) -> dict[str, Any]:
    """``{{ input | omit('entityKey') }}``: a copy of a mapping without some keys (TypeError
    for anything else); tolerant modules pass on the input fields they do not use."""
    if not isinstance(value, Mapping):
        message = f"omit: got {type(value).__name__}; expected a mapping"
        raise TypeError(message)
    return {key: item for key, item in value.items() if key not in keys}


add_filter("omit", filter_omit)


@dataclass(frozen=True)
class ListSpec:
    """How a list answer becomes ``{items, count, hasMore}``."""

    paged: bool = False
    page_size: int | None = None
    limit: Template = None
    filter: Template = None


@dataclass(frozen=True)
class DownloadSpec:
    """Where a file answer is written."""

    to: Template
    filename: Template = None


@dataclass(frozen=True)
class WarningSpec:
    """One ``warn_if`` entry: when ``when`` renders true, ``message`` is a warning."""

    when: Template
    message: Template


@dataclass(frozen=True)
class Extensions:
    """The optional sections of one action module (all empty for a plain request)."""

    list: ListSpec | None = None
    download: DownloadSpec | None = None
    warn_if: tuple[WarningSpec, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return self.list is not None or self.download is not None or bool(self.warn_if)


def compile_extensions(
    data: Mapping[str, Any],
    checked: Callable[..., Any],
    issues: list[Issue],
    *,
    file: str,
    located: Located,
) -> Extensions:
    """Compile the optional sections, appending to ``issues`` (``checked``: the module's
    :func:`~practiceflow.manifest.lint.compile_checked`)."""

    def compiled(section: Mapping[str, Any], at: JsonPath, allowed: Iterable[str]) -> Template:
        value = section.get(str(at[-1]))
        tree = None if value is None else checked(value, at, allowed=allowed)
        return tree if isinstance(tree, CompiledTemplate | str) else None

    spec_list: ListSpec | None = None
    spec_download: DownloadSpec | None = None
    raw_list = data.get("list")
    if isinstance(raw_list, Mapping):
        size = raw_list.get("page_size")
        spec_list = ListSpec(
            paged=bool(raw_list.get("paged", False)),
            page_size=size if isinstance(size, int) else None,
            limit=compiled(raw_list, ("list", "limit"), INPUT_NAMES),
            filter=compiled(raw_list, ("list", "filter"), ITEM_NAMES),
        )
        if size is not None and not spec_list.paged:
            issues.append(located.issue(file, ("list", "page_size"), "needs 'paged: true'"))
    raw_download = data.get("download")
    if isinstance(raw_download, Mapping):
        spec_download = DownloadSpec(
            to=compiled(raw_download, ("download", "to"), INPUT_NAMES),
            filename=compiled(raw_download, ("download", "filename"), INPUT_NAMES),
        )
        request = data.get("request")
        method = request.get("method") if isinstance(request, Mapping) else None
        if method not in (None, "GET"):
            message = f"a download is read with GET; got request.method {method!r}"
            issues.append(located.issue(file, ("download",), message))
        if spec_list is not None:
            message = "a module is a list or a download, not both"
            issues.append(located.issue(file, ("download",), message))
    warnings: list[WarningSpec] = []
    raw_warnings = data.get("warn_if")
    # The meta-schema's issues are reported with these; a wrong type is skipped here.
    for index, raw in enumerate(raw_warnings if isinstance(raw_warnings, list) else []):
        if isinstance(raw, Mapping):
            when = compiled(raw, ("warn_if", index, "when"), ANSWER_NAMES)
            message_template = compiled(raw, ("warn_if", index, "message"), ANSWER_NAMES)
            warnings.append(WarningSpec(when=when, message=message_template))
    return Extensions(list=spec_list, download=spec_download, warn_if=tuple(warnings))
