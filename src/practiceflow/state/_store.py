"""The state store, :class:`StateStore` (every table's SQL mixin joined into one class), and
which store class serves which URL scheme (:func:`open_store`): stores are named by import
path and imported only when used, so that psycopg costs nothing to those who never open a
PostgreSQL store.
"""

from __future__ import annotations

import importlib
from typing import Final

from practiceflow.errors import BugError, ConfigError
from practiceflow.state._runs_sql import SQLRuns
from practiceflow.state._sql import SQLCursors, SQLEvents
from practiceflow.state.attention_rows import SQLAttention
from practiceflow.state.heartbeats import SQLHeartbeats
from practiceflow.state.pending_writes import PendingWriteStore
from practiceflow.state.rows import Clock


class StateStore(
    SQLEvents,
    PendingWriteStore,
    SQLAttention,
    SQLCursors,
    SQLHeartbeats,
    SQLRuns,
):
    """Durable state of triggers and runs, opened with :func:`~practiceflow.state.open_store`,
    closed with :meth:`close` (or as a context manager); safe to share between threads.

    Attributes:
        scheme: the URL scheme the store is registered under (``sqlite``).
        local_reads: whether reads never wait on a network (the webhook receiver then
            looks subscriptions up on its event loop).
    """


_STORES: Final[dict[str, str | type[StateStore]]] = {
    "sqlite": "practiceflow.state._sqlite:SQLiteStore",
    "postgresql": "practiceflow.state._postgres:PostgresStore",
    "postgres": "practiceflow.state._postgres:PostgresStore",
}


def register_store(scheme: str, store: str | type[StateStore]) -> None:
    """Serve ``scheme://...`` URLs with a store class, or its import path as
    ``"package.module:ClassName"``."""
    _STORES[scheme.lower()] = store


def registered_schemes() -> list[str]:
    """The URL schemes :func:`open_store` accepts, sorted."""
    return sorted(_STORES)


def open_store(url: str, *, clock: Clock | None = None) -> StateStore:
    """Open the state store a URL names.

    Args:
        url: ``sqlite:///absolute/path.db``, or a plain file path (SQLite), or
            ``postgresql://user:password@host:port/dbname`` (PostgreSQL).
        clock: the current time, for tests; the system clock when omitted.

    Returns:
        An open store; close it with ``close()`` or use it as a context manager.

    Raises:
        ConfigError: the scheme is unknown, the URL unusable, or the database was
            written by a newer practiceflow.
    """
    head, separator, _ = url.partition("://")
    # No "://": a plain path, including Windows drive paths such as C:\\state.db.
    scheme = head.lower() if separator else "sqlite"
    store = _STORES.get(scheme)
    if store is None:
        # Only the scheme is echoed: the rest of a URL may carry a password.
        message = (
            f"state store URL: got scheme {scheme!r}; valid values are {registered_schemes()}"
            " (or a plain file path for SQLite)"
        )
        raise ConfigError(message)
    if isinstance(store, str):
        module_name, _, class_name = store.partition(":")
        found = getattr(importlib.import_module(module_name), class_name, None)
        if not (isinstance(found, type) and issubclass(found, StateStore)):
            message = f"state store for scheme {scheme!r}: {store!r} is not a StateStore class"
            raise BugError(message)
        store = found
    return store.from_url(url, clock=clock)
