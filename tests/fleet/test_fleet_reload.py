"""``worker`` on SIGHUP reads its recipe files again (``Fleet.reload_recipes``): new events
take the new version, runs already made keep theirs; a reload whose trigger changed is
refused and leaves the runners as they were."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _fleet_support import RECIPE, SANDBOX_LIMITS, secrets_env, write_fleet

from practiceflow.errors import ConfigError
from practiceflow.fleet import Fleet, accept_event, load_fleet, make_app
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration


@pytest.fixture
def fleet(pg_url: str, tmp_path: Path, sandbox: SandboxHandle) -> Iterator[Fleet]:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    config = load_fleet(write_fleet(tmp_path, sandbox))
    app = make_app(pg_url)
    with PostgresStore(pg_url) as store, app.open():
        made = Fleet(config, store, pg_url, app, environ=secrets_env(sandbox))
        try:
            yield made
        finally:
            made.close()


def _run(fleet: Fleet, ref: str) -> None:
    accept_event(
        fleet.app, fleet.store, fleet.config.practices["alpha"], "test_event", "test.event",
        ref, {"ref": ref},
    )  # fmt: skip
    fleet.app.run_worker(
        wait=False, install_signal_handlers=False, additional_context=fleet.job_context()
    )
    fleet.app.open()  # the worker closed the app it ran on; the fixture's block closes this


def test_a_reload_gives_new_events_the_new_version_and_keeps_the_old_runs_on_theirs(
    fleet: Fleet, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    _run(fleet, "before")
    (tmp_path / "one_write.yaml").write_text(RECIPE.replace("Fleet {{", "Reloaded {{"))
    fleet.reload_recipes()
    _run(fleet, "after")

    runs = {run.event_id: run for run in fleet.store.list_runs(practice="alpha")}
    assert {ref: run.status for ref, run in runs.items()} == {
        "before": "succeeded",
        "after": "succeeded",
    }
    assert runs["before"].version != runs["after"].version
    assert runs["after"].version == fleet.practices["alpha"].runners[0].version
    names = {row["entityName"] for row in sandbox.admin("GET", "/_admin/records/entities")}
    assert {"Fleet before", "Reloaded after"} <= names


def test_a_reload_that_changes_a_trigger_is_refused(fleet: Fleet, tmp_path: Path) -> None:
    before = fleet.practices["alpha"].runners
    changed = RECIPE.replace("use: test_event", "use: new_client")
    (tmp_path / "one_write.yaml").write_text(changed, encoding="utf-8")
    with pytest.raises(ConfigError, match="triggers changed"):
        fleet.reload_recipes()
    assert fleet.practices["alpha"].runners is before
