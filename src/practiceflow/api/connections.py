"""Connections a write may be sent on: never one idle long enough for the server to be
closing it.

A server closes a kept-alive connection after an idle time of its own (uvicorn 5 s,
gunicorn 2 s, most load balancers 60 s). A request sent on it just as it closes is reset
before the server reads it; but a reset is also what a server that died mid-write sends,
so the client cannot tell them apart. A read is sent again; a write would be in doubt and
listed for a person, for nothing. So a write takes a connection that was idle at most
:data:`WRITE_MAX_IDLE_S`, or a new one; reads keep every warm connection. A client's own
session (:func:`fresh_session`), the counted sessions of ``serve`` and the fleet's shared
pool (:func:`fresh_pool_manager`) all send so.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Final

import requests
from requests.adapters import HTTPAdapter
from urllib3 import PoolManager
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

if TYPE_CHECKING:
    from urllib3._base_connection import BaseHTTPConnection

__all__ = ["WRITE_MAX_IDLE_S", "FreshWritesAdapter", "fresh_pool_manager", "fresh_session"]

#: Longest a kept-alive connection may have been idle to carry a write, seconds.
WRITE_MAX_IDLE_S: Final = 1.0
_READS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
#: Whether this thread's request, being sent now, is a write (between urlopen and the pool).
_sending = threading.local()


class _FreshForWrites(HTTPConnectionPool):
    """A pool that stamps a connection when it comes back, and closes one idle too long
    when a write asks for it (urllib3 then connects it afresh)."""

    def urlopen(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        _sending.write = method.upper() not in _READS
        try:
            return super().urlopen(method, url, *args, **kwargs)
        finally:
            _sending.write = False

    def _get_conn(self, timeout: float | None = None) -> BaseHTTPConnection:
        conn = super()._get_conn(timeout)
        idle_since: float | None = getattr(conn, "pf_idle_since", None)
        if (
            getattr(_sending, "write", False)
            and idle_since is not None
            and time.monotonic() - idle_since > WRITE_MAX_IDLE_S
        ):
            conn.close()
        return conn

    def _put_conn(self, conn: BaseHTTPConnection | None) -> None:
        if conn is not None:
            conn.pf_idle_since = time.monotonic()  # type: ignore[attr-defined]
        super()._put_conn(conn)


class _FreshHTTPSPool(_FreshForWrites, HTTPSConnectionPool):
    pass


_POOL_CLASSES: Final[dict[str, type[HTTPConnectionPool]]] = {
    "http": _FreshForWrites,
    "https": _FreshHTTPSPool,
}


def fresh_pool_manager(maxsize: int) -> PoolManager:
    """A pool manager (connections shared by many sessions) whose pools keep writes off
    stale connections, ``maxsize`` kept per host."""
    manager = PoolManager(maxsize=maxsize)
    manager.pool_classes_by_scheme = dict(_POOL_CLASSES)
    return manager


class FreshWritesAdapter(HTTPAdapter):
    """``requests``' adapter whose pools send a write only on a connection idle at most
    :data:`WRITE_MAX_IDLE_S` (module docstring)."""

    def init_poolmanager(
        self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any
    ) -> None:
        """As ``HTTPAdapter`` does, with this module's pools (``requests`` calls this)."""
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOL_CLASSES)


def fresh_session(adapter: FreshWritesAdapter | None = None) -> requests.Session:
    """A new session with ``adapter`` (a new :class:`FreshWritesAdapter`) for http and https."""
    session = requests.Session()
    adapter = adapter or FreshWritesAdapter()
    for prefix in ("https://", "http://"):
        session.mount(prefix, adapter)
    return session
