"""The list, download and warn_if sections: load-time checks and their engine parts alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from practiceflow.api.paging import Page
from practiceflow.engine.run_sections import collect_pages, collect_rows, resolve_destination
from practiceflow.errors import ConfigError, ManifestError
from practiceflow.manifest import load_action
from practiceflow.manifest.loader import filter_omit

MODULE = """\
key: probe
title: Probe
description: A module written by this test only.
noun: Probe
needs_write: false
input:
  type: object
  properties:
    limit: {{type: integer, title: Limit}}
request:
  method: {method}
  path: /api/v1/probe
output:
  schema: {{type: object, properties: {{}}}}
sample: {{}}
{extra}
"""


def write(tmp_path: Path, extra: str, method: str = "GET") -> Path:
    path = tmp_path / "probe.yaml"
    path.write_text(MODULE.format(method=method, extra=textwrap.dedent(extra)))
    return path


@pytest.mark.parametrize(
    ("extra", "method", "expected"),
    [
        ("list: {page_size: 10}\n", "GET", "list.page_size: needs 'paged: true'"),
        ("list: {page_size: 500, paged: true}\n", "GET", "list.page_size"),
        ("list: {paged: true, limit: '{{ input.limt }}'}\n", "GET", "did you mean 'limit'?"),
        ("list: {filter: '{{ row.x }}'}\n", "GET", "unknown name 'row' in template"),
        ("download: {to: '{{ input.limit }}'}\n", "POST", "a download is read with GET"),
        ("download: {to: x}\nlist: {}\n", "GET", "a module is a list or a download, not both"),
        ("download: {}\n", "GET", "download.to: required field is missing"),
        ("warn_if: [{when: '{{ response.sent == }}', message: hello there}]\n", "GET", "syntax"),
        ("warn_if: [{when: '{{ output.x }}', message: hello there}]\n", "GET", "unknown name"),
    ],
)
def test_bad_sections_are_load_errors_with_their_location(tmp_path, extra, method, expected):
    with pytest.raises(ManifestError) as caught:
        load_action(write(tmp_path, extra, method))
    text = str(caught.value)
    assert "probe.yaml:" in text
    assert expected in text


def test_a_sound_module_loads_its_sections(tmp_path):
    extra = """\
    list: {paged: true, page_size: 50, limit: '{{ input.limit }}', filter: '{{ item.ok }}'}
    warn_if: [{when: '{{ response.items == [] }}', message: nothing found}]
    """
    module = load_action(write(tmp_path, extra))
    assert module.extensions.list is not None
    assert module.extensions.list.paged is True
    assert module.extensions.list.page_size == 50
    assert len(module.extensions.warn_if) == 1


def test_omit_drops_keys_and_refuses_non_mappings():
    assert filter_omit({"a": 1, "b": 2, "c": 3}, "a", "c") == {"b": 2}
    with pytest.raises(TypeError, match="omit: got list; expected a mapping"):
        filter_omit([1], "a")


def pages_of(*chunks):
    for number, items in enumerate(chunks, start=1):
        yield Page(number, list(items), number < len(chunks), 3)


@pytest.mark.parametrize(
    ("limit", "keep", "items", "more", "read"),
    [
        (None, None, [1, 2, 3, 4, 5], False, 2),
        (2, None, [1, 2], True, 1),
        (3, None, [1, 2, 3], True, 2),
        (5, None, [1, 2, 3, 4, 5], False, 2),
        (0, None, [], True, 1),
        (1, lambda n: n % 2 == 0, [2], True, 2),
        (2, lambda n: n % 2 == 0, [2, 4], False, 2),
    ],
)
def test_collection_stops_once_it_knows_whether_more_remain(limit, keep, items, more, read):
    collected = collect_pages(pages_of([1, 2, 3], [4, 5]), where="GET /x", limit=limit, keep=keep)
    assert (collected.items, collected.has_more, collected.pages) == (items, more, read)
    assert collected.output() == {"items": items, "count": len(items), "hasMore": more}


def test_a_repeated_page_stops_collection_with_a_warning():
    collected = collect_pages(pages_of([1, 2, 3], [1, 2, 3], [1, 2, 3]), where="GET /x")
    assert collected.items == [1, 2, 3]
    assert collected.has_more is False
    assert "page 2 repeats page 1" in collected.warnings[0]


@pytest.mark.parametrize(
    ("data", "limit", "items", "more"),
    [
        ([1, 2], None, [1, 2], False),
        ({"results": [1, 2], "hasMore": True}, None, [1, 2], True),
        ({"items": [1, 2, 3]}, 2, [1, 2], True),
        ({"rows": []}, None, [], False),
    ],
)
def test_one_answer_is_read_whatever_its_envelope(data, limit, items, more):
    collected = collect_rows(data, where="GET /x", limit=limit)
    assert (collected.items, collected.has_more) == (items, more)


def test_an_answer_without_a_list_is_an_error_naming_the_request():
    with pytest.raises(ConfigError, match="GET /x: got an object with keys a"):
        collect_rows({"a": 1}, where="GET /x")


def test_a_destination_may_be_a_file_or_an_existing_folder(tmp_path):
    assert resolve_destination(str(tmp_path / "a.pdf"), "b.pdf", "saveTo") == (
        tmp_path / "a.pdf",
        None,
    )
    assert resolve_destination(str(tmp_path), "b.pdf", "saveTo") == (tmp_path / "b.pdf", None)
    # a file name never climbs out of the folder
    assert resolve_destination(str(tmp_path), "../../etc/b.pdf", "saveTo") == (
        tmp_path / "b.pdf",
        None,
    )


@pytest.mark.parametrize(
    ("to", "filename", "message"),
    [
        ("", "b.pdf", "got ''; expected a file or folder path"),
        (None, "b.pdf", "got None; expected a file or folder path"),
        ("{tmp}/missing/a.pdf", None, "does not exist"),
        ("{tmp}", None, "give a file path to write"),
    ],
)
def test_a_bad_destination_names_the_field(tmp_path, to, filename, message):
    target = to.format(tmp=tmp_path) if isinstance(to, str) else to
    path, issue = resolve_destination(target, filename, "saveTo")
    assert path is None
    assert issue is not None
    assert issue.path == "saveTo"
    assert message in issue.message
