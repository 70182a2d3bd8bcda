"""Compiles the optional sections of an action module: ``list``, ``download`` and ``warn_if``.

Also registers the ``omit`` filter tolerant modules use to pass extra input fields through.
Running the sections is :mod:`practiceflow.engine.run_sections`' business.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from practiceflow.errors import Issue
from practiceflow.manifest import lint
from practiceflow.manifest.yamlpos import JsonPath, Located, format_path
from practiceflow.templating import CompiledTemplate, Origin, add_filter, compile_tree

#: Names a ``list.limit`` template may read.
LIMIT_NAMES = frozenset({"input", "now"})
#: Names a ``list.filter`` template may read.
FILTER_NAMES = frozenset({"item", "input", "now"})
#: Names ``download`` templates may read.
DOWNLOAD_NAMES = frozenset({"input", "now"})
#: Names ``warn_if`` templates may read.
WARNING_NAMES = frozenset({"response", "headers", "input", "now"})

Template = CompiledTemplate | str | None


def filter_omit(value: Any, *keys: str) -> dict[str, Any]:
    """``{{ input | omit('entityKey') }}``: a copy of a mapping without some keys.

    Tolerant modules send the fields of their input that they do not use themselves (path
    parameters, ``limit``, client-side filters) as given, for shapes the spec leaves
    "not shown".

    Raises:
        TypeError: when ``value`` is not a mapping.
    """
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


def _compile(
    value: Any,
    at: JsonPath,
    origin_for: Callable[[JsonPath], Origin],
    allowed: Iterable[str],
    fields: list[str],
    file: str,
    issues: list[Issue],
) -> Template:
    if value is None:
        return None
    tree, found = compile_tree(value, origin_for, at)
    issues.extend(found)
    issues.extend(
        lint.check_template_names(
            lint.templates_of(tree), allowed=allowed, input_fields=fields, file=file
        )
    )
    return tree if isinstance(tree, CompiledTemplate | str) else None


def compile_extensions(
    data: Mapping[str, Any],
    origin_for: Callable[[JsonPath], Origin],
    input_fields: Iterable[str],
    *,
    file: str,
    located: Located,
) -> tuple[Extensions, list[Issue]]:
    """Compile the ``list``, ``download`` and ``warn_if`` sections of an action module."""
    issues: list[Issue] = []
    fields = list(input_fields)
    spec_list: ListSpec | None = None
    spec_download: DownloadSpec | None = None
    raw_list = data.get("list")
    if isinstance(raw_list, Mapping):
        size = raw_list.get("page_size")
        spec_list = ListSpec(
            paged=bool(raw_list.get("paged", False)),
            page_size=size if isinstance(size, int) else None,
            limit=_compile(
                raw_list.get("limit"),
                ("list", "limit"),
                origin_for,
                LIMIT_NAMES,
                fields,
                file,
                issues,
            ),
            filter=_compile(
                raw_list.get("filter"),
                ("list", "filter"),
                origin_for,
                FILTER_NAMES,
                fields,
                file,
                issues,
            ),
        )
        if raw_list.get("page_size") is not None and not spec_list.paged:
            issues.append(_issue(file, located, ("list", "page_size"), "needs 'paged: true'"))
    raw_download = data.get("download")
    if isinstance(raw_download, Mapping):
        spec_download = DownloadSpec(
            to=_compile(
                raw_download.get("to"),
                ("download", "to"),
                origin_for,
                DOWNLOAD_NAMES,
                fields,
                file,
                issues,
            ),
            filename=_compile(
                raw_download.get("filename"),
                ("download", "filename"),
                origin_for,
                DOWNLOAD_NAMES,
                fields,
                file,
                issues,
            ),
        )
        method = (
            data.get("request", {}).get("method")
            if isinstance(data.get("request"), Mapping)
            else None
        )
        if method not in (None, "GET"):
            message = f"a download is read with GET; got request.method {method!r}"
            issues.append(_issue(file, located, ("download",), message))
        if spec_list is not None:
            message = "a module is a list or a download, not both"
            issues.append(_issue(file, located, ("download",), message))
    warnings: list[WarningSpec] = []
    raw_warnings = data.get("warn_if")
    # The meta-schema's issues are reported with these; a wrong type is skipped here.
    for index, raw in enumerate(raw_warnings if isinstance(raw_warnings, list) else []):
        if not isinstance(raw, Mapping):
            continue
        at: JsonPath = ("warn_if", index)
        warnings.append(
            WarningSpec(
                when=_compile(
                    raw.get("when"), (*at, "when"), origin_for, WARNING_NAMES, fields, file, issues
                ),
                message=_compile(
                    raw.get("message"),
                    (*at, "message"),
                    origin_for,
                    WARNING_NAMES,
                    fields,
                    file,
                    issues,
                ),
            )
        )
    extensions = Extensions(list=spec_list, download=spec_download, warn_if=tuple(warnings))
    return extensions, issues


def _issue(file: str, located: Located, path: JsonPath, message: str) -> Issue:
    line, column = located.where(path)
    return Issue(file, line, column, format_path(path), message)
