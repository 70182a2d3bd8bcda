"""The fleet's state store: PostgreSQL through psycopg 3 and a connection pool.

Every commit is durable; a read-then-write locks the run's row (``FOR NO KEY UPDATE``) or
an advisory lock on a key where there may be no row yet. Tables carry a ``pf_`` prefix
(the database is shared). An empty database gets the schema on open; an older one is
refused until ``practiceflow db migrate`` (a rolling deploy's replica must not change the
schema under the others). Errors name host, port and database only, never the password.
"""

from __future__ import annotations

import os
import select
import zlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Final, Self

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from practiceflow.errors import BugError, ConfigError
from practiceflow.state import _schema
from practiceflow.state._dialect import Dialect, SQLConnection, _as_read
from practiceflow.state._schema import Migration
from practiceflow.state._store import StateStore
from practiceflow.state.rows import Clock, to_utc

#: Seconds to wait for the server when connecting.
_CONNECT_TIMEOUT_S: Final = 10
_DEFAULT_POOL_SIZE: Final = 8
#: Advisory lock key serializing migrations (any constant; CRC-32 of a fixed name).
_MIGRATION_LOCK: Final = zlib.crc32(b"practiceflow schema migration")


def _aware(value: datetime, what: str) -> datetime:
    to_utc(value, what)  # refuses a naive datetime with a ConfigError
    return value.astimezone(UTC)


POSTGRES: Final = Dialect(
    prefix="pf_",
    mark="%s",
    types={
        "serial": "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        "time": "timestamptz",
        "json": "json",
    },
    lock_row=" FOR NO KEY UPDATE",
    json_text="{column} ->> '{key}'",
    dump_time=_aware,
    load_time=lambda value: value.astimezone(UTC),  # read in the session's time zone
    load_json=_as_read,  # psycopg decodes a json column itself
)

_VERSION: Final = POSTGRES.sql("SELECT version FROM {p}schema_version")


def default_key_file() -> Path:
    """The key file of a PostgreSQL store when no key is set in the environment:
    ``$XDG_CONFIG_HOME/practiceflow/state.key`` (``~/.config/...`` by default)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "practiceflow" / "state.key"


def describe_url(url: str) -> str:
    """``postgresql://host:port/dbname`` of a URL, without user, password or options."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(unparseable URL)"
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    return f"postgresql://{host}:{port}/{parts.get('dbname') or ''}"


def _connect(url: str) -> psycopg.Connection[Any]:
    """A new connection (not pooled), for migrations; :class:`ConfigError` naming host,
    port and database (never the password) when it cannot be made."""
    try:
        return psycopg.connect(url, connect_timeout=_CONNECT_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        # Only the first line: which host refused, or why; never the conninfo itself.
        lines = str(exc).strip().splitlines()
        reason = lines[0] if lines else type(exc).__name__
        message = f"state store {describe_url(url)}: cannot connect ({reason})"
        raise ConfigError(message) from None
    except psycopg.ProgrammingError:
        message = f"state store URL: got an unusable PostgreSQL URL ({describe_url(url)})"
        raise ConfigError(message) from None


def _read_version(connection: psycopg.Connection[Any]) -> int:
    table = POSTGRES.sql("{p}schema_version")
    row = connection.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
    if row is None or not row[0]:
        return 0
    found = connection.execute(_VERSION).fetchone()
    return 0 if found is None else int(found[0])


def schema_version(url: str) -> int:
    """The schema version of a PostgreSQL state database (0: none yet); ConfigError when
    it cannot be reached."""
    with _connect(url) as connection:
        return _read_version(connection)


def migrate(url: str) -> Migration:
    """Create or upgrade the schema of a PostgreSQL state database to the latest version,
    in one transaction under an advisory lock (replicas starting together apply it once).

    Returns:
        The versions before and after.

    Raises:
        ConfigError: the database cannot be reached, or its schema is newer than this
            practiceflow knows (it is left untouched).
    """
    with _connect(url) as connection:
        return _migrate_on(connection, url)


def _migrate_on(connection: psycopg.Connection[Any], url: str) -> Migration:
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        current = _read_version(connection)
        _schema.refuse_newer(describe_url(url), current)
        if current == _schema.LATEST_VERSION:
            return Migration(current, current)
        return _schema.apply_migrations(SQLConnection(connection, POSTGRES), current)


def _closed_by_server(connection: psycopg.Connection[Any]) -> bool:
    """Whether the server closed an idle connection (a restart): it has input waiting,
    its goodbye or the end of the stream, seen without a round trip."""
    try:
        socket = connection.pgconn.socket
    except psycopg.OperationalError:  # lost already
        return True
    waiting = select.poll()
    waiting.register(socket, select.POLLIN)
    return bool(waiting.poll(0))


class PostgresStore(StateStore):
    """The state store in a PostgreSQL database, shared by every replica of a fleet.

    Args:
        url: a ``postgresql://user:password@host:port/dbname`` URL (libpq form; any
            libpq parameter may follow as a query string).
        clock: the current time, for tests; the system clock when omitted.
        pool_size: at most this many connections (threads beyond it wait for one).

    Raises:
        ConfigError: the database cannot be reached, or its schema is older (run
            ``practiceflow db migrate``) or newer than this practiceflow's.
    """

    scheme: ClassVar[str] = "postgresql"
    dialect: ClassVar[Dialect] = POSTGRES
    always_durable: ClassVar[bool] = True  # synchronous_commit = on

    def __init__(
        self, url: str, *, clock: Clock | None = None, pool_size: int = _DEFAULT_POOL_SIZE
    ) -> None:
        super().__init__(clock=clock, key_file=default_key_file())
        self._where = describe_url(url)
        self._closed = False
        self._open_schema(url)
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            open=True,
            name="practiceflow-state",
            kwargs={"connect_timeout": _CONNECT_TIMEOUT_S},
        )

    @classmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> Self:
        """Open the store at a ``postgresql://`` (or ``postgres://``) URL (see the class)."""
        return cls(url, clock=clock)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where!r})"

    def close(self) -> None:
        """Close the pool; further use raises :class:`BugError`."""
        self._closed = True
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()

    def _open_schema(self, url: str) -> None:
        with _connect(url) as connection:
            current = _read_version(connection)
            connection.commit()
            _schema.refuse_newer(self._where, current)
            if current == 0:
                _migrate_on(connection, url)
            elif current < _schema.LATEST_VERSION:
                message = (
                    f"state database {self._where} has schema version {current}, older than "
                    f"the {_schema.LATEST_VERSION} this practiceflow needs; run 'practiceflow "
                    "db migrate --state URL' once (with the older replicas stopped)"
                )
                raise ConfigError(message)

    # --- connections and transactions -----------------------------------------------------

    @contextmanager
    def _connection(self, *, autocommit: bool) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool, set to ``autocommit`` (each user sets what it needs)."""
        if self._closed:
            message = f"state store {self._where} is closed; open it again to use it"
            raise BugError(message)
        # Not the pool's own ``check`` hook: after a failed check it sleeps (1 s, doubling)
        # before the next connection, and a restart fails every idle one.
        connection = self._pool.getconn()
        for _ in range(self._pool.max_size):
            if not _closed_by_server(connection):
                break
            connection.close()  # a restart closed it while it idled: the pool replaces it
            self._pool.putconn(connection)
            connection = self._pool.getconn()
        try:
            with connection:  # commits when the block ends, rolls back on an error
                if connection.autocommit != autocommit:  # idle here: the pool rolled back
                    connection.autocommit = autocommit
                yield connection
        finally:
            self._pool.putconn(connection)

    @contextmanager
    def _transaction(
        self,
        *,
        durable: bool = False,
        snapshot: bool = False,
    ) -> Iterator[psycopg.Connection[Any]]:
        del durable  # every commit is
        with self._connection(autocommit=False) as connection:
            if snapshot:
                connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield connection

    def _statement(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        # No BEGIN: the statement is its own transaction, one round trip instead of three.
        return self._connection(autocommit=True)

    def _writes_alone(self) -> AbstractContextManager[SQLConnection]:
        return self._join(self._statement)  # each write one round trip, not three

    def _lock(self, db: SQLConnection, key: str) -> None:
        db.execute("SELECT pg_advisory_xact_lock(?)", (zlib.crc32(key.encode()),))

    def _clash(self, exc: Exception) -> str | None:
        # The server's detail quotes the clashing values; only the constraint is named.
        return exc.diag.constraint_name if isinstance(exc, pg_errors.UniqueViolation) else None
