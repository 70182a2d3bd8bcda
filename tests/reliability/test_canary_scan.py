"""The canary scan (issue 35), one row per sink: a distinct canary is planted in every
personal field of a sandbox client and of one of its contacts (the fields come from the
modules' ``x-pii`` tags), and every secret is a canary too (the client secret, the webhook
secrets, the state keys); then each sink's scenario reads that client and writes what it
read, for real, against the sandbox, ending with a write the API refuses with an answer
that echoes the personal value it got:

- ``cli``: ``action``, ``serve`` running the recipe from a webhook delivery, ``runs list``
  and ``runs show`` (text and JSON), the console's pages (HTML and JSON), the SQLite store
  (every row version any table was given, deleted ones included);
- ``mcp``: ``practiceflow mcp`` over stdio calling the tools that read the client and the
  ones that write (confirmed with the code a person reads), the recipe as a tool and the
  runs' resources: its transcript both ways, its log and its store; with
  ``--show-personal-data`` the assistant sees the values, its log and store still do not
  (that row under ``PRACTICEFLOW_RELIABILITY_FULL=1``, ``make test-faults``);
- ``fleet``: a ``practiceflow worker`` on PostgreSQL receiving the delivery and running the
  recipe: every row version of every table (the job queue's included), the worker's log,
  ``runs list/show`` over the database;
- ``cassette``: ``practiceflow test --record`` against the sandbox, then its replay: the
  cassette and what the command printed;
- ``export``: ``practiceflow export`` of every platform with credentials in its
  environment: the files written, and no real-looking personal value in any example or
  sample published there or in ``docs/modules.md``.

Each text is searched for each canary, plain, lower case, JSON-escaped, URL-encoded,
base64 and hex (``_canary.hits``): 0 hits.
"""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from starlette.testclient import TestClient

from practiceflow.cli import cli
from practiceflow.console import ConsoleContext, create_app
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle, running_sandbox
from reliability._canary import (
    World,
    hits,
    keep_every_sqlite_row_version,
    plant_client,
    scan,
    sqlite_texts,
)
from reliability._canary_sinks import cassette_sink, export_sink, fleet_sink, mcp_sink
from reliability._support import FAST, FULL, cli_env, free_port, practiceflow, wait_until

pytestmark = pytest.mark.integration

CLIENT_SECRET = "Qz7clientSecretWv4"

#: Reads the client, then writes what it read: a bill, a contact, and a contact the API
#: refuses with an answer that echoes the value it got (a personal one).
RECIPE = """\
name: canary
trigger: {use: proposal_accepted, mode: webhook}
steps:
  - id: client
    use: get_client
    with: {entityKey: "{{ trigger.entityKey }}"}
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.entityKey }}"
      billDetails: "Fee for {{ steps.client.entityName }} ({{ steps.client.taxNumber }})"
      lineItems:
        - {amount: 100, taxPercent: 10, narration: "for {{ steps.client.email }}"}
  - id: contact
    use: create_contact
    with:
      entityKey: "{{ trigger.entityKey }}"
      contact:
        firstName: "{{ steps.client.entityName }}"
        lastName: "{{ steps.client.entitySurname }}"
        email: "{{ steps.client.email }}"
  - id: refused
    use: create_contact
    with:
      entityKey: "{{ trigger.entityKey }}"
      contact: {firstName: Refused, isPrimary: "{{ steps.client.taxNumber }}"}
"""


@pytest.fixture(scope="module")
def canary_sandbox() -> Iterator[SandboxHandle]:
    """One sandbox for the module, its client secret a canary."""
    with running_sandbox(client_secret=CLIENT_SECRET, webhook_retry_scale=0.05) as handle:
        yield handle


@pytest.fixture
def world(canary_sandbox: SandboxHandle, tmp_path: Path) -> World:
    """The sandbox reset, a canary in every personal field of one client with an open
    proposal."""
    canary_sandbox.reset()
    canary_sandbox.admin("POST", "/_admin/config", {"rateLimits": FAST})
    practice = canary_sandbox.state.practice("anz")
    proposals = canary_sandbox.admin("GET", "/_admin/records/proposals")
    proposal = next(row for row in proposals if row["status"] in ("Sent", "Draft"))
    planted = plant_client(practice, practice.entities[proposal["entityKey"]])
    # The scan finds each canary where it is: in the sandbox's own records.
    records = canary_sandbox.admin("GET", "/_admin/records/entities")
    records += canary_sandbox.admin("GET", "/_admin/records/contacts")
    found = {
        hit.split(" in ")[0] for hit in hits("the sandbox", json.dumps(records), planted.values)
    }
    assert found == set(planted.values)
    return World(canary_sandbox, tmp_path, planted, proposal["proposalKey"], RECIPE, CLIENT_SECRET)


def cli_sink(world: World) -> None:
    """``action``, ``serve`` on a delivery, ``runs list/show``, the console, the store."""
    sandbox, planted = world.sandbox, world.planted
    recipe = world.folder / "canary.yaml"
    recipe.write_text(world.recipe, encoding="utf-8")
    state = world.folder / "state.db"
    keep_every_sqlite_row_version(state)
    env = cli_env(sandbox, PRACTICEFLOW_STATE=str(state))
    action = _cli(env, "action", "get_client", "--input", "-", "--json", stdin=planted.entity_key)
    # Its stdout is the record the user asked for; its log lines are scanned.
    world.found.append(("action get_client (log)", action.stderr))

    listen = f"127.0.0.1:{free_port()}"
    serve_env = {**env, "PRACTICEFLOW_PUBLIC_URL": "local", "PRACTICEFLOW_LISTEN": listen}
    serve = subprocess.Popen(  # noqa: S603 - our own CLI
        practiceflow("serve", str(recipe), "-v", "--log-json", "--no-console"),
        env=serve_env,
        cwd=world.folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: sandbox.admin("GET", "/_admin/records/subscriptions"), 90, "sub")
        sandbox.admin("POST", f"/_admin/proposals/{world.proposal_key}/accept")
        email = planted.values["email"]
        wait_until(lambda: world.contact_written(email), 90, "the contact from the record")
        time.sleep(0.5)  # let serve journal the step's outcome before it is stopped
    finally:
        serve.send_signal(signal.SIGTERM)
        out, err = serve.communicate(timeout=60)
    world.found.append(("serve", out + err))
    for i, row in enumerate(sandbox.state.practice("anz").subscriptions.values()):
        world.secrets[f"webhook secret {i}"] = row["secret"]

    runs = json.loads(_cli(env, "runs", "list", "--json").stdout)
    assert [run["status"] for run in runs] == ["failed"], runs
    run_id = runs[0]["run_id"]
    # A new version whose writes render the personal values otherwise: replay prints how.
    changed = world.folder / "canary_v2.yaml"
    changed.write_text(world.recipe.replace("Fee for", "Fees for"), encoding="utf-8")
    for args in (
        ["runs", "list"],
        ["runs", "show", run_id],
        ["attention", "list"],
        ["replay", run_id, "--recipe", str(changed)],
        ["recipes", "check", str(changed), "--evidence", "1d"],
        ["audit", "completeness"],
        ["runs", "retry", run_id],
    ):
        for extra in ([], ["--json"]):
            done = _cli(env, *args, *extra, allowed=(0, 1))
            world.found.append((" ".join(args + extra), done.stdout + done.stderr))

    with open_store(str(state)) as store:
        console = ConsoleContext(store, None, secrets=[CLIENT_SECRET], who="tester")
        with TestClient(create_app(console), base_url="http://127.0.0.1") as web:
            for page in (
                "/console/",
                "/console/runs",
                f"/console/runs/{run_id}",
                "/console/attention",
                "/console/api/runs",
                f"/console/api/runs/{run_id}",
                "/console/api/attention",
            ):
                response = web.get(page)
                assert response.status_code == 200, (page, response.text[:300])
                world.found.append((page, response.text))
    world.found += sqlite_texts(state)
    for key in world.folder.glob("*.key"):
        world.secrets[f"state key {key.name}"] = key.read_text().strip()


def _cli(
    env: dict[str, str], *args: str, stdin: str | None = None, allowed: tuple[int, ...] = (0,)
) -> Result:
    """A command in this process (its own process costs seconds on a busy machine); it
    must exit with one of the ``allowed`` codes."""
    given = None if stdin is None else json.dumps({"entityKey": stdin})
    done = CliRunner().invoke(cli, list(args), input=given, env=env, catch_exceptions=False)
    assert done.exit_code in allowed, (args, done.output)
    return done


#: Each sink and its scenario.
SINKS: dict[str, Callable[[World], None]] = {
    "cli": cli_sink,
    "mcp": mcp_sink,
    "fleet": fleet_sink,
    "cassette": cassette_sink,
    "export": export_sink,
}


if FULL:  # a variant of a sink, in make test-faults
    SINKS["mcp --show-personal-data"] = functools.partial(mcp_sink, shown=True)


@pytest.mark.parametrize("sink", SINKS)
def test_no_canary_reaches_a_table_a_log_a_page_or_a_transcript(sink: str, world: World) -> None:
    SINKS[sink](world)
    assert world.found, "the scenario handed back nothing to scan"
    canaries = {**world.planted.values, **world.secrets, **world.typed}
    sent_canaries = {**world.planted.values, **world.secrets}
    hits = scan(world.found, canaries) + scan(world.sent, sent_canaries) + world.problems
    hits += scan(world.shown, world.secrets)
    assert hits == [], "\n".join(hits)
