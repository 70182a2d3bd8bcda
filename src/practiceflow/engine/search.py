"""Collecting the rows of a list answer as ``{items, count, hasMore}``: paged, filtered, cut.

``hasMore`` is true only when one more kept row exists, so collection reads on past ``limit``
until it finds one. Paging is the client's pager; a page identical to the one before (an
endpoint ignoring ``pageNumber``) stops collection with a warning instead of looping forever.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from practiceflow.api.paging import Page, extract_items

Keep = Callable[[Any], bool]


@runtime_checkable
class PagingClient(Protocol):
    """A client that can page a list endpoint (as :class:`practiceflow.api.Client`)."""

    def pages(
        self,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        page_size: int | None = None,
        start_page: int = 1,
    ) -> Iterator[Page]:
        """Iterate over the pages of a list endpoint."""


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
    """Collect the rows of one list answer (not paged).

    Raises:
        ConfigError: the answer holds no list.
    """
    rows, flag = extract_items(data, where=where)
    items: list[Any] = []
    beyond = _take(rows, items, limit, keep)
    return Collected(items, beyond or flag is True, 1)


def collect_pages(
    pages: Iterator[Page], *, where: str, limit: int | None = None, keep: Keep | None = None
) -> Collected:
    """Collect rows page by page until the list ends or one row lies beyond ``limit``.

    Raises:
        ConfigError: an answer that holds no list, or more than 10000 pages (the pager's).
    """
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
