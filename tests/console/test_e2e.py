"""End to end in headless Chromium: the console of a running service, against the sandbox.

The service is what ``practiceflow serve`` runs (:class:`Service` with the console mounted
through its hook), in a thread, with the runner talking to the sandbox over 127.0.0.1. The
sandbox drops the connection after creating a lead, so the run is held with the step in
doubt. A person then follows the run from the list to its steps, marks the step done
through the confirmation form, and sees the journal change and the run finish.

The browser is Debian's ``/usr/bin/chromium`` driven by Playwright; nothing is downloaded.
The run page's screenshot is kept in the test's tmp dir, and copied to the path in
``PRACTICEFLOW_SCREENSHOT_OUT`` when set (``docs/console.md`` shows the command).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright import sync_api

from practiceflow.api import Client, RateLimits
from practiceflow.console import ConsoleContext, ConsoleServer
from practiceflow.console.screenshot import CHROMIUM_ARGS
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, validate_recipe
from practiceflow.service.loop import Service
from practiceflow.state import StateStore, open_store
from practiceflow.testing import SandboxHandle
from runner._support import FAST, MODULES, write_recipe

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
ARGS = CHROMIUM_ARGS
STEPS = """\
  - id: lead
    use: create_lead
    with: {entityType: Individual, entityName: "Console {{ trigger.ref }}"}
  - id: client
    use: create_client
    with: {entityType: Company, entityName: "After {{ trigger.ref }}"}
"""


def _wait(what: str, check: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StateStore]:
    """A fresh SQLite state store."""
    with open_store(str(tmp_path / "state.db")) as opened:
        yield opened


@pytest.fixture
def client(sandbox: SandboxHandle) -> Iterator[Client]:
    """A read-write client of the sandbox with a budget far above what the test sends."""
    sandbox.admin("POST", "/_admin/config", {"rateLimits": FAST})
    client_id, secret = sandbox.credentials("anz", "rw")
    limits = RateLimits(per_minute=100_000, per_hour=1_000_000, per_day=10_000_000)
    with Client(
        client_id, secret, base_url=sandbox.base_url("anz"), limits=limits, timeout=5
    ) as made:
        yield made


@pytest.fixture
def serving(
    sandbox: SandboxHandle, client: Client, store: StateStore, tmp_path: Path
) -> Iterator[tuple[Service, ConsoleServer, str]]:
    """A running service with its console; yields (service, console, the held run's id)."""
    registry = load_modules([MODULES])
    recipe = validate_recipe(write_recipe(tmp_path, STEPS, name="console e2e"), registry=registry)
    practice = client.settings.client_id
    fault = {"kind": "drop", "count": 1, "method": "POST", "pathPrefix": "/api/v1/leads"}
    sandbox.admin("POST", "/_admin/faults", fault)
    store.record_event(practice, "test_event", "test.event", "e2e-1", {"ref": "e2e-1"})
    runner = Runner(recipe, store, client, practice=practice)
    service = Service([runner], store, idle=0.05)
    ctx = ConsoleContext(
        store,
        practice,
        [recipe],
        registry=registry,
        limits=client.limits,
        secrets=[client.settings.client_secret.reveal()],
        stop=service.stop,
        settled=service.settled,
        who="e2e tester",
    )
    console = ConsoleServer(ctx, "127.0.0.1", 0)
    service.console = console
    thread = threading.Thread(target=service.run, name="e2e-serve", daemon=True)
    thread.start()
    try:
        _wait("the run to be held", lambda: bool(store.list_runs(status="in_doubt")))
        _wait("the console to listen", lambda: console.port != 0)
        yield service, console, store.list_runs(status="in_doubt")[0].run_id
    finally:
        service.stop.set()
        thread.join(timeout=15)


def test_a_person_follows_a_run_resolves_its_step_and_sees_the_journal_change(
    serving: tuple[Service, ConsoleServer, str],
    client: Client,
    store: StateStore,
    tmp_path: Path,
):
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run 'bash .ci/system-deps' (make test does)")
    _, console, run_id = serving
    secret = client.settings.client_secret.reveal()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(console.url + "runs")
            page.click(f"a.run-link:has-text('{run_id}')")
            assert page.inner_text("#run-status") == "in_doubt"
            assert "held for a person" in page.content()

            page.click("#step-lead >> text=Mark done")
            assert "did happen" in page.content()  # the confirmation step
            assert store.get_step(run_id, "lead").status == "in_doubt"  # type: ignore[union-attr]
            page.fill("input[name=note]", "lead seen in the portal")
            page.click("#confirm")

            assert "resolved as done" in page.inner_text("#notice")
            history = page.inner_text("#journal-lead")
            assert "e2e tester" in history
            assert "lead seen in the portal" in history
            step = store.get_step(run_id, "lead")
            assert step is not None
            assert step.resolved_by == "e2e tester"

            # serve resumes the settled run by itself; the page shows it finished.
            _wait("the run to finish", lambda: store.get_run(run_id).status == "succeeded")  # type: ignore[union-attr]
            page.reload()
            assert page.inner_text("#run-status") == "succeeded"
            assert secret not in page.content()
            shot = tmp_path / "console-run.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    out = os.environ.get("PRACTICEFLOW_SCREENSHOT_OUT")
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, out)
