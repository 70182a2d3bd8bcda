"""``make demo``: the runner end to end against the local sandbox, in under 30 seconds: a
webhook-triggered recipe run, polling catching up while the receiver is stopped, and the run
console with a screenshot in ``demo-out/`` (skipped, saying why, without chromium).
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from practiceflow.api import Client
from practiceflow.console import ConsoleContext, ConsoleServer
from practiceflow.console.screenshot import screenshot
from practiceflow.manifest import load_modules
from practiceflow.runner import PriorityBudget, RunOutcome, validate_recipe
from practiceflow.service import ServeOptions, serve
from practiceflow.state import StateStore, open_store
from practiceflow.state.request_log import RequestLog
from practiceflow.testing import running_sandbox

_RECIPES = Path(__file__).resolve().parents[2] / "recipes"
#: Where the demo keeps its screenshot of the run console (relative to where it runs).
SCREENSHOT = Path("demo-out") / "console-run.png"


def _recipe_path(name: str) -> Path:
    path = _RECIPES / name
    if not path.is_file():  # installed without the repository: the working directory's
        path = Path("recipes") / name
    return path


def _run_table(store: StateStore, run_id: str, title: str) -> Table:
    run = store.get_run(run_id)
    table = Table(title=f"{title}: run {run_id[:8]} {run.status if run else '?'}")
    for column in ("step", "status", "attempts"):
        table.add_column(column, no_wrap=True)
    # One identifier a line; folded (never cut with an ellipsis) if the terminal is narrow.
    table.add_column("result", overflow="fold")
    for step in store.get_steps(run_id):
        output = step.output if isinstance(step.output, dict) else {}
        ids = {
            k: v
            for k, v in output.items()
            if k.endswith(("Key", "ID", "Number", "line")) and v is not None
        }
        shown = "\n".join(f"{k}={v}" for k, v in list(ids.items())[:3])
        table.add_row(step.step_id, step.status, str(step.attempts), shown)
    return table


def _pick_proposal(sandbox: Any) -> dict[str, Any]:
    active = {
        row["entityKey"]
        for row in sandbox.admin("GET", "/_admin/records/entities")
        if row["status"] == "Active"
    }
    for proposal in sandbox.admin("GET", "/_admin/records/proposals"):
        if proposal["entityKey"] in active and proposal["status"] != "Accepted":
            return dict(proposal)
    message = "the sandbox has no open proposal of an Active client"
    raise RuntimeError(message)


def main() -> int:
    """Run the demo; returns the process exit code."""
    console = Console()
    started = time.monotonic()
    console.rule("practiceflow demo: recipes run durably against the local sandbox")
    registry = load_modules()
    with (
        running_sandbox(seed=1) as sandbox,
        tempfile.TemporaryDirectory(prefix="practiceflow-demo-") as folder,
        open_store(str(Path(folder) / "state.db")) as store,
    ):
        client_id, secret = sandbox.credentials("anz", "rw")
        client = Client(
            client_id, secret, base_url=sandbox.base_url("anz"), budget=PriorityBudget()
        )
        practice = client_id
        with RequestLog(store, practice) as counted:
            client.budget.on_admit(counted.admitted)  # the console's budget chart
            console.print(f"sandbox on {sandbox.url}; state store {folder}/state.db")
            can_write = client.validate().can_write

            first = validate_recipe(
                _recipe_path("proposal_to_bill_and_eform.yaml"),
                registry=registry,
                can_write=can_write,
            )
            # The demo's sandbox goes away with it: remove the subscription on stop. The
            # demo is not the practice's long-running service: no heartbeat, no gap sweeps.
            once = ServeOptions(public_url="local", unsubscribe=True, watch_gaps=False)
            service = serve([first], store, client, practice, once)
            outcomes: list[RunOutcome] = []
            service.on_outcome = outcomes.append
            try:
                service.start()
                server = service.intake.server if service.intake else None
                console.print(
                    f"subscribed {first.trigger.key!r}; receiver on {server.url if server else '?'}"
                )
                key = _pick_proposal(sandbox)["proposalKey"]
                sandbox.admin("POST", f"/_admin/proposals/{key}/accept")
                console.print(f"accepted proposal {key} through the admin surface")
                if not service.run_until(lambda: bool(outcomes), timeout=10):
                    console.print("[red]no delivery arrived and ran within 10 s[/]")
                    return 1
                console.print("signed delivery received, verified and stored")
                for outcome in outcomes:
                    console.print(_run_table(store, outcome.run_id, first.name))
                first_run = outcomes[0].run_id
            finally:
                service.close()

            console.print("receiver stopped and unsubscribed")
            fourth = validate_recipe(
                _recipe_path("new_client_integrations_to_jsonl.yaml"),
                registry=registry,
                can_write=can_write,
            )
            polling = serve([fourth], store, client, practice, ServeOptions(watch_gaps=False))
            assert polling.intake is not None  # serve builds one
            polling.intake.poll_once()  # the first poll starts "from now": no flood of history
            for name in ("Harbour Trust", "Ridge Partners"):
                body = {"entityType": "Company", "entityName": name, "clientStatus": "Active"}
                sandbox.admin("POST", "/_admin/entities", body)
            console.print("two clients created behind the runner's back (admin surface)")
            out = Path(folder) / "client_integrations.jsonl"
            outcomes = []
            polling.on_outcome = outcomes.append
            with contextlib.chdir(Path(folder)):
                found = polling.run_once()  # poll, then run what it found
            polling.close()
            console.print(f"polling caught up: {found} new client event(s)")
            for outcome in outcomes:
                console.print(_run_table(store, outcome.run_id, fourth.name))
            written = Path(folder) / "out" / out.name
            if written.exists():
                for line in written.read_text().splitlines():
                    console.print(json.loads(line))

            counted.flush()  # the budget chart counts every request so far
            context = ConsoleContext(store, practice, [first, fourth])
            server_console = ConsoleServer(context, port=0).start()
            try:
                run_page = f"{server_console.url}runs/{first_run}"
                shot, reason = screenshot(run_page, SCREENSHOT.resolve())
                if shot is None:
                    console.print(f"no screenshot: {reason}")
                else:
                    console.print(f"screenshot of the run page: {shot}")
                if sys.stdin.isatty():
                    console.print(
                        f"run console on {server_console.url} (the first run: {run_page})"
                    )
                    with contextlib.suppress(EOFError, KeyboardInterrupt):
                        input("press Enter to stop the console and end the demo ")
                else:
                    console.print(
                        "the run console answered on 127.0.0.1 for the screenshot and stops "
                        "with the demo (run it at a terminal to keep it open)"
                    )
            finally:
                server_console.stop()
                console.print("run console stopped")
        client.close()
    console.rule(f"done in {time.monotonic() - started:.1f} s; sandbox and receiver stopped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
