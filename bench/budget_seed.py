"""A new owner's seed of a practice's budget from its ledger, against the rows the day holds.

A replica that takes a practice (at its start, or from a replica that died) reads the
practice's budget table once and counts in memory from then on
(:meth:`practiceflow.fleet.owned_budget.BudgetLedger.seed`). A survivor taking 5,000
practices pays it 5,000 times, while it carries the dead replica's events. The fleet's
seed reads the last hour by the second and older hours by the quarter hour; the baseline,
timed in the same run on the same tables, reads every row of the day, as the seed did
before. Figures: CPU of the seeding thread per practice, for a day of ``--day-rows``
admissions (about 1,100 at this project's bench rate, 10,000 at the API's daily limit).

Run: ``python bench/budget_seed.py [--practices 100] [--day-rows 1100 10000]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from psycopg import sql
from psycopg_pool import ConnectionPool

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from pgserver import PostgresServer  # noqa: E402 -- the tests' throw-away server helper
from practiceflow.budget.postgres_bucket import WaitingPostgresBucket  # noqa: E402
from practiceflow.budget.rate_budget import RateLimits  # noqa: E402
from practiceflow.fleet.owned_budget import BudgetLedger, LeasedBucket  # noqa: E402

DAY_MS = 86_400_000
#: The seed before: every admission of the day, one row each.
EVERY_ROW = (
    "SELECT (extract(epoch FROM item_timestamp) * 1000)::bigint FROM {table}"
    " WHERE item_timestamp >= TO_TIMESTAMP(%s) ORDER BY item_timestamp"
)


def _every_row(pool: ConnectionPool[Any], bucket: LeasedBucket, now_ms: int) -> None:
    query = sql.SQL(EVERY_ROW).format(table=sql.Identifier(bucket.shared.full_table))
    with pool.connection() as connection:
        rows = connection.execute(query, [(now_ms - DAY_MS) / 1000]).fetchall()
    bucket.own([(int(row[0]), 1) for row in rows])


def _buckets(pool: ConnectionPool[Any], name: str, practices: int, day_rows: int) -> list[Any]:
    rates = RateLimits().rates()
    buckets = []
    now = time.time()
    for number in range(practices):
        shared = WaitingPostgresBucket(pool, f"{name}_{number}", rates, owns_pool=False)
        with pool.connection() as connection:
            connection.execute(
                sql.SQL(
                    "INSERT INTO {} (name, weight, item_timestamp) SELECT 'practiceflow', 1,"
                    " TO_TIMESTAMP(%s - g * %s) FROM generate_series(1, %s) AS g"
                ).format(sql.Identifier(shared.full_table)),
                (now, (DAY_MS / 1000 - 60) / day_rows, day_rows),
            )
        buckets.append(LeasedBucket(shared, rates))
    return buckets


def _cpu_ms(seed: Any, buckets: list[LeasedBucket]) -> float:
    """CPU of this thread per seed, milliseconds."""
    now_ms = int(time.time() * 1000)
    started = time.thread_time()
    for bucket in buckets:
        seed(bucket, now_ms)
    return (time.thread_time() - started) * 1000 / len(buckets)


def _check(buckets: list[LeasedBucket], day_rows: int) -> None:
    counts = {len(bucket.memory.items) for bucket in buckets}
    if counts != {day_rows}:
        raise SystemExit(f"a seed counted {sorted(counts)}, not {day_rows}: no figure")


def main() -> None:
    """Print the CPU per seed, the fleet's and the baseline's, and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--practices", type=int, default=100)
    parser.add_argument("--day-rows", type=int, nargs="+", default=[1100, 10_000])
    args = parser.parse_args()
    server = PostgresServer.start()
    results = []
    try:
        url = server.new_database("seed")
        with ConnectionPool(url, min_size=1, max_size=2, open=True) as pool:
            for day_rows in args.day_rows:
                buckets = _buckets(pool, f"day{day_rows}", args.practices, day_rows)
                ledger = BudgetLedger(pool)
                fleet = _cpu_ms(ledger.seed, buckets)
                _check(buckets, day_rows)
                every = _cpu_ms(lambda bucket, now, p=pool: _every_row(p, bucket, now), buckets)
                _check(buckets, day_rows)
                results.append((day_rows, fleet, every))
    finally:
        server.stop()
    print(f"{args.practices} practices seeded per cell; CPU of the seeding thread")
    print(f"{'day rows':>9}{'fleet ms':>10}{'every row ms':>14}{'ratio':>7}")
    for day_rows, fleet, every in results:
        print(f"{day_rows:>9}{fleet:>10.3f}{every:>14.3f}{fleet / every:>7.2f}")
    for day_rows, fleet, every in results:
        result = {
            "name": f"budget seed of a practice taken, a day of {day_rows} admissions",
            "figure": round(fleet / every, 2),
            "unit": "x the CPU of reading every row",
            "baseline": f"every row {every:.3f} ms, fleet {fleet:.3f} ms per practice",
            "target": "< 1 (fewer rows read than admissions)",
            "measured": True,
            "ok": fleet < every,
        }
        print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
