"""A practice's rate budget counted in memory by its owner, the shared table its ledger.

Asking PostgreSQL before each request would cost more than the request's own work, so an
owner seeds its bucket from the table's last day when it gains a practice, decides in
memory, and appends its admissions to the table in batches every second. A replica that
does not own the practice counts through the table (:class:`LeasedBucket` switches). The
cost, accepted: near the limit a minute may pass 60 by a few requests, which the API
answers 429 (the client pauses; nothing is sent twice). docs/deploy.md says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any, Final

from psycopg import sql
from psycopg_pool import ConnectionPool
from pyrate_limiter import AbstractBucket, InMemoryBucket, RateItem

from practiceflow.budget.postgres_bucket import WaitingPostgresBucket
from practiceflow.budget.rate_budget import admitted_in_windows

__all__ = ["BudgetLedger", "LeasedBucket"]

logger = logging.getLogger("practiceflow.fleet")

_DAY_MS: Final = 86_400_000
#: Admissions this recent are seeded by the second; older ones, by the quarter hour, are
#: moved later by at most 15 minutes, which keeps them out of the hour's window.
_BY_SECOND_MS: Final = 75 * 60_000
#: A bucket's admissions of the last day, by the second in the last 75 minutes and by the
#: quarter hour before: (the interval's end in Unix ms, no later than now; how many).
_SEED: Final = sql.SQL(
    "SELECT LEAST(ceil(extract(epoch FROM item_timestamp) * 1000 / step) * step, %s)::bigint"
    " AS at, count(*) FROM (SELECT item_timestamp, CASE WHEN item_timestamp >="
    " TO_TIMESTAMP(%s) THEN 1000 ELSE 900000 END AS step FROM {table}"
    " WHERE item_timestamp >= TO_TIMESTAMP(%s)) AS admitted GROUP BY at ORDER BY at"
)
#: Longest wait for a connection of the pool, seconds (the database away: try later).
_WAIT_S: Final = 5.0
#: Flushes between two deletions of a table's rows older than the day.
_PRUNE_EVERY: Final = 600


class LeasedBucket(AbstractBucket):
    """In memory while this replica owns the practice, else the shared table.

    Args:
        shared: the practice's shared bucket (its table is the ledger).
        rates: the windows.
    """

    is_async = False

    def __init__(self, shared: WaitingPostgresBucket, rates: list[Any]) -> None:
        super().__init__()
        self.rates = rates
        self.shared = shared
        self.memory = InMemoryBucket(rates)
        self.owned = False
        #: Told when the first admission waits to be written (set by the ledger's seed).
        self.ledger: BudgetLedger | None = None
        self._pending: list[int] = []
        self._lock = threading.Lock()

    @property
    def active(self) -> AbstractBucket:
        """The bucket deciding now."""
        return self.memory if self.owned else self.shared

    def own(self, admitted: list[tuple[int, int]]) -> None:
        """Count in memory from now, starting from the ledger's ``admitted``: (Unix ms, how
        many admitted then), sorted."""
        items: list[RateItem] = []
        for stamp, count in admitted:
            items.extend([RateItem("practiceflow", stamp)] * count)  # one item, as weights do
        with self._lock:
            self.memory.flush()
            self.memory.items = items
            self.owned = True

    def disown(self) -> list[int]:
        """Count through the shared table again; returns the admissions not yet written."""
        with self._lock:
            self.owned = False
            pending, self._pending = self._pending, []
        return pending

    def take_pending(self) -> list[int]:
        """The admissions counted in memory and not yet in the ledger (emptied)."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def put(self, item: RateItem) -> bool:
        decision: Any = self.put_decision(item)
        return bool(decision.allowed)

    def put_decision(self, item: RateItem) -> Any:
        with self._lock:
            if not self.owned:
                return self.shared.put_decision(item)
            decision: Any = self.memory.put_decision(item)
            if decision.allowed:
                self._pending.append(item.timestamp)
                if len(self._pending) == 1 and self.ledger is not None:
                    self.ledger.dirty(self)
            return decision

    def window_counts(self, now_ms: int, windows_ms: Sequence[int]) -> list[int] | None:
        """Requests admitted in each of the last ``windows_ms`` (``/metrics``), counted in
        memory; None while another replica owns the practice: its owner reports it (a
        query per practice made one scrape of a 1,000-practice fleet cost 0.7 s of CPU)."""
        if not self.owned:
            return None
        return admitted_in_windows(self.memory.items, now_ms, list(windows_ms))

    def waiting(self, item: RateItem) -> Any:
        return self.active.waiting(item)

    def leak(self, current_timestamp: int | None = None) -> Any:
        return self.active.leak(current_timestamp)

    def flush(self) -> None:
        self.memory.flush()

    def count(self) -> Any:
        return self.active.count()

    def peek(self, index: int) -> Any:
        return self.active.peek(index)

    def close(self) -> None:
        self.shared.close()


class BudgetLedger:
    """Writes the owned buckets' admissions to their tables, and seeds new owners.

    Args:
        pool: the fleet's budget connection pool.
    """

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self.pool = pool
        self._flushes: dict[str, int] = {}
        self._dirty: set[LeasedBucket] = set()
        self._dirty_lock = threading.Lock()
        self._tables: dict[str, str] = {}

    def dirty(self, bucket: LeasedBucket) -> None:
        """``bucket`` has admissions to write (so that a flush visits only those)."""
        with self._dirty_lock:
            self._dirty.add(bucket)

    def take_dirty(self) -> list[LeasedBucket]:
        """The buckets with admissions to write since the last call (emptied)."""
        with self._dirty_lock:
            found, self._dirty = self._dirty, set()
        return list(found)

    def seed(self, bucket: LeasedBucket, now_ms: int) -> None:
        """Make ``bucket`` count in memory from the ledger's last day (one read).

        The last 75 minutes' admissions are read by the second and older ones by the
        quarter hour, each counted at its interval's end (never after ``now_ms``): a seed
        reads at most some 4,600 rows however many the day holds (reading each admission
        cost some 20 ms of CPU at a day of 10,000, paid once per practice a replica
        takes: ``bench/budget_seed.py``). An admission counts at most a second longer in
        the minute's and the hour's windows, and up to 15 minutes longer in the day's,
        which only ever waits more.
        """
        query = _SEED.format(table=sql.Identifier(bucket.shared.full_table))
        fine, day = (now_ms - _BY_SECOND_MS) / 1000, (now_ms - _DAY_MS) / 1000
        with self.pool.connection(timeout=_WAIT_S) as connection:
            rows = connection.execute(query, [now_ms, fine, day]).fetchall()
        bucket.ledger = self
        bucket.own([(int(at), int(count)) for at, count in rows])

    def flush(self, buckets: list[LeasedBucket], now_ms: int) -> int:
        """Write every bucket's pending admissions, in one query (one transaction).

        Returns:
            How many admissions were written. On an error they are put back, to be
            written at the next flush.
        """
        batch = [(bucket, bucket.take_pending()) for bucket in buckets]
        batch = [(bucket, stamps) for bucket, stamps in batch if stamps]
        if not batch:
            return 0
        try:
            with self.pool.connection(timeout=_WAIT_S) as connection:
                statements = []
                for bucket, stamps in batch:
                    name = bucket.shared.full_table
                    table = self._tables.get(name)
                    if table is None:
                        table = self._tables[name] = sql.Identifier(name).as_string(connection)
                    # One query for every table (psycopg's work per statement cost more
                    # than the writes): the table quoted by psycopg, the stamps integers.
                    stamps_text = ",".join(str(int(stamp)) for stamp in stamps)
                    statements.append(
                        f"INSERT INTO {table} (name, weight, item_timestamp)"  # noqa: S608
                        " SELECT 'practiceflow', 1, TO_TIMESTAMP(s / 1000.0)"
                        f" FROM unnest('{{{stamps_text}}}'::bigint[]) AS s"
                    )
                    self._flushes[name] = self._flushes.get(name, 0) + 1
                    if self._flushes[name] % _PRUNE_EVERY == 1:
                        day_ago = float((now_ms - _DAY_MS) / 1000)
                        statements.append(
                            f"DELETE FROM {table} WHERE item_timestamp < TO_TIMESTAMP({day_ago})"  # noqa: S608
                        )
                connection.execute(";".join(statements).encode())
        except Exception:
            for bucket, stamps in batch:
                with bucket._lock:
                    bucket._pending[:0] = stamps
                self.dirty(bucket)
            logger.warning("budget ledger: could not write; kept for the next flush", exc_info=True)
            return 0
        return sum(len(stamps) for _, stamps in batch)
