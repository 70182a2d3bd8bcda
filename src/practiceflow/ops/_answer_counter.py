"""A ``requests`` transport adapter that counts answers, so the client code counts nothing
(a retry is a second exchange, counted again as the API sees it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3 import PoolManager


def outcome_of(status: int) -> str:
    """The outcome label of an HTTP status: ``429`` apart, else its class (``4xx``)."""
    if status == 429:
        return "429"
    return f"{min(max(status // 100, 1), 5)}xx"


class CountingAdapter(HTTPAdapter):
    """Reports each outcome (``2xx``...``5xx``, ``429``, ``error``) to ``count``;
    ``connections``: a pool manager shared with other adapters, closed by its owner."""

    def __init__(
        self, count: Callable[[str], None], *, connections: PoolManager | None = None
    ) -> None:
        self._shared = connections
        super().__init__()
        self._count = count

    def init_poolmanager(
        self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any
    ) -> None:
        """Use the shared pool manager when there is one (``requests`` calls this)."""
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        if self._shared is not None:
            self.poolmanager = self._shared  # the adapter's own manager held no connection

    def close(self) -> None:
        """Close the adapter's connections, unless they are shared (their owner does)."""
        if self._shared is None:
            super().close()

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        """Send as ``HTTPAdapter`` does, then count the outcome."""
        try:
            response = super().send(request, *args, **kwargs)
        except requests.RequestException:
            self._count("error")
            raise
        self._count(outcome_of(response.status_code))
        return response


def counted_session(
    count: Callable[[str], None], *, connections: PoolManager | None = None
) -> requests.Session:
    """A new session whose every exchange is counted (give it to ``Client(session=)``)."""
    session = requests.Session()
    adapter = CountingAdapter(count, connections=connections)
    for prefix in ("https://", "http://"):
        session.mount(prefix, adapter)
    return session
