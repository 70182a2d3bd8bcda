"""Paging reads every item of every page and stops where the spec says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import responses
from responses import matchers

from practiceflow.api import Client, Page
from practiceflow.api.paging import extract_items, iter_pages
from practiceflow.errors import ConfigError

from .conftest import BASE

GROUPS = f"{BASE}/api/v1/groups/list"
ENTITIES = f"{BASE}/api/v1/entities"


def _add_pages(
    rsps: responses.RequestsMock,
    url: str,
    pages: list[Any],
    extra: dict[str, str] | None = None,
    start: int = 1,
) -> None:
    for number, body in enumerate(pages, start=start):
        rsps.get(
            url,
            json=body,
            match=[matchers.query_param_matcher({**(extra or {}), "pageNumber": str(number)})],
        )


def rows(start: int, count: int) -> list[dict[str, int]]:
    return [{"id": i} for i in range(start, start + count)]


@pytest.mark.parametrize(
    ("pages", "page_size", "expected_ids"),
    [
        pytest.param(
            [rows(0, 3), rows(3, 3), rows(6, 1)], None, list(range(7)), id="fixed-short-page"
        ),
        pytest.param([rows(0, 3), rows(3, 3), []], None, list(range(6)), id="fixed-empty-page"),
        pytest.param([[]], None, [], id="empty-list"),
        pytest.param([rows(0, 2), rows(2, 2), rows(4, 1)], 2, list(range(5)), id="page-size-short"),
        pytest.param(
            [{"items": rows(0, 2), "hasMore": True}, {"items": rows(2, 2), "hasMore": False}],
            2,
            list(range(4)),
            id="object-has-more-false",
        ),
        pytest.param(
            [{"data": rows(0, 3), "hasMore": True}, {"data": rows(3, 3)}, {"data": []}],
            None,
            list(range(6)),
            id="object-data-field",
        ),
        pytest.param(
            [{"total": 9, "results": rows(0, 3), "hasMore": False}],
            None,
            list(range(3)),
            id="full-page-but-has-more-false",
        ),
    ],
)
def test_paginate_yields_every_item_and_stops_where_the_spec_says(
    rsps: responses.RequestsMock,
    client: Client,
    pages: list[Any],
    page_size: int | None,
    expected_ids: list[int],
) -> None:
    extra = {"isActive": "true"}
    if page_size is not None:
        extra["pageSize"] = str(page_size)
    _add_pages(rsps, GROUPS, pages, extra)
    items = list(
        client.paginate("/api/v1/groups/list", params={"isActive": True}, page_size=page_size)
    )
    assert [item["id"] for item in items] == expected_ids
    assert len(rsps.calls) == len(pages)


def test_fixed_page_size_is_learned_from_the_first_page(
    rsps: responses.RequestsMock, client: Client
) -> None:
    _add_pages(rsps, ENTITIES, [rows(0, 25), rows(25, 25), rows(50, 24)])
    pages = list(client.pages("/api/v1/entities"))
    assert [(p.number, len(p.items), p.has_more, p.page_size) for p in pages] == [
        (1, 25, True, 25),
        (2, 25, True, 25),
        (3, 24, False, 25),
    ]
    assert "pageSize" not in (rsps.calls[0].request.params or {})


def test_pages_resume_from_a_checkpoint(rsps: responses.RequestsMock, client: Client) -> None:
    _add_pages(rsps, ENTITIES, [rows(10, 5), rows(15, 2)], start=3)
    pages = list(client.pages("/api/v1/entities", start_page=3))
    assert [p.number for p in pages] == [3, 4]
    assert isinstance(pages[0], Page)


def test_limit_stops_without_fetching_more_pages(
    rsps: responses.RequestsMock, client: Client
) -> None:
    _add_pages(rsps, ENTITIES, [rows(0, 5)])
    assert [i["id"] for i in client.paginate("/api/v1/entities", limit=3)] == [0, 1, 2]
    assert len(rsps.calls) == 1


def test_limit_zero_sends_nothing(rsps: responses.RequestsMock, client: Client) -> None:
    assert list(client.paginate("/api/v1/entities", limit=0)) == []
    assert len(rsps.calls) == 0


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        pytest.param({"page_size": 101}, "valid values are 1 to 100", id="page-size-over-100"),
        pytest.param({"page_size": 0}, "valid values are 1 to 100", id="page-size-zero"),
        pytest.param({"start_page": 10001}, "valid values are 1 to 10000", id="start-page-over"),
        pytest.param({"start_page": 0}, "valid values are 1 to 10000", id="start-page-zero"),
        pytest.param({"params": {"pageNumber": 2}}, "pass start_page=", id="page-number-param"),
        pytest.param({"params": {"pageSize": 20}}, "pass page_size=", id="page-size-param"),
        pytest.param({"limit": -1}, "expected an integer >= 0", id="negative-limit"),
    ],
)
def test_bad_paging_arguments_are_refused_before_sending(
    rsps: responses.RequestsMock, client: Client, kwargs: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ConfigError, match=needle):
        list(client.paginate("/api/v1/eforms/templates", **kwargs))
    assert len(rsps.calls) == 0


def test_page_number_cap_is_an_error_not_a_silent_stop(
    rsps: responses.RequestsMock, client: Client
) -> None:
    _add_pages(rsps, ENTITIES, [rows(0, 3), rows(3, 3)], start=9999)
    pages = client.pages("/api/v1/entities", start_page=9999)
    assert next(pages).number == 9999
    last = next(pages)
    assert (last.number, last.has_more) == (10000, True)
    with pytest.raises(ConfigError, match="pageNumber cannot go past 10000"):
        next(pages)
    assert len(rsps.calls) == 2


def test_a_last_page_at_the_cap_ends_normally(rsps: responses.RequestsMock, client: Client) -> None:
    _add_pages(rsps, ENTITIES, [rows(0, 3), rows(3, 1)], start=9999)
    assert len(list(client.paginate("/api/v1/entities", start_page=9999))) == 4


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param([1, 2], ([1, 2], None), id="bare-list"),
        pytest.param({"items": [1], "hasMore": True}, ([1], True), id="items"),
        pytest.param({"results": [1], "hasMore": "yes"}, ([1], None), id="non-bool-has-more"),
        pytest.param({"page": 1, "rows": [3]}, ([3], None), id="rows"),
        pytest.param({"count": 1, "things": [4]}, ([4], None), id="any-list-field"),
    ],
)
def test_page_envelopes_are_read_tolerantly(data: Any, expected: tuple[Any, Any]) -> None:
    assert extract_items(data) == expected


@pytest.mark.parametrize("data", [{"entityKey": "k"}, "text", 5, None])
def test_a_non_list_answer_is_a_clear_error(data: Any) -> None:
    with pytest.raises(ConfigError, match="GET /x page 1"):
        list(iter_pages(lambda _q: data, where="GET /x"))


def test_iter_pages_passes_the_query_it_was_given() -> None:
    queries: list[dict[str, Any]] = []

    def fetch(query: dict[str, Any]) -> Any:
        queries.append(query)
        return rows(0, 2) if query["pageNumber"] == 1 else []

    pages: Callable[[], list[Page]] = lambda: list(  # noqa: E731 - a one-off
        iter_pages(fetch, params={"name": "a"}, page_size=2)
    )
    assert [p.number for p in pages()] == [1, 2]
    assert queries == [
        {"name": "a", "pageNumber": 1, "pageSize": 2},
        {"name": "a", "pageNumber": 2, "pageSize": 2},
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"page_size": 500},
        {"limit": -5},
        {"params": {"lastUpdated": "2026-11-22T10:00:00"}},
        {"start_page": 20000},
    ],
)
def test_paging_arguments_are_checked_when_called_not_when_iterated(
    rsps: responses.RequestsMock, client: Client, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError):
        client.paginate("/api/v1/eforms/templates", **kwargs)
    assert len(rsps.calls) == 0


def _walk(pages: list[Any], page_size: int | None) -> tuple[list[Any], list[Page]]:
    answers = iter(pages)
    asked: list[dict[str, Any]] = []

    def fetch(query: dict[str, Any]) -> Any:
        asked.append(query)
        return next(answers)

    walked = list(iter_pages(fetch, page_size=page_size))
    return asked, walked


def test_a_server_ignoring_page_size_is_read_whole_with_one_probe() -> None:
    # 45 rows served 20 a page although 100 were asked for (spec 8: "where supported").
    asked, walked = _walk([rows(0, 20), rows(20, 20), rows(40, 5)], 100)
    assert [row["id"] for page in walked for row in page.items] == list(range(45))
    assert [query["pageNumber"] for query in asked] == [1, 2, 3]
    assert all(query["pageSize"] == 100 for query in asked)


def test_a_short_first_page_costs_one_extra_request_at_most() -> None:
    asked, walked = _walk([rows(0, 7), []], 100)
    assert [row["id"] for page in walked for row in page.items] == list(range(7))
    assert len(asked) == 2


def test_a_list_ignoring_page_number_is_read_once() -> None:
    # A bare array served whole on every page: page 2 repeats page 1 and ends the walk.
    asked, walked = _walk([rows(0, 4), rows(0, 4)], None)
    assert [row["id"] for page in walked for row in page.items] == list(range(4))
    assert len(asked) == 2
    assert walked[-1].repeated
