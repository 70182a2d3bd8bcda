"""One rate budget per Client ID, shared in PostgreSQL by every replica of a fleet: all
count into one pyrate-limiter ``PostgresBucket`` table. Timestamps are wall-clock
milliseconds: replicas' clocks must agree (NTP).
"""

from __future__ import annotations

import time
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool
from pyrate_limiter import PostgresBucket
from pyrate_limiter.buckets.postgres import advisory_lock_id

from practiceflow.budget.rate_budget import RateBudget, RateLimits, budget_table

#: Most rows older than the day deleted by one admission.
_PRUNE_BATCH: Final = 100


class WaitingPostgresBucket(PostgresBucket):
    """pyrate-limiter's ``PostgresBucket``, changed twice: it waits for the table lock
    instead of ``NOWAIT`` (a refusal always means a full window, never a busy loop), and its
    check reads only the longest window's rows and deletes older ones under the same lock (an
    admission's cost stays bounded). ``owns_pool``: close the pool with the bucket;
    ``exists``: create no table now (it exists, or :meth:`create_table` will)."""

    def __init__(
        self,
        pool: ConnectionPool[Any],
        table: str,
        rates: list[Any],
        *,
        owns_pool: bool = True,
        exists: bool = False,
    ) -> None:
        self._exists = exists
        super().__init__(pool, table, rates)
        self.owns_pool = owns_pool
        self._q_lock = sql.SQL("LOCK TABLE {table} IN EXCLUSIVE MODE").format(
            table=sql.Identifier(self._full_tbl)
        )
        self._q_count_windows = _bounded_count(self._full_tbl, len(rates))

    def _create_table(self) -> None:
        if not self._exists:
            with self.pool.connection() as connection, connection.transaction():
                self.create_table(connection)

    def create_table(self, connection: psycopg.Connection[Any]) -> None:
        """Create the table and its index in ``connection``'s transaction (many at once)."""
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_lock_id(self._full_tbl),))
        connection.execute(self._q_create_table)
        connection.execute(self._q_create_index)

    @property
    def full_table(self) -> str:
        """The table's name in the database (``ratelimit___<table>``)."""
        return str(self._full_tbl)

    def window_counts(self, now_ms: int, windows_ms: list[int]) -> list[int]:
        """Requests admitted in each of the last ``windows_ms`` milliseconds before ``now_ms``
        (wall clock), in one query."""
        column = sql.SQL("count(*) FILTER (WHERE item_timestamp >= TO_TIMESTAMP(%s))")
        query = sql.SQL(
            "SELECT {columns} FROM {table} WHERE item_timestamp >= TO_TIMESTAMP(%s)"
        ).format(
            columns=sql.SQL(", ").join([column] * len(windows_ms)),
            table=sql.Identifier(self._full_tbl),
        )
        starts = [(now_ms - w) / 1000 for w in windows_ms]
        with self.pool.connection() as connection:
            row = connection.execute(query, [*starts, min(starts, default=0)]).fetchone()
        return [int(value) for value in row] if row is not None else [0] * len(windows_ms)

    def close(self) -> None:
        """Close the connection pool, unless other budgets share it."""
        if self.owns_pool:
            super().close()  # type: ignore[no-untyped-call]  # pyrate-limiter leaves it untyped


def _bounded_count(table: str, windows: int) -> sql.Composed:
    """The admission's check: a count per window over the longest window's rows, and the
    deletion of at most :data:`_PRUNE_BATCH` older rows, oldest first (``w`` is ``NOT
    MATERIALIZED``: the planner sees the starts as values)."""
    names = [sql.Identifier(f"s{n}") for n in range(windows)]
    starts = sql.SQL(", ").join(sql.SQL("TO_TIMESTAMP(%s) AS {}").format(name) for name in names)
    oldest = sql.SQL("LEAST({})").format(sql.SQL(", ").join(names))
    counts = sql.SQL(", ").join(
        sql.SQL("count(*) FILTER (WHERE item_timestamp >= {})").format(name) for name in names
    )
    return sql.SQL(
        "WITH w AS NOT MATERIALIZED (SELECT {starts}),"
        " gone AS (DELETE FROM {table} WHERE ctid = ANY(ARRAY("
        "SELECT ctid FROM {table}, w WHERE item_timestamp < {oldest}"
        " ORDER BY item_timestamp LIMIT {batch})))"
        " SELECT {counts} FROM {table}, w WHERE item_timestamp >= {oldest}"
    ).format(
        starts=starts,
        table=sql.Identifier(table),
        oldest=oldest,
        counts=counts,
        batch=sql.Literal(_PRUNE_BATCH),
    )


def shared_budget(
    url: str,
    client_id: str,
    limits: RateLimits | None = None,
    *,
    pool_size: int = 4,
    pool: ConnectionPool[Any] | None = None,
) -> RateBudget:
    """The rate budget of a Client ID, shared through the PostgreSQL database at ``url``
    (close it to release its connections). ``pool``: one shared by many budgets, which its
    owner closes; else one of ``pool_size`` connections is opened."""
    limits = limits or RateLimits()
    owns_pool = pool is None
    if pool is None:
        pool = ConnectionPool(
            url, min_size=1, max_size=max(1, pool_size), open=True, name="practiceflow-budget"
        )
    table = budget_table(client_id)
    bucket = WaitingPostgresBucket(pool, table, limits.rates(), owns_pool=owns_pool)
    return RateBudget(limits, bucket=bucket, clock=time.time)
