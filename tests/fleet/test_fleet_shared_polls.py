"""An owning replica polls each list once for every trigger of a practice that reads it.

Four recipes on the four entity triggers (``new_client``, ``new_lead``, ``lead_converted``,
``updated_client``) read ``GET /api/v1/entities/list?lastUpdated=``: the owner's poll of the
practice sends one request for the four (triggers/shared_poll.py), and each trigger still
fires its own events.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _fleet_support import REGIONS, SANDBOX_LIMITS, secrets_env, write_fleet_file

from practiceflow.fleet import load_fleet, make_app
from practiceflow.fleet.runtime import Fleet
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

TRIGGERS = ("new_client", "new_lead", "lead_converted", "updated_client")
RECIPE = """\
name: shared {trigger}
trigger:
  use: {trigger}
  mode: poll
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{{{ trigger.entityKey }}}}"
"""


def _list_reads(sandbox: SandboxHandle) -> list[str]:
    """The queries of the practice's list reads answered 200 (a 429's retry is the limiter's)."""
    log: list[dict[str, Any]] = sandbox.admin("GET", "/_admin/requests", region=REGIONS["alpha"])
    return [
        str(row["query"])
        for row in log
        if row["method"] == "GET"
        and row["path"].startswith("/api/v1/entities")
        and row["status"] == 200
    ]


def test_the_four_entity_triggers_cost_one_request_a_poll(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    recipes = {f"{name}.yaml": RECIPE.format(trigger=name) for name in TRIGGERS}
    config = load_fleet(write_fleet_file(tmp_path, sandbox, recipes))
    app = make_app(pg_url, sync=True)
    with PostgresStore(pg_url) as store, app.open():
        fleet = Fleet(config, store, pg_url, app, environ=secrets_env(sandbox), owned=True)
        try:
            before = len(_list_reads(sandbox))
            assert fleet.poll_practice("alpha") == 0  # the first poll learns, fires nothing
            first = _list_reads(sandbox)[before:]
            for n in range(2):
                body = {"entityType": "Company", "entityName": f"Shared {n}"}
                sandbox.admin("POST", "/_admin/entities", body, region=REGIONS["alpha"])
            before = len(_list_reads(sandbox))
            found = fleet.poll_practice("alpha")
            again = _list_reads(sandbox)[before:]
            pending = store.pending_events("alpha")
        finally:
            fleet.close()
    # The first poll reads the whole list once for the four (each page once), ...
    assert first
    assert len(set(first)) == len(first)
    assert all("lastUpdated" not in query for query in first)
    # ... and each later poll asks once for what changed since the earliest cursor.
    assert len(again) == 1
    assert "lastUpdated=" in again[0]
    fired = [event.source for event in pending]
    assert found == len(fired)
    assert fired.count("new_client") == 2
    assert set(fired) <= set(TRIGGERS)
