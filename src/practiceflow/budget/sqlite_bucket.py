"""One rate budget per Client ID, shared by a host's processes: pyrate-limiter's
``SQLiteBucket`` on ``budget.db`` beside the state file, its ``lock`` a
:class:`BudgetFileLock`, so that count-then-insert is one step across processes.
Timestamps are wall-clock milliseconds: monotonic clocks of processes need not agree.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from pathlib import Path
from typing import Final

from pyrate_limiter import SQLiteBucket
from pyrate_limiter.buckets.sqlite_bucket import Queries

from practiceflow.budget.rate_budget import RateLimits, budget_table
from practiceflow.errors import ConfigError

#: The budget file's name, in the folder of the SQLite state file.
BUDGET_FILE: Final = "budget.db"
_LOCK_SUFFIX: Final = ".lock"


def budget_file(state_file: Path) -> Path:
    """The budget file of a SQLite state file: ``budget.db`` in the same folder."""
    return state_file.with_name(BUDGET_FILE)


class BudgetFileLock:
    """A lock exclusive across processes and threads, reentrant per thread: an ``RLock``,
    then an ``flock`` on ``path`` for each outermost hold (opened for it, so that no
    descriptor outlives a hold nor is shared with a forked child)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread_lock = threading.RLock()
        self._depth = 0  # changed only by the thread holding _thread_lock
        self._fd: int | None = None

    def __enter__(self) -> None:
        self._thread_lock.acquire()
        if self._depth == 0:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
            except BaseException:
                self._thread_lock.release()
                raise
            self._fd = fd
        self._depth += 1

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1  # the last release unlocks the file for other processes
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._thread_lock.release()


class SQLiteBudgetBucket(SQLiteBucket):
    """pyrate-limiter's ``SQLiteBucket`` that can also say how full each window is."""

    def window_counts(self, now_ms: int, windows_ms: list[int]) -> list[int]:
        """Requests admitted (by every process) in each of the last ``windows_ms``
        milliseconds before ``now_ms`` (wall clock), for the ``/metrics`` gauges."""
        columns = ", ".join(["COUNT(CASE WHEN item_timestamp >= ? THEN 1 END)"] * len(windows_ms))
        # The table's name is a digest (budget_table); the bounds are parameters.
        query = f"SELECT {columns} FROM '{self.table}'"  # noqa: S608 - see the comment
        with self.lock:
            row = self.conn.execute(query, [now_ms - w for w in windows_ms]).fetchone()
        return [int(value) for value in row]


def open_bucket(file: Path, client_id: str, limits: RateLimits) -> SQLiteBudgetBucket:
    """A Client ID's shared bucket (its own table) in the budget file ``file``, for
    ``RateBudget(limits, bucket=..., clock=time.time)``; ConfigError (exit 2) when the file
    cannot be written. Processes may use different ``limits`` on one table."""
    file.parent.mkdir(parents=True, exist_ok=True)
    lock = BudgetFileLock(file.with_name(file.name + _LOCK_SUFFIX))
    table = budget_table(client_id)
    # Used from the threads of one process, one at a time under the lock.
    connection = sqlite3.connect(file, timeout=30.0, check_same_thread=False)
    try:
        with lock:
            connection.execute("PRAGMA journal_mode=WAL")
            # No fsync per admitted request: an OS crash may lose the last rows, which
            # only lets a few more requests through once; the API's own 429 and the
            # Retry-After pause still hold.
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(Queries.CREATE_BUCKET_TABLE.format(table=table))
            connection.execute(
                Queries.CREATE_INDEX_ON_TIMESTAMP.format(index_name=f"{table}_at", table_name=table)
            )
            connection.commit()
    except (sqlite3.OperationalError, OSError) as exc:  # a full disk, a read-only folder
        connection.close()
        message = (
            f"rate budget file {file} cannot be written ({exc}): free space on its disk, or "
            "give --state (PRACTICEFLOW_STATE) a writable place with room; nothing was sent"
        )
        raise ConfigError(message) from None
    except BaseException:
        connection.close()
        raise
    return SQLiteBudgetBucket(limits.rates(), connection, table, lock=lock)
