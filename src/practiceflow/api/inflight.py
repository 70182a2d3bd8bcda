"""Work done while the API works on a request: after the request is written, before its
answer is read.

:meth:`~practiceflow.api.Client.send` takes a ``while_waiting`` callable. The runner passes
its journal commits that no request has to wait for, so that they cost no time of their
own: the API takes longer to answer than they take to commit.

The moment is seen by the connections of :class:`InFlightAdapter`, which a
:class:`~practiceflow.api.Client` mounts on the session it creates. Where it is not seen (a
session of the caller's own, a proxy, a request that failed before it was written),
:func:`work_while_waiting` calls the work once the exchange is over. Either way the work
runs exactly once, on the sending thread, and an exception it raises is raised when the
exchange is over, never in the middle of reading the answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.response import HTTPResponse

__all__ = ["InFlightAdapter", "work_while_waiting"]

_local = threading.local()


class _Waiting:
    """One piece of work, run once, its exception kept for the end of the exchange."""

    def __init__(self, work: Callable[[], None]) -> None:
        self.work = work
        self.done = False
        self.error: BaseException | None = None

    def run(self) -> None:
        if self.done:
            return
        self.done = True
        try:
            self.work()
        except BaseException as exc:  # raised again after the exchange
            self.error = exc


def _run_waiting() -> None:
    """Run this thread's waiting work, if any (the request has just been written)."""
    waiting: _Waiting | None = getattr(_local, "waiting", None)
    if waiting is not None:
        _local.waiting = None
        waiting.run()


@contextmanager
def work_while_waiting(work: Callable[[], None] | None) -> Iterator[None]:
    """Have ``work`` run while the API works on the request sent inside the block.

    It runs once: when the first request sent inside has been written, or else when the
    block ends. If it raised, its exception is raised when the block ends (after any
    exception of the block, which becomes its context).
    """
    if work is None:
        yield
        return
    waiting = _Waiting(work)
    outer = getattr(_local, "waiting", None)
    _local.waiting = waiting
    try:
        yield
    finally:
        _local.waiting = outer
        waiting.run()
        if waiting.error is not None:
            raise waiting.error


class _Connection(HTTPConnection):
    def getresponse(self) -> HTTPResponse:  # type: ignore[override]
        _run_waiting()
        return super().getresponse()


class _TLSConnection(_Connection, HTTPSConnection):
    """The TLS connection, with :class:`_Connection`'s ``getresponse``."""


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


class InFlightAdapter(HTTPAdapter):
    """``requests``' adapter whose connections run the waiting work of
    :func:`work_while_waiting` once a request is written (direct connections; a proxy's
    are left as they are)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        # The manager's table is shared with every other one; give this one its own.
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
