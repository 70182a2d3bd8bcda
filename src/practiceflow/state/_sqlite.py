"""The embedded state store: one SQLite file (readable by its owner only: it holds secrets).

WAL with ``synchronous=NORMAL``: a killed process loses nothing committed, an OS crash only
the latest commits; those whose loss would repeat or lose something (an event before its
acknowledgement, a subscription, a write step's ``sent``, a resolution) run with
``synchronous=FULL``, which flushes every commit before them too. One connection per
thread; every write in ``BEGIN IMMEDIATE`` (the file's write lock), so a read-then-write
is never interleaved. Migrations run on open; a current schema is opened without the lock.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar, Final, Self

from practiceflow.errors import BugError, ConfigError, ErrorKind, StoreError
from practiceflow.state import _schema
from practiceflow.state._dialect import Dialect
from practiceflow.state._store import StateStore
from practiceflow.state.rows import Clock, from_utc, to_utc
from practiceflow.state.sealing import from_json

_SCHEME: Final = "sqlite"
_DEFAULT_BUSY_TIMEOUT_MS: Final = 10_000
_VERSION: Final = "SELECT version FROM {p}schema_version"

#: Times are ISO 8601 text in UTC, all of one shape, so that text order is time order.
SQLITE: Final = Dialect(
    prefix="",
    mark="?",
    types={"serial": "INTEGER PRIMARY KEY AUTOINCREMENT", "time": "TEXT", "json": "TEXT"},
    lock_row="",  # BEGIN IMMEDIATE holds the whole file's write lock already
    json_text="json_extract({column}, '$.{key}')",
    dump_time=to_utc,
    load_time=from_utc,
    load_json=from_json,
)


class StoreUnusable(StoreError):
    """The state file cannot be used where it is (read-only, or no folder for it): a
    configuration fault (exit 2) that waiting does not cure; a delivery gets 503."""

    kind: ClassVar[ErrorKind] = "config"


class StateFileGone(StoreUnusable):
    """The state file was deleted or replaced while this process had it open (SQLite would
    go on committing into the unlinked file): nothing more is recorded (deliveries get 503)
    and the process stops (exit 2)."""


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:///path`` URL or a plain path names, resolved (symlinks
    followed: the lease, key and budget files beside it are found by any of its names).

    Raises:
        ConfigError: the URL names no file, or an in-memory database (which each
            thread's connection would see as a different, empty database).
    """
    prefix = f"{_SCHEME}://"
    text = url[len(prefix) :] if url.lower().startswith(prefix) else url
    if "://" in text:
        message = f"state store URL: got scheme {url.partition('://')[0]!r}; expected 'sqlite'"
        raise ConfigError(message)
    if text in ("", "/", ":memory:", "/:memory:") or text.startswith(("file:", "/file:")):
        message = (
            f"state store URL {url!r}: expected a file, as 'sqlite:///absolute/path.db' "
            "or a plain path; in-memory and URI forms are not supported (use a temporary "
            "file in tests)"
        )
        raise ConfigError(message)
    return Path(text).resolve()


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds a lock (nothing was done)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(exc)


def _file_identity(path: Path) -> tuple[int, int] | None:
    """The device and inode ``path`` names now, or None when it names nothing."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def _check_identity(path: Path, opened: tuple[int, int] | None) -> None:
    """Raise :class:`StateFileGone` when ``path`` no longer names the file opened as
    ``opened`` (its device and inode; None: not known)."""
    now = None if opened is None else _file_identity(path)
    if now == opened:
        return
    what = "was deleted" if now is None else "was replaced by another file"
    message = (
        f"state database {path} {what} while this process had it open; nothing more is "
        "recorded or acknowledged (deliveries get 503 and are retried by the sender). "
        "Restore the file, or start again to use the new one"
    )
    raise StateFileGone(message)


class SQLiteStore(StateStore):
    """The state store in one SQLite file (WAL; durable commits fsynced, see the module).

    Args:
        path: the database file; created (with its folder, readable by its owner only)
            when missing, and migrated to the latest schema.
        clock: the current time, for tests; the system clock when omitted.
        busy_timeout_ms: how long a write waits for another writer before failing.
    """

    scheme: ClassVar[str] = _SCHEME
    local_reads: ClassVar[bool] = True  # a file; WAL readers never wait for writers
    dialect: ClassVar[Dialect] = SQLITE

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        busy_timeout_ms: int = _DEFAULT_BUSY_TIMEOUT_MS,
    ) -> None:
        # Resolved (symlinks, relative parts): every name of one file finds one key file.
        resolved = Path(path).resolve()
        super().__init__(clock=clock, key_file=resolved.with_name(resolved.name + ".key"))
        self.path = resolved
        self._busy_timeout_ms = busy_timeout_ms
        self._connections: list[sqlite3.Connection] = []
        self._lock_connections = threading.Lock()
        self._closed = False
        self._create_private_file()
        self._opened = _file_identity(self.path)  # checked before every use
        try:
            self._migrate()
        except BaseException as exc:
            self.close()
            if isinstance(exc, sqlite3.DatabaseError):  # not a database, or a damaged one
                message = (
                    f"state database {self.path} cannot be read as a SQLite database ({exc}); "
                    "check that --state (PRACTICEFLOW_STATE) names the right file, or restore "
                    "it from a backup"
                )
                raise ConfigError(message) from None
            cause = exc.__cause__
            busy = isinstance(cause, sqlite3.OperationalError) and is_busy(cause)
            if isinstance(exc, StoreError) and not (busy or isinstance(exc, StoreUnusable)):
                # At start, a full disk (or an I/O error) is the machine's to fix: exit 2.
                raise StoreUnusable(str(exc)) from None
            raise

    @classmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> Self:
        """Open the store at ``sqlite:///path`` or a plain path (see :func:`sqlite_path`)."""
        return cls(sqlite_path(url), clock=clock)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def close(self) -> None:
        """Close every thread's connection; further use raises :class:`BugError`."""
        with self._lock_connections:
            self._closed = True
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()

    def _create_private_file(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # An empty file is a valid empty database; SQLite gives -wal and -shm the
            # same permissions, so the secrets it will hold stay private to the owner.
            descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return
        except OSError as exc:  # a read-only folder, no permission, a full disk
            message = (
                f"state database {self.path} cannot be created: {exc.strerror}; give "
                "--state (PRACTICEFLOW_STATE) a file in a folder this process can write"
            )
            raise StoreUnusable(message) from None
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
        elif code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN):
            message = (
                f"state database {self.path} cannot be written here ({reason}): the file or "
                "its folder is read-only for this process; give --state (PRACTICEFLOW_STATE) "
                "a writable place, or make it writable"
            )
            return StoreUnusable(message)
        else:
            message = f"state database {self.path} cannot be used: {reason}"
        return StoreError(message)

    def _conn(self) -> sqlite3.Connection:
        _check_identity(self.path, self._opened)
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if self._closed:
            message = f"state store {self.path} is closed; open it again to use it"
            raise BugError(message)
        if connection is not None:
            return connection
        try:
            # isolation_level=None: no implicit transactions; we BEGIN and COMMIT ourselves.
            # check_same_thread=False only so close() may close other threads' connections.
            connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            connection.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc
        with self._lock_connections:
            self._connections.append(connection)
        self._local.connection = connection
        return connection

    def _synchronous(self, connection: sqlite3.Connection, level: str) -> None:
        """Set ``PRAGMA synchronous`` for the next commit when it changes (not possible
        inside a transaction: durability is fixed at BEGIN)."""
        if getattr(self._local, "synchronous", "NORMAL") != level:
            self._local.synchronous = None  # unknown until the PRAGMA has run
            connection.execute(f"PRAGMA synchronous = {level}")
            self._local.synchronous = level

    @contextmanager
    def _transaction(
        self,
        *,
        durable: bool = False,
        snapshot: bool = False,
    ) -> Iterator[sqlite3.Connection]:
        connection = self._conn()
        try:
            if not snapshot:
                self._synchronous(connection, "FULL" if durable else "NORMAL")
            connection.execute("BEGIN" if snapshot else "BEGIN IMMEDIATE")
            try:
                yield connection
                if not snapshot:
                    _check_identity(self.path, self._opened)  # never commit into a lost file
                connection.execute("COMMIT")
            except BaseException:
                # Also when COMMIT itself fails: never leave the connection mid-transaction.
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc

    @contextmanager
    def _statement(self) -> Iterator[sqlite3.Connection]:
        try:
            yield self._conn()  # no BEGIN: the statement is its own transaction
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc

    def _clash(self, exc: Exception) -> str | None:
        # sqlite3 names the table and columns of the key, never the values.
        return str(exc) if isinstance(exc, sqlite3.IntegrityError) else None

    def _migrate(self) -> None:
        # Read first without the write lock (opening a store to read it never waits behind a
        # write); a new file (no table yet), or one unreadable now, is left to the write.
        connection = self._conn()
        try:
            row = connection.execute(self.dialect.sql(_VERSION)).fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is not None:
            _schema.refuse_newer(str(self.path), int(row[0]))
            if int(row[0]) == _schema.LATEST_VERSION:
                return
        with self._write() as db:
            db.execute("CREATE TABLE IF NOT EXISTS {p}schema_version (version integer)")
            row = db.execute(_VERSION).fetchone()
            current = 0 if row is None else int(row[0])
            _schema.refuse_newer(str(self.path), current)
            if current < _schema.LATEST_VERSION:
                _schema.apply_migrations(db, current)
