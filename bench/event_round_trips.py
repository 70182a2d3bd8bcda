"""PostgreSQL statements per webhook event run by a fleet replica, counted by the server.

One practice of the sandbox, served by an in-process :class:`~practiceflow.fleet.Fleet` on a
throw-away PostgreSQL server started with ``pg_stat_statements``, with the webhook recipe of
``bench/many_practices.py`` (``lead.created`` -> create a client: one write). Events are
stored as the receiver stores them, then each is run as its ``run_event`` job runs it
(``Fleet.run_event``, called directly): every statement the server runs meanwhile
(``BEGIN`` and ``COMMIT`` included, each a round trip) is the run's, from the state store
(journal, lease, run) and the shared rate budget. The queue's own statements (defer,
fetch, finish) and the intake's are not in this count.

Run: ``python bench/event_round_trips.py [--events 20]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from poll_round_trips import counted_database, reset_statements, statements  # noqa: E402 -- beside this file

from practiceflow.fleet import Fleet, load_fleet, make_app  # noqa: E402
from practiceflow.state import PostgresStore  # noqa: E402
from practiceflow.testing import running_sandbox  # noqa: E402

#: Statements per event at commit 591c67c (before issue 39's cuts), measured with this
#: bench (12.05 transactions): the run's start, lease and end in transactions of their own.
BEFORE = 52.35
SANDBOX_LIMITS = {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}
SOURCE = "any_webhook_event"
RECIPE = """\
name: bench lead to client
trigger:
  use: any_webhook_event
  mode: webhook
  with: {event: lead.created}
steps:
  - id: copy
    use: create_client
    with:
      entityType: Company
      clientStatus: Active
      entityName: "copy {{ trigger.body.data.entityName }}"
"""


def _fleet_file(folder: Path, base_url: str, client_id: str) -> Path:
    (folder / "lead.yaml").write_text(RECIPE, encoding="utf-8")
    text = (
        f"practices:\n  bench:\n    client_id: {client_id}\n"
        f"    client_secret_env: BENCH_SECRET\n    base_url: {base_url}\n"
        "    recipes: [lead.yaml]\n"
        "    limits: {per_minute: 50000, per_hour: 900000, per_day: 9000000}\n"
    )
    path = folder / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _store_event(store: PostgresStore, number: int) -> str:
    event_id = f"lead-{number}"
    body = {"eventId": event_id, "event": "lead.created", "data": {"entityName": f"n{number}"}}
    store.record_event("bench", SOURCE, "lead.created", event_id, {"body": body})
    return event_id


def main() -> None:
    """Print the statements per event run and the most frequent ones."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20, help="events run")
    args = parser.parse_args()
    outcomes = []
    with (
        counted_database("events") as url,
        running_sandbox(entities=10) as sandbox,
        tempfile.TemporaryDirectory() as folder,
    ):
        sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
        client_id, secret = sandbox.credentials("anz", "rw")
        config = load_fleet(_fleet_file(Path(folder), sandbox.base_url("anz"), client_id))
        app = make_app(url, sync=True)
        with PostgresStore(url) as store, app.open():
            fleet = Fleet(config, store, url, app, environ={"BENCH_SECRET": secret})
            try:
                # The first event stores the recipe's version: not a steady state.
                fleet.run_event("bench", SOURCE, _store_event(store, 0))
                ids = [_store_event(store, n) for n in range(1, args.events + 1)]
                reset_statements(url)
                outcomes = [fleet.run_event("bench", SOURCE, event_id) for event_id in ids]
                counted = statements(url)
            finally:
                fleet.close()
    if set(outcomes) != {"succeeded"}:
        raise SystemExit(f"the runs did not all succeed ({sorted(set(outcomes))}): no figure")
    total = sum(calls for calls, query in counted if "pg_stat_statements" not in query)
    print(f"{args.events} events (lead.created -> create_client), one practice, Fleet.run_event")
    print(f"statements per event: {total / args.events:.2f}")
    for calls, query in counted[:16]:
        if "pg_stat_statements" not in query:
            print(f"{calls / args.events:6.2f}  {' '.join(query.split())[:110]}")
    result = {
        "name": "PostgreSQL statements per webhook event run (store + budget, queue aside)",
        "figure": round(total / args.events, 2),
        "unit": "statements",
        "baseline": f"{BEFORE} at 591c67c, before issue 39's cuts",
        "target": f"fewer than {BEFORE}",
        "measured": True,
        "ok": total / args.events < BEFORE,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
