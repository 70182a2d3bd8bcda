"""``serve`` picks up an edited recipe on SIGHUP: new events take the new version, a run in
flight keeps its own; a reload that does not load leaves the recipes served as they were."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from practiceflow.api import Client
from practiceflow.errors import ConfigError
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, validate_recipe
from practiceflow.service.loop import Service
from practiceflow.state import StateStore, open_store
from practiceflow.testing import SandboxHandle
from versions._support import make_folder, written

pytestmark = pytest.mark.integration


def _runner(store: StateStore, client: Client, recipe: Path, modules: Path) -> Runner:
    return Runner(
        validate_recipe(recipe, registry=load_modules([modules])), store, client, practice="anz"
    )


def test_sighup_reloads_new_events_take_the_new_version_runs_in_flight_keep_theirs(
    fast_sandbox: SandboxHandle, client: Client, tmp_path: Path
) -> None:
    recipe, modules = make_folder(tmp_path)
    with open_store(str(tmp_path / "state.db")) as store:
        first = _runner(store, client, recipe, modules)
        # A run in flight: stopped gracefully after its client was created.
        store.record_event("anz", "test_event", "test.event", "old", {"ref": "old"})
        stop = threading.Event()

        def point(label: str) -> None:
            if label == "done:client":
                stop.set()

        waiting = Runner(first.recipe, store, client, practice="anz", stop=stop, on_point=point)
        (held,) = waiting.process_pending()
        assert held.status == "running"

        service = Service([first], store, reload=lambda: [_runner(store, client, recipe, modules)])
        service.install_signal_handlers()
        text = recipe.read_text(encoding="utf-8")
        recipe.write_text(text.replace("fee: 100", "fee: 250"), encoding="utf-8")
        os.kill(os.getpid(), signal.SIGHUP)
        assert service.reload_wanted.is_set()
        store.record_event("anz", "test_event", "test.event", "new", {"ref": "new"})

        service.run(max_loops=1)  # reloads first, then resumes "old" and runs "new"

        (reloaded,) = service.runners
        assert reloaded.version != first.version
        runs = {run.event_id: run for run in store.list_runs()}
        assert {event: run.status for event, run in runs.items()} == {
            "old": "succeeded",
            "new": "succeeded",
        }
        assert (runs["old"].version, runs["new"].version) == (first.version, reloaded.version)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    assert written(fast_sandbox, "old")["fees"] == [100.0]
    assert written(fast_sandbox, "new")["fees"] == [250.0]


def test_a_reload_that_does_not_load_keeps_the_recipes_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    recipe, modules = make_folder(tmp_path)
    with open_store(str(tmp_path / "state.db")) as store:
        first = _runner(store, None, recipe, modules)  # type: ignore[arg-type]

        def broken() -> list[Runner]:
            raise ConfigError("recipe.yaml:3:1 trigger.use: got 'nope'")

        service = Service([first], store, reload=broken)
        service.reload_recipes()
        assert service.runners == [first]
    assert "reload refused, the recipes served are unchanged" in caplog.text
