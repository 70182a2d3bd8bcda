"""A replica's start reads in bulk, and what it read at start never outlives its leases.

A fleet of thousands of practices read a cursor and created a budget table per practice
on start (minutes at 3,000). Now the cursors come from one snapshot and the missing
tables are created 500 a transaction; an owner still reads its practices' cursors
afresh when it gains them, since another replica may have polled them since this one
started (a cursor believed empty would start the practice from now, losing events). A
fleet file and profile file of 10,000 practices load (the recipes' YAML limits stopped
near 8,000).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from psycopg_pool import ConnectionPool

from practiceflow.budget.rate_budget import RateLimits
from practiceflow.fleet import load_fleet, owned_runtime
from practiceflow.fleet.cursor_cache import CursorCache
from practiceflow.fleet.owned_runtime import create_budget_tables, leased_budget
from practiceflow.state import PostgresStore, open_store


def test_the_start_snapshot_answers_until_the_practice_is_owned(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    with open_store(url) as store, open_store(url) as other_replica:
        store.set_cursor("alpha", "new_client", "2026-11-01T00:00:00Z", ["c-1"])
        cache = CursorCache(store)
        cache.preload(["alpha", "beta"])
        # Another replica polls beta after this one's start: the snapshot does not know.
        other_replica.set_cursor("beta", "new_client", "2026-11-02T00:00:00Z")

        alpha = cache.get_cursor_state("alpha", "new_client")
        assert alpha is not None
        assert alpha.boundary_keys == frozenset({"c-1"})
        assert cache.get_cursor("beta", "new_client") is None  # the start's view

        cache.forget("beta")  # gaining beta's lease
        assert cache.get_cursor("beta", "new_client") == "2026-11-02T00:00:00Z"
        assert cache.get_cursor("gamma", "new_client") is None  # not in the fleet: read


def test_missing_budget_tables_are_created_once_in_batches(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batches of 2 here; of 500 in a replica, whose 10,000 tables in one transaction ran
    # out of PostgreSQL's lock table.
    monkeypatch.setattr(owned_runtime, "_TABLES_PER_TRANSACTION", 2)
    tables = "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'ratelimit%'"
    with ConnectionPool(pg_url, min_size=1, max_size=2) as pool:
        budgets = [leased_budget(pool, f"client-{n}", RateLimits()) for n in range(5)]
        with pool.connection() as connection:
            assert connection.execute(tables).fetchone() == (0,)  # nothing made per budget
        assert create_budget_tables(pool, budgets) == 5
        assert create_budget_tables(pool, budgets) == 0  # a restart finds them
        with pool.connection() as connection:
            assert connection.execute(tables).fetchone() == (5,)
        budgets[0].acquire("GET", "/api/v1/entities")  # the table counts through the shared side


def test_postgres_store_lists_every_cursor_in_one_snapshot(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        store.set_cursor("alpha", "a", "1", ["k1", "k2"])
        store.set_cursor("beta", "b", "2")
        states = store.cursor_states()
    found = {(s.practice, s.trigger_key): (s.value, s.boundary_keys) for s in states}
    assert found == {
        ("alpha", "a"): ("1", frozenset({"k1", "k2"})),
        ("beta", "b"): ("2", frozenset()),
    }


def test_a_fleet_file_of_ten_thousand_practices_loads_with_their_profiles(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\n", encoding="utf-8")
    lines, tables = ["practices:"], []
    for number in range(10_000):
        lines += [f"  p{number}:", f"    profile: p{number}", "    recipes: [r.yaml]"]
        lines += ["    limits: {per_minute: 60, per_hour: 1000, per_day: 10000}"]
        tables += [f"[p{number}]", f'client_id = "id-{number}"', f'client_secret = "{number:040d}"']
        tables += ['base_url = "http://127.0.0.1:9/anz"', ""]
    (tmp_path / "fleet.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    profiles = tmp_path / "profiles.toml"
    profiles.write_text("\n".join(tables), encoding="utf-8")
    assert profiles.stat().st_size > 1_000_000  # past the former profile-file limit

    config = load_fleet(tmp_path / "fleet.yaml")  # past the recipes' 100,000 YAML nodes

    assert len(config.practices) == 10_000
    settings = config.practices["p9999"].settings({"PRACTICEFLOW_PROFILES": str(profiles)})
    assert (settings.client_id, settings.base_url) == ("id-9999", "http://127.0.0.1:9/anz")
