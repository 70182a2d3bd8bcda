"""Commands on one store spend one practice budget: ``budget.db`` beside a SQLite store."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyrate_limiter import InMemoryBucket

from practiceflow.budget import RateBudget
from practiceflow.budget.rate_budget import RateLimits, budget_table
from practiceflow.budget.sqlite_bucket import SQLiteBudgetBucket
from practiceflow.cli import cli
from practiceflow.errors import RateLimitError
from practiceflow.service.state_location import practice_budget
from practiceflow.testing import SandboxHandle

RECIPE = """\
name: changed client
trigger:
  use: updated_client
  mode: poll
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""


def _rows(budget_db: Path, client_id: str) -> int:
    with sqlite3.connect(budget_db) as connection:
        row = connection.execute(f"SELECT COUNT(*) FROM '{budget_table(client_id)}'").fetchone()  # noqa: S608 - a digest
    return int(row[0])


def test_a_sqlite_store_shares_its_budget_through_the_file_beside_it(tmp_path: Path) -> None:
    limits = RateLimits(per_minute=5, per_hour=50, per_day=500, max_wait=0)
    first = practice_budget(str(tmp_path / "state.db"), "client-a", limits)
    second = practice_budget(f"sqlite:///{tmp_path / 'other.db'}", "client-a", limits)
    try:
        assert isinstance(first, RateBudget)
        assert isinstance(first.bucket, SQLiteBudgetBucket)
        for _ in range(3):
            first.acquire("GET", "/api/v1/entities", deadline=time.time())
        for _ in range(2):
            second.acquire("GET", "/api/v1/entities", deadline=time.time())
        with pytest.raises(RateLimitError):
            first.acquire("GET", "/api/v1/entities", deadline=time.time())
    finally:
        first.close()
        second.close()
    assert _rows(tmp_path / "budget.db", "client-a") == 5


@pytest.mark.parametrize("state", [":memory:", "sqlite:///:memory:", "elsewhere://store"])
def test_a_store_without_a_file_keeps_a_budget_in_memory(state: str) -> None:
    budget = practice_budget(state, "client-a")
    assert isinstance(budget, RateBudget)
    assert isinstance(budget.bucket, InMemoryBucket)
    assert budget.limits == RateLimits()


@pytest.mark.integration
def test_run_counts_its_requests_in_the_budget_beside_the_default_store(
    sandbox: SandboxHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("PRACTICEFLOW_STATE", "PRACTICEFLOW_FLEET", "PRACTICEFLOW_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    client_id, secret = sandbox.credentials("anz", "rw")
    env = {
        "PRACTICEFLOW_CLIENT_ID": client_id,
        "PRACTICEFLOW_CLIENT_SECRET": secret,
        "PRACTICEFLOW_BASE_URL": sandbox.base_url("anz"),
        "PRACTICEFLOW_PROFILES": str(tmp_path / "none.toml"),
    }
    recipe = tmp_path / "changed.yaml"
    recipe.write_text(RECIPE, encoding="utf-8")
    runner = CliRunner(env=env)
    result = runner.invoke(cli, ["run", str(recipe), "--once", "--json"])
    assert result.exit_code == 0, result.output
    # The credentials check and the first poll, where serve and mcp on this store count.
    first = _rows(tmp_path / ".practiceflow" / "budget.db", client_id)
    assert first >= 2
    result = runner.invoke(cli, ["run", str(recipe), "--once", "--json"])
    assert result.exit_code == 0, result.output
    assert _rows(tmp_path / ".practiceflow" / "budget.db", client_id) > first
