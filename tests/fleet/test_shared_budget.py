"""The rate budget of one Client ID is shared by every replica: processes racing for it
together never exceed any of its three windows, and a practice's new owner counts what
the old owner admitted (the ledger)."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool
from pyrate_limiter import RateItem

from practiceflow.budget.postgres_bucket import budget_table, shared_budget
from practiceflow.budget.rate_budget import RateBudget, RateLimits
from practiceflow.errors import RateLimitError
from practiceflow.fleet.owned_budget import BudgetLedger, LeasedBucket
from practiceflow.fleet.owned_runtime import create_budget_tables, leased_budget
from practiceflow.ops import window_use

# Small windows of the same shape as the spec's, so a test fills them in a second.
LIMITS = RateLimits(per_minute=10, per_hour=20, per_day=30, max_wait=0)

_FORK = multiprocessing.get_context("fork")  # children inherit the imports: fast to start


def _replica(url: str, client_id: str, barrier: Any, results: Any) -> None:
    budget = shared_budget(url, client_id, LIMITS)
    barrier.wait()
    admitted = 0
    for _ in range(12):
        try:
            budget.acquire("GET", "/api/v1/entities", deadline=time.time())
            admitted += 1
        except RateLimitError:
            pass
    budget.close()
    results.put(admitted)


def _race(url: str, client_id: str, replicas: int = 4) -> list[int]:
    """Several processes, each with its own budget and connections, racing for slots."""
    barrier = _FORK.Barrier(replicas)
    results = _FORK.Queue()
    processes = [
        _FORK.Process(target=_replica, args=(url, client_id, barrier, results))
        for _ in range(replicas)
    ]
    for process in processes:
        process.start()
    admitted = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=10)
    assert [process.exitcode for process in processes] == [0] * replicas
    return admitted


def _prefill(url: str, client_id: str, ages_s: list[tuple[int, int]]) -> None:
    """Count ``n`` requests ``age`` seconds ago, for each ``(n, age)``."""
    budget = shared_budget(url, client_id, LIMITS)
    bucket = budget.bucket
    now_ms = int(time.time() * 1000)
    for count, age in ages_s:
        for _ in range(count):
            assert bucket.put(RateItem("practiceflow", now_ms - age * 1000))
    budget.close()


@pytest.mark.parametrize(
    ("prefill", "expected", "window"),
    [
        pytest.param([], 10, "minute", id="minute-binds"),
        pytest.param([(10, 50 * 60), (5, 40 * 60)], 5, "hour", id="hour-binds"),
        pytest.param([(10, 5 * 3600), (10, 4 * 3600), (5, 3 * 3600)], 5, "day", id="day-binds"),
    ],
)
def test_four_replicas_together_never_exceed_any_window(
    pg_url: str, prefill: list[tuple[int, int]], expected: int, window: str
) -> None:
    _prefill(pg_url, "client-a", prefill)

    admitted = _race(pg_url, "client-a")

    assert sum(admitted) == expected, f"the {window} window was exceeded: {admitted}"
    table = f"ratelimit___{budget_table('client-a')}"
    with psycopg.connect(pg_url) as raw:
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
        row = raw.execute(query).fetchone()
    assert row == (sum(count for count, _ in prefill) + expected,)


def test_each_client_id_has_its_own_budget(pg_url: str) -> None:
    _prefill(pg_url, "client-a", [(10, 50 * 60), (10, 40 * 60)])  # client-a's hour is spent

    assert sum(_race(pg_url, "client-a", replicas=2)) == 0
    assert sum(_race(pg_url, "client-b", replicas=2)) == 10


def test_a_refusal_says_how_long_until_the_window_frees(pg_url: str) -> None:
    budget = shared_budget(pg_url, "client-a", LIMITS)
    try:
        for _ in range(10):
            budget.acquire("GET", "/api/v1/entities", deadline=time.time())
        with pytest.raises(RateLimitError, match="next slot is") as caught:
            budget.acquire("GET", "/api/v1/entities", deadline=time.time())
        assert 50 < caught.value.retry_after <= 60
    finally:
        budget.close()


def _insert(url: str, client_id: str, ages_s: list[tuple[int, int]]) -> None:
    """Rows of ``n`` requests ``age`` seconds old, written behind the budget's back."""
    table = sql.Identifier(f"ratelimit___{budget_table(client_id)}")
    now = time.time()
    with psycopg.connect(url) as raw:
        for count, age in ages_s:
            raw.execute(
                sql.SQL(
                    "INSERT INTO {} (name, weight, item_timestamp)"
                    " SELECT 'practiceflow', 1, TO_TIMESTAMP(%s) FROM generate_series(1, %s)"
                ).format(table),
                (now - age, count),
            )


def _admitted(budget: RateBudget, tries: int) -> int:
    """How many of ``tries`` requests in a row the budget admits before its first refusal."""
    for sent in range(tries):
        try:
            budget.acquire("GET", "/api/v1/entities", deadline=time.time())
        except RateLimitError:
            return sent
    return tries


def _ages(url: str, client_id: str) -> list[float]:
    """The age in hours of every row in the budget's table, oldest first."""
    table = sql.Identifier(f"ratelimit___{budget_table(client_id)}")
    with psycopg.connect(url) as raw:
        rows = raw.execute(
            sql.SQL(
                "SELECT extract(epoch FROM now() - item_timestamp::timestamptz) / 3600"
                " FROM {} ORDER BY item_timestamp"
            ).format(table)
        ).fetchall()
    return [float(age) for (age,) in rows]


@pytest.mark.parametrize(
    ("stale", "in_day", "admitted"),
    [
        pytest.param(0, 0, 10, id="empty: the minute binds"),
        pytest.param(300, 0, 10, id="only stale rows: none of them counts"),
        pytest.param(300, 25, 5, id="a day nearly spent: the day binds, stale rows aside"),
        pytest.param(0, 30, 0, id="a day spent"),
    ],
)
def test_an_admission_counts_only_its_windows_and_prunes_older_rows(
    pg_url: str, stale: int, in_day: int, admitted: int
) -> None:
    budget = shared_budget(pg_url, "client-a", LIMITS)
    try:
        # Rows from before the day window (a replica that stopped long ago left them),
        # and rows 2 h old: in the day's window only.
        _insert(pg_url, "client-a", [(stale, 25 * 3600), (in_day, 2 * 3600)])
        sent = _admitted(budget, 12)
        ages = _ages(pg_url, "client-a")
        now_ms = int(time.time() * 1000)
        counts = budget.bucket.window_counts(now_ms, [60_000, 3_600_000, 86_400_000])  # type: ignore[attr-defined]
    finally:
        budget.close()

    assert sent == admitted
    assert all(age < 24 for age in ages), "a row older than the day window was kept"
    assert len(ages) == in_day + admitted
    assert counts == [admitted, admitted, in_day + admitted]


def test_a_new_owner_counts_what_the_old_owner_admitted_and_wrote_to_the_ledger(
    pg_url: str,
) -> None:
    pool: ConnectionPool[Any] = ConnectionPool(pg_url, min_size=1, max_size=2, open=True)
    old, idle, new = (leased_budget(pool, client, LIMITS) for client in ("a", "b", "a"))
    try:
        create_budget_tables(pool, [old, idle])
        ledger = BudgetLedger(pool)
        for budget in (old, idle):
            ledger.seed(owned_bucket(budget), int(time.time() * 1000))
        for _ in range(7):
            old.acquire("GET", "/api/v1/entities", deadline=time.time())

        assert ledger.take_dirty() == [old.bucket]  # the idle practice is not visited
        assert ledger.flush([owned_bucket(old)], int(time.time() * 1000)) == 7
        assert ledger.take_dirty() == []
        owned_bucket(old).disown()
        ledger.seed(owned_bucket(new), int(time.time() * 1000))  # another replica takes "a"
        for _ in range(3):
            new.acquire("GET", "/api/v1/entities", deadline=time.time())
        with pytest.raises(RateLimitError):  # 7 + 3 fill the minute's 10
            new.acquire("GET", "/api/v1/entities", deadline=time.time())
    finally:
        pool.close()


def test_a_new_owner_counts_the_days_admissions_in_each_window_whatever_their_number(
    pg_url: str,
) -> None:
    # The seed reads the last hour by the second and older hours by the quarter hour (it
    # read every row: 16.5 ms of CPU at a day of 10,000, paid by each practice taken).
    pool: ConnectionPool[Any] = ConnectionPool(pg_url, min_size=1, max_size=2, open=True)
    budget = leased_budget(pool, "seeded", RateLimits(per_minute=10, per_hour=100, per_day=2000))
    try:
        create_budget_tables(pool, [budget])
        # 1,500 admissions 5 h ago, 5 just out of the hour, 40 in it, 6 in the last minute.
        _insert(pg_url, "seeded", [(1500, 5 * 3600), (5, 3660), (20, 1800), (20, 1200), (6, 10)])
        now_ms = int(time.time() * 1000)
        BudgetLedger(pool).seed(owned_bucket(budget), now_ms)
        items = list(owned_bucket(budget).memory.items)  # before the acquires below
        counts = owned_bucket(budget).window_counts(now_ms, [60_000, 3_600_000, 86_400_000])
        sent = _admitted(budget, 6)
    finally:
        pool.close()

    assert counts == [6, 46, 1551]
    assert [item.timestamp for item in items] == sorted(item.timestamp for item in items)
    assert max(item.timestamp for item in items) <= now_ms  # none counted from the future
    assert sent == 4  # the minute's 10 less the 6 seeded


def test_only_the_owner_reports_a_practices_budget_use_and_reads_no_table_for_it(
    pg_url: str,
) -> None:
    # /metrics reads every practice's use at each scrape: one query per practice owned by
    # another replica made a scrape of 1,000 practices cost 0.7 s of CPU.
    pool: ConnectionPool[Any] = ConnectionPool(pg_url, min_size=1, max_size=2, open=True)
    mine, theirs = (leased_budget(pool, client, LIMITS) for client in ("a", "b"))
    try:
        create_budget_tables(pool, [mine, theirs])
        BudgetLedger(pool).seed(owned_bucket(mine), int(time.time() * 1000))
        for _ in range(4):
            mine.acquire("GET", "/api/v1/entities", deadline=time.time())
        pool.close()  # any read of a table now fails

        assert window_use(mine) == {"minute": 4, "hour": 4, "day": 4}
        assert window_use(theirs) is None
    finally:
        pool.close()


def owned_bucket(budget: RateBudget) -> LeasedBucket:
    bucket = budget.bucket
    assert isinstance(bucket, LeasedBucket)
    return bucket
