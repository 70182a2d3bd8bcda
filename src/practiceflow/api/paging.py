"""Paging of list endpoints (spec section 8): every item of every page, and no more.

A list answer is a bare array or an object with a list field (``items``, ``data``...) and
maybe ``hasMore``. Paging stops at an empty page, ``hasMore: false``, a page shorter than
the page size learned so far (a short first page asks once more, in case the server ignores
``pageSize``), or a page repeating the one before (the list ignores ``pageNumber``).
Needing page 10001 is an error, never a silent stop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, Final

from practiceflow.errors import ConfigError

PAGE_NUMBER: Final = "pageNumber"
PAGE_SIZE: Final = "pageSize"
#: The server's page size when ``pageSize`` is supported but not sent.
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 100
MAX_PAGE_NUMBER: Final = 10000
#: Fields of an object page searched (in this order) for the rows, before any other list.
ITEM_FIELDS: Final = ("items", "data", "results", "records", "rows", "value")


@dataclass(frozen=True)
class Page:
    """One page of a list: its ``pageNumber`` (resume after it with ``start_page=number+1``),
    its rows, whether another page follows, and the page size in force (the ``pageSize`` sent,
    else learned from the first page). ``repeated``: it held the very rows of the page before
    (the list ignores ``pageNumber``), left out (``items`` is empty); the walk ends."""

    number: int
    items: list[Any]
    has_more: bool
    page_size: int | None = None
    repeated: bool = False


def extract_items(data: Any, *, where: str = "list") -> tuple[list[Any], bool | None]:
    """Split a list answer into its rows and its ``hasMore`` flag; ConfigError when it is
    neither a list nor an object holding one."""
    if isinstance(data, list):
        return data, None
    if isinstance(data, dict):
        has_more = data.get("hasMore")
        flag = has_more if isinstance(has_more, bool) else None
        for name in ITEM_FIELDS:
            if isinstance(data.get(name), list):
                return data[name], flag
        for value in data.values():
            if isinstance(value, list):
                return value, flag
        keys = ", ".join(sorted(map(str, data))) or "(none)"
        message = (
            f"{where}: got an object with keys {keys} and no list in it; expected a JSON "
            f"array or an object with a list field such as {', '.join(ITEM_FIELDS[:3])}"
        )
        raise ConfigError(message)
    message = (
        f"{where}: got {type(data).__name__}; expected a JSON array or an object with a "
        "list field (is this a list endpoint?)"
    )
    raise ConfigError(message)


def _in_range(value: object, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= high


def _check_page_args(
    where: str, params: Mapping[str, Any], page_size: int | None, start_page: int
) -> None:
    for name, argument in ((PAGE_NUMBER, "start_page"), (PAGE_SIZE, "page_size")):
        if name in params:
            message = f"{where}: params carry {name!r}; pass {argument}= instead"
            raise ConfigError(message)
    if page_size is not None and not _in_range(page_size, MAX_PAGE_SIZE):
        message = (
            f"{where}: page_size got {page_size!r}; valid values are 1 to {MAX_PAGE_SIZE} "
            f"(the server's default is {DEFAULT_PAGE_SIZE}), or None for a fixed server size"
        )
        raise ConfigError(message)
    if not _in_range(start_page, MAX_PAGE_NUMBER):
        message = f"{where}: start_page got {start_page!r}; valid values are 1 to {MAX_PAGE_NUMBER}"
        raise ConfigError(message)


def iter_pages(
    fetch: Callable[[dict[str, Any]], Any],
    *,
    where: str = "list",
    params: Mapping[str, Any] | None = None,
    page_size: int | None = None,
    start_page: int = 1,
) -> Iterator[Page]:
    """Fetch pages one after another until the list ends; ConfigError at once for bad
    arguments, while iterating for an answer that is not a list or more than 10000 pages."""
    base = dict(params or {})
    _check_page_args(where, base, page_size, start_page)
    return _generate_pages(fetch, where, base, page_size, start_page)


def _generate_pages(
    fetch: Callable[[dict[str, Any]], Any],
    where: str,
    base: dict[str, Any],
    page_size: int | None,
    start_page: int,
) -> Iterator[Page]:
    number = start_page
    size: int | None = None  # rows of the longest page seen: the server's page size
    previous: list[Any] | None = None
    while True:
        query = dict(base)
        query[PAGE_NUMBER] = number
        if page_size is not None:
            query[PAGE_SIZE] = page_size
        items, flag = extract_items(fetch(query), where=f"{where} page {number}")
        if previous is not None and items and items == previous:
            # The same rows again: the list ignores pageNumber, it was read whole.
            yield Page(number, [], False, size, repeated=True)
            return
        if size is None:
            # The first page sets the size; shorter than the pageSize sent, it may be
            # the server's own size (pageSize ignored): the next page will tell.
            more = bool(items) and flag is not False
            size = len(items) if page_size is None else page_size
            if flag is None and page_size is not None and 0 < len(items) < page_size:
                size = len(items)
        else:
            size = max(size, len(items))
            more = bool(items) and flag is not False and len(items) >= size
        if flag is True and items:
            more = True
        previous = items
        if more and number >= MAX_PAGE_NUMBER:
            message = (
                f"{where}: page {MAX_PAGE_NUMBER} is full and pageNumber cannot go past "
                f"{MAX_PAGE_NUMBER}; narrow the query (lastUpdated, filters) to read the rest"
            )
            yield Page(number, items, True, size)
            raise ConfigError(message)
        yield Page(number, items, more, size)
        if not more:
            return
        number += 1


def iter_items(pages: Iterator[Page], limit: int | None = None) -> Iterator[Any]:
    """Every item of ``pages``, stopping after ``limit`` (no further page is fetched);
    ConfigError at once when ``limit`` is not an integer >= 0."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        message = f"limit: got {limit!r}; expected an integer >= 0 or None"
        raise ConfigError(message)
    # islice pulls no item (and so no page) beyond the limit.
    return islice(chain.from_iterable(page.items for page in pages), limit)
