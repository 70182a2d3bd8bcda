"""The store's shared primitives (connections, transactions, times): :class:`StoreBase`,
inherited by every SQL mixin and :class:`StateStore`.

A subclass gives the database: its ``Dialect`` and its transactions. What it must
guarantee, and the methods rely on:

* a write transaction (:meth:`StoreBase._write`) that reads and then writes is never
  interleaved with another writer's on the same rows: SQLite takes the file's write lock
  at BEGIN, PostgreSQL locks the rows read (``Dialect.lock_row``) or a key
  (:meth:`StoreBase._lock`);
* uniqueness is the database's (unique indexes, ``ON CONFLICT DO NOTHING``), so that
  concurrent threads or processes agree on one event, one run, one subscription;
* inside :meth:`StoreBase.atomic`, every call of the thread joins the block's transaction.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

from practiceflow.errors import BugError
from practiceflow.state._dialect import Connection, Dialect, SQLConnection
from practiceflow.state.rows import Clock, EventRecord
from practiceflow.state.sealing import Sealer


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Atomic:
    """An open :meth:`StoreBase.atomic` block of one thread."""

    connection: SQLConnection
    durable: bool


class StoreBase(ABC):
    """Connections, transactions and times of a store (see the module docstring)."""

    dialect: ClassVar[Dialect]
    #: Every commit is durable (the database cannot relax one): ``durable`` needs nothing.
    always_durable: ClassVar[bool] = False

    def __init__(self, *, clock: Clock | None = None, key_file: Path | None = None) -> None:
        self._clock: Clock = clock or _utc_now
        self._local = threading.local()
        #: Seals every JSON value written and opens it when read (``sealing.py``).
        self.sealer = Sealer(key_file)
        self.sealer.check()  # a key given but unusable is said at open, not at a first write
        #: The dialect as the row decoders use it: JSON columns opened as they are read.
        self._load = replace(
            self.dialect, load_json=lambda value: self.sealer.open(self.dialect.load_json(value))
        )

    @classmethod
    @abstractmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> Self:
        """Open the store a URL names (already known to use this store's scheme).

        Raises:
            ConfigError: the URL is unusable, or the store was written by a newer
                practiceflow.
        """

    @abstractmethod
    def close(self) -> None:
        """Release connections; the store cannot be used afterwards."""

    def now(self) -> datetime:
        """The store's current time (UTC), from the injected clock when there is one."""
        return self._clock().astimezone(UTC)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- what a subclass gives ------------------------------------------------------------

    @abstractmethod
    def _transaction(
        self, *, durable: bool = False, snapshot: bool = False
    ) -> AbstractContextManager[Connection]:
        """One transaction on a connection of this thread, committed on exit (rolled back
        on an exception).

        ``snapshot``: it only reads, and every read sees the same committed state. Else
        it writes, serialized with other writers (see the module), and its commit
        survives an OS crash when ``durable``.
        """

    @abstractmethod
    def _statement(self) -> AbstractContextManager[Connection]:
        """A connection for one statement that is its own transaction."""

    def _lock(self, db: SQLConnection, key: str) -> None:  # noqa: B027 (a default, not abstract)
        """Hold a lock named ``key`` until ``db``'s write transaction ends (this default:
        the database serializes every write transaction already)."""

    @abstractmethod
    def _clash(self, exc: Exception) -> str | None:
        """What names the unique key an exception says was violated (never the values,
        a secret may be one), or ``None`` when it is something else."""

    # --- transactions ---------------------------------------------------------------------

    def _stamp(self, value: datetime | None, what: str) -> Any:
        return self.dialect.dump_time(self.now() if value is None else value, what)

    @contextmanager
    def _join(
        self, begin: Callable[[], AbstractContextManager[Connection]]
    ) -> Iterator[SQLConnection]:
        """The connection of this thread's atomic block, else one that ``begin`` opens."""
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if outer is not None:
            yield outer.connection
            return
        with begin() as db:
            yield SQLConnection(db, self.dialect)

    def _snapshot(self) -> AbstractContextManager[SQLConnection]:
        """A read-only transaction whose reads all see one committed state."""
        return self._join(lambda: self._transaction(snapshot=True))

    def _write(self, *, durable: bool = False) -> AbstractContextManager[SQLConnection]:
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if durable and outer is not None and not outer.durable:
            message = "a durable write inside atomic() opened without durable=True"
            raise BugError(message)
        return self._join(lambda: self._transaction(durable=durable))

    @contextmanager
    def atomic(self, *, durable: bool = False) -> Iterator[None]:
        """Make the calls inside one transaction, where the store can: one commit, all or none.

        Only an optimisation: every call keeps its own meaning, so a caller must be
        correct when they commit one by one. Inside, a call that
        raises aborts the whole transaction: let the error out of the block rather than go
        on. The transaction belongs to the thread that opened it; a nested block joins it.

        Args:
            durable: fsync the commit. Say so when a call inside needs it (a write step's
                ``sent``, an event before its delivery is acknowledged): a store that
                fixes durability when the transaction begins, as SQLite does, raises
                :class:`BugError` for a durable call inside a block opened without it.
        """
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if outer is not None:
            if durable and not outer.durable:
                message = "atomic(durable=True) inside atomic() opened without it"
                raise BugError(message)
            yield
            return
        with self._transaction(durable=durable) as db:
            connection = SQLConnection(db, self.dialect)
            self._local.atomic = _Atomic(connection, durable or self.always_durable)
            try:
                yield
            finally:
                self._local.atomic = None

    def _in_atomic(self) -> bool:
        """Whether this thread is inside an :meth:`atomic` block."""
        return getattr(self._local, "atomic", None) is not None

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._join(self._statement) as db:
            return db.execute(sql, params).fetchone()

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._join(self._statement) as db:
            return db.execute(sql, params).fetchall()

    def _event(self, row: Sequence[Any]) -> EventRecord:
        """An events row as a record (columns as in ``SELECT_EVENTS``), its payload opened."""
        load = self._load
        return EventRecord(
            row[0], row[1], row[2], row[3], load.load_json(row[4]), row[5],
            load.load_time(row[6]), load.maybe_time(row[7]),
        )  # fmt: skip
