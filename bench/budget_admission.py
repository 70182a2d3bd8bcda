"""The shared rate budget's admission cost against the rows its table holds.

One admission (lock, count the three windows, insert) on a practice's PostgreSQL bucket,
timed over ``--admissions`` admissions in a row, for a table holding: nothing; a busy
day's rows (``--day-rows`` admissions spread over the last 24 h); and the same day plus
``--stale-rows`` rows older than a day (a replica that admitted them long ago and stopped
before its periodic leak). Each case runs on pyrate-limiter's own ``PostgresBucket``
(the count scans the whole table) and on the fleet's ``WaitingPostgresBucket`` (the count
reads the longest window's rows through the index and deletes the older ones), in one run
on one throw-away server, so the two columns compare like for like.

The plan of the fleet's count on the largest table is printed too (it must use the
timestamp index).

Run: ``python bench/budget_admission.py [--admissions 300] [--day-rows 4000]
[--stale-rows 20000]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool
from pyrate_limiter import PostgresBucket, RateItem

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from pgserver import PostgresServer  # noqa: E402 -- the tests' throw-away server helper
from practiceflow.budget.postgres_bucket import WaitingPostgresBucket  # noqa: E402
from practiceflow.budget.rate_budget import RateLimits  # noqa: E402

#: Limits no case reaches: every admission is admitted, so each is one full check.
LIMITS = RateLimits(per_minute=1_000_000, per_hour=10_000_000, per_day=100_000_000)
DAY_S = 86_400


def _fill(url: str, table: str, day_rows: int, stale_rows: int) -> None:
    now = time.time()
    with psycopg.connect(url) as connection:
        insert = sql.SQL(
            "INSERT INTO {} (name, weight, item_timestamp) SELECT 'practiceflow', 1,"
            " TO_TIMESTAMP(%s - g * %s) FROM generate_series(1, %s) AS g"
        ).format(sql.Identifier(table))
        if day_rows:
            connection.execute(insert, (now, (DAY_S - 60) / day_rows, day_rows))
        if stale_rows:
            connection.execute(insert, (now - DAY_S - 3600, 1.0, stale_rows))
        connection.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))


def _time(bucket: Any, admissions: int) -> float:
    """Milliseconds per admission, ``admissions`` in a row."""
    started = time.perf_counter()
    for _ in range(admissions):
        if not bucket.put(RateItem("practiceflow", int(time.time() * 1000))):
            raise SystemExit("an admission was refused; the limits are meant to never bind")
    return (time.perf_counter() - started) * 1000 / admissions


def _plan(url: str, bucket: WaitingPostgresBucket) -> str:
    now_ms = time.time() * 1000
    starts = [(now_ms - rate.interval) / 1000 for rate in bucket.rates]
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            sql.SQL("EXPLAIN ") + bucket._q_count_windows,
            starts,
        ).fetchall()
        connection.rollback()  # EXPLAIN without ANALYZE deletes nothing; leave no transaction
    return "\n".join(str(row[0]) for row in rows)


def main() -> None:
    """Print ms per admission for each table and each bucket, and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--admissions", type=int, default=300)
    parser.add_argument("--day-rows", type=int, default=4000)
    parser.add_argument("--stale-rows", type=int, default=20000)
    args = parser.parse_args()
    cases = [
        ("empty", 0, 0),
        ("a day of rows", args.day_rows, 0),
        ("a day + stale rows", args.day_rows, args.stale_rows),
    ]
    server = PostgresServer.start()
    results = []
    plan = ""
    try:
        for n, (label, day_rows, stale_rows) in enumerate(cases):
            url = server.new_database(f"budget{n}")
            figures: dict[str, Any] = {"case": label, "rows": day_rows + stale_rows}
            with ConnectionPool(url, min_size=1, max_size=2, open=True) as pool:
                for kind, make in (
                    ("library", PostgresBucket),
                    ("fleet", WaitingPostgresBucket),
                ):
                    table = f"{kind}{n}"
                    bucket = make(pool, table, LIMITS.rates())
                    if isinstance(bucket, WaitingPostgresBucket):
                        bucket.owns_pool = False
                    _fill(url, f"ratelimit___{table}", day_rows, stale_rows)
                    figures[f"{kind}_ms"] = round(_time(bucket, args.admissions), 3)
                    if isinstance(bucket, WaitingPostgresBucket) and stale_rows:
                        _fill(url, f"ratelimit___{table}", 0, stale_rows)
                        plan = _plan(url, bucket)
            figures["ratio"] = round(figures["library_ms"] / figures["fleet_ms"], 2)
            results.append(figures)
    finally:
        server.stop()
    print(f"{args.admissions} admissions in a row per cell; PostgreSQL fsync off (pgserver.py)")
    print(f"{'table':<22}{'rows':>7}{'library ms':>12}{'fleet ms':>10}{'ratio':>7}")
    for r in results:
        print(
            f"{r['case']:<22}{r['rows']:>7}{r['library_ms']:>12.3f}{r['fleet_ms']:>10.3f}"
            f"{r['ratio']:>7.2f}"
        )
    print("plan of the fleet's count, a day + stale rows in the table:\n" + plan)
    for r in results:
        result = {
            "name": f"shared budget: one admission, table with {r['case']} ({r['rows']} rows)",
            "figure": r["ratio"],
            "unit": "x faster than the library's bucket",
            "baseline": f"library bucket {r['library_ms']} ms, fleet {r['fleet_ms']} ms",
            "target": "flat with rows older than the day (the library's grows)",
            "measured": True,
            "ok": None,
        }
        print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
