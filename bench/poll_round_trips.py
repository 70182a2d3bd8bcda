"""PostgreSQL statements per empty poll of a fleet replica, counted by the server.

One practice of the sandbox, served by an in-process :class:`~practiceflow.fleet.Fleet` on a
throw-away PostgreSQL server started with ``pg_stat_statements``; its polling triggers are
those of ``bench/many_practices.py`` (``new_group``, ``updated_group``, ``new_contact``) and
``new_client``. Each trigger is polled once for its baseline and once more, then the
server's statement counters are reset and each trigger is polled ``--polls`` times over
lists that do not change: every statement the server runs meanwhile (``BEGIN`` and
``COMMIT`` included, each one a round trip) is an empty poll's, from the state store and
the shared rate budget. The job queue's own statements (fetch, finish, the tick that
queued the poll) are not in this count: the job is called directly.

Run: ``python bench/poll_round_trips.py [--polls 20]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import pgserver  # noqa: E402 -- the tests' throw-away server helper
from practiceflow.cli.db import migrate_state  # noqa: E402
from practiceflow.fleet import Fleet, load_fleet, make_app  # noqa: E402
from practiceflow.state import PostgresStore  # noqa: E402
from practiceflow.testing import running_sandbox  # noqa: E402

#: Statements per empty poll at the commit before a poll wrote its cursor only when it
#: moved and read its known keys only when a row needed them (commit be95219, measured
#: with this bench, the same triggers and polls).
BEFORE = 18.27
SANDBOX_LIMITS = {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}
TRIGGERS = ("new_group", "updated_group", "new_contact", "new_client")
RECIPE = """\
name: bench poll {trigger}
trigger:
  use: {trigger}
  mode: poll
steps:
  - id: look
    use: find_groups
    with: {{name: bench}}
"""


def _fleet_file(folder: Path, base_url: str, client_id: str) -> Path:
    recipes = []
    for trigger in TRIGGERS:
        (folder / f"{trigger}.yaml").write_text(RECIPE.format(trigger=trigger), encoding="utf-8")
        recipes.append(f"{trigger}.yaml")
    text = (
        f"practices:\n  bench:\n    client_id: {client_id}\n"
        f"    client_secret_env: BENCH_SECRET\n    base_url: {base_url}\n"
        f"    recipes: [{', '.join(recipes)}]\n"
        "    limits: {per_minute: 50000, per_hour: 900000, per_day: 9000000}\n"
    )
    path = folder / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def statements(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT s.calls, s.query FROM pg_stat_statements s"
            " JOIN pg_database d ON d.oid = s.dbid"
            " WHERE d.datname = current_database() ORDER BY s.calls DESC"
        ).fetchall()
    return [(int(calls), str(query)) for calls, query in rows]


def reset_statements(url: str) -> None:
    with psycopg.connect(url) as connection:
        connection.execute("SELECT pg_stat_statements_reset()")


@contextmanager
def counted_database(name: str) -> Iterator[str]:
    """A migrated database on a throw-away server that counts its statements."""
    pgserver._SETTINGS["shared_preload_libraries"] = "pg_stat_statements"
    server = pgserver.PostgresServer.start()
    try:
        url = server.new_database(name)
        migrate_state(url)
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        yield url
    finally:
        server.stop()


def main() -> None:
    """Print the statements per empty poll and the most frequent ones."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=20, help="empty polls per trigger")
    args = parser.parse_args()
    with (
        counted_database("rounds") as url,
        running_sandbox(entities=10) as sandbox,
        tempfile.TemporaryDirectory() as folder,
    ):
        # Windows no poll here reaches: each admission is one check, never a wait.
        sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
        client_id, secret = sandbox.credentials("anz", "rw")
        config = load_fleet(_fleet_file(Path(folder), sandbox.base_url("anz"), client_id))
        app = make_app(url, sync=True)
        with PostgresStore(url) as store, app.open():
            fleet = Fleet(config, store, url, app, environ={"BENCH_SECRET": secret})
            try:
                for _ in range(2):  # the baseline, then one poll from the cursor
                    for trigger in TRIGGERS:
                        fleet.poll("bench", trigger)
                reset_statements(url)
                found = 0
                for _ in range(args.polls):
                    for trigger in TRIGGERS:
                        found += fleet.poll("bench", trigger)
                counted = statements(url)
            finally:
                fleet.close()
    if found:
        raise SystemExit(f"{found} event(s) found: the polls were not empty, no figure")
    polls = args.polls * len(TRIGGERS)
    # The reset and this count's own statement are not the polls'.
    total = sum(calls for calls, query in counted if "pg_stat_statements" not in query)
    print(f"{polls} empty polls ({', '.join(TRIGGERS)}), one practice, in-process Fleet.poll")
    print(f"statements per empty poll: {total / polls:.2f}")
    for calls, query in counted[:12]:
        if "pg_stat_statements" not in query:
            print(f"{calls / polls:6.2f}  {' '.join(query.split())[:110]}")
    result = {
        "name": "PostgreSQL statements per empty poll (state store + budget, queue aside)",
        "figure": round(total / polls, 2),
        "unit": "statements",
        "baseline": f"{BEFORE} before (cursor written and known keys read every poll)",
        "target": f"fewer than {BEFORE}",
        "measured": True,
        "ok": total / polls < BEFORE,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
