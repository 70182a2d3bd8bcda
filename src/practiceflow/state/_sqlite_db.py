"""The SQLite file behind :class:`~practiceflow.state.sqlite.SQLiteStore`: one connection
per thread, transactions (plain, durable, :meth:`SQLiteDatabase.atomic` blocks), the
schema's migrations on open, what an operational failure means to the user, and the writing
of a step's moves. See :mod:`practiceflow.state.sqlite` for the durability choices.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from practiceflow.errors import BugError, ConfigError, StoreError
from practiceflow.state._sqlite_schema import LATEST_VERSION, MIGRATIONS
from practiceflow.state.rows import StepStatus
from practiceflow.state.steps import StepChange, fold_step_changes, journal_sql, step_row_sql

__all__ = ["SQLiteDatabase", "apply_step_changes", "is_busy", "no_run"]


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds a lock (nothing was done)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(exc)


class SQLiteDatabase:
    """Connections and transactions of one SQLite file (the store's half that is not SQL).

    Args:
        path: the database file; created (with its folder, readable by its owner only)
            when missing, and migrated to the latest schema.
        busy_timeout_ms: how long a write waits for another writer before failing.
    """

    def __init__(self, path: str | os.PathLike[str], busy_timeout_ms: int) -> None:
        self.path = Path(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._create_private_file()
        try:
            self._migrate(self._conn())
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close every thread's connection; further use raises :class:`BugError`."""
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()

    def _create_private_file(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # An empty file is a valid empty database; SQLite gives -wal and -shm the
            # same permissions, so the secrets it will hold stay private to the owner.
            descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return
        os.close(descriptor)

    def _store_error(self, exc: sqlite3.OperationalError) -> StoreError:
        """What an operational failure of SQLite means to the user (no raw traceback)."""
        reason = str(exc)
        code = getattr(exc, "sqlite_errorcode", None)
        if is_busy(exc):
            message = (
                f"state database {self.path} is locked by another process (waited "
                f"{self._busy_timeout_ms / 1000:g} s); stop the other practiceflow process "
                "using it, or give this one its own --state file, then run again"
            )
        elif code == sqlite3.SQLITE_FULL or "full" in reason:
            message = (
                f"state database {self.path}: the disk is full, nothing was recorded (the "
                "transaction was rolled back); free space, then run again"
            )
        else:
            message = f"state database {self.path} cannot be used: {reason}"
        return StoreError(message)

    def _conn(self) -> sqlite3.Connection:
        try:
            return self._open_conn()
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc

    def _open_conn(self, *, wait: bool = True) -> sqlite3.Connection:
        """This thread's connection; with ``wait=False`` its second one, which never waits.

        The second connection fails at once with ``SQLITE_BUSY`` where the first would wait
        for another writer, and commits with ``synchronous = FULL``: it is for durable
        writes made where waiting would stall others (the receiver's event loop).
        """
        attribute = "connection" if wait else "nowait_connection"
        connection: sqlite3.Connection | None = getattr(self._local, attribute, None)
        if self._closed:
            message = f"state store {self.path} is closed; open it again to use it"
            raise BugError(message)
        if connection is None:
            # isolation_level=None: no implicit transactions; we BEGIN and COMMIT ourselves.
            # check_same_thread=False only so close() may close other threads' connections.
            connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            connection.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute(f"PRAGMA synchronous = {'NORMAL' if wait else 'FULL'}")
            connection.execute("PRAGMA foreign_keys = ON")
            if not wait:
                connection.execute("PRAGMA busy_timeout = 0")
            with self._lock:
                self._connections.append(connection)
            setattr(self._local, attribute, connection)
        return connection

    def _synchronous(self, connection: sqlite3.Connection, level: str) -> None:
        """Set ``PRAGMA synchronous`` for the next commit, only when it changes."""
        if getattr(self._local, "synchronous", "NORMAL") != level:
            self._local.synchronous = None  # unknown until the PRAGMA has run
            connection.execute(f"PRAGMA synchronous = {level}")
            self._local.synchronous = level

    @contextmanager
    def _write(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if outer is not None:
            # Inside atomic(): the block began the transaction and commits it.
            if durable and not outer.durable:
                message = "a durable write inside atomic() opened without durable=True"
                raise BugError(message)
            yield outer.connection
            return
        connection = self._conn()
        try:
            self._synchronous(connection, "FULL" if durable else "NORMAL")
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException:
                # Also when COMMIT itself fails: never leave the connection mid-transaction.
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc

    @contextmanager
    def atomic(
        self, *, durable: bool = False, before_commit: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """See :meth:`StateStore.atomic`: one ``BEGIN IMMEDIATE`` ... ``COMMIT``.

        SQLite cannot change ``synchronous`` inside a transaction, so ``durable`` is fixed
        when the block opens. ``before_commit`` runs just before ``COMMIT``, during whose
        fsync other threads run.
        """
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if outer is not None:
            if durable and not outer.durable:
                message = "atomic(durable=True) inside atomic() opened without it"
                raise BugError(message)
            yield
            return
        connection = self._conn()
        try:
            self._synchronous(connection, "FULL" if durable else "NORMAL")
            connection.execute("BEGIN IMMEDIATE")
            self._local.atomic = _Atomic(connection, durable)
            try:
                yield
                if before_commit is not None:
                    before_commit()
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            finally:
                self._local.atomic = None
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        outer: _Atomic | None = getattr(self._local, "atomic", None)
        if outer is not None:
            yield outer.connection
            return
        connection = self._conn()
        try:
            connection.execute("BEGIN")
            try:
                yield connection
            finally:
                if connection.in_transaction:
                    connection.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc

    def _one(self, sql: str, params: Iterable[Any] = ()) -> Any:
        try:
            return self._conn().execute(sql, tuple(params)).fetchone()
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc

    def _all(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        try:
            return self._conn().execute(sql, tuple(params)).fetchall()
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc

    def _migrate(self, connection: sqlite3.Connection) -> None:
        if self._schema_is_current(connection):
            return
        with self._write():
            connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER)")
            row = connection.execute("SELECT version FROM schema_version").fetchone()
            current = 0 if row is None else int(row[0])
            self._refuse_newer(current)
            for version in range(current + 1, LATEST_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    connection.execute(statement)
            if row is None:
                connection.execute("INSERT INTO schema_version VALUES (?)", (LATEST_VERSION,))
            elif current != LATEST_VERSION:
                connection.execute("UPDATE schema_version SET version = ?", (LATEST_VERSION,))

    def _schema_is_current(self, connection: sqlite3.Connection) -> bool:
        """Whether the file already has this practiceflow's schema, read without the write
        lock (in WAL a reader never waits for a writer), so that opening a store to read
        it does not wait behind another process's write; a newer schema is refused."""
        try:
            row = connection.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.OperationalError:
            return False  # a new file (no table yet), or unreadable now: the write decides
        if row is None:
            return False
        current = int(row[0])
        self._refuse_newer(current)
        return current == LATEST_VERSION

    def _refuse_newer(self, current: int) -> None:
        if current > LATEST_VERSION:
            message = (
                f"state database {self.path} has schema version {current}, newer than "
                f"the {LATEST_VERSION} this practiceflow knows; upgrade practiceflow, "
                "or use another state database"
            )
            raise ConfigError(message)


@dataclass
class _Atomic:
    """An open :meth:`SQLiteDatabase.atomic` block of one thread."""

    connection: sqlite3.Connection
    durable: bool


_JOURNAL_INSERT: Final = journal_sql("step_journal", "?", "?")


def no_run(run_id: str) -> BugError:
    return BugError(f"run {run_id} does not exist; start_run first")


def apply_step_changes(
    db: sqlite3.Connection,
    run_id: str,
    step_id: str,
    current: StepStatus | None,
    changes: Sequence[StepChange],
    encoded: Sequence[Mapping[str, str | None]],
    stamps: Sequence[str],
) -> None:
    """Check and write moves of a step from ``current``, inside the caller's transaction.

    Args:
        db: the connection, in a write transaction.
        run_id: the run.
        step_id: the step.
        current: the step's status before the first move (``None``: no row yet).
        changes: the moves, in order.
        encoded: each move's fields, as JSON text.
        stamps: when each move happened.

    Raises:
        BugError: a move is illegal, or the run does not exist.
    """
    write = fold_step_changes(run_id, step_id, current, changes, encoded, stamps)
    sql, params = step_row_sql(
        write, run_id, step_id, current, stamps[0], table="steps", mark=lambda _: "?"
    )
    try:
        db.execute(sql, params)
    except sqlite3.IntegrityError as exc:
        # The run's foreign key: the only constraint an INSERT's values could break here.
        if current is not None or "FOREIGN KEY" not in str(exc):  # pragma: no cover
            raise
        raise no_run(run_id) from None
    db.executemany(_JOURNAL_INSERT, write.journal)
