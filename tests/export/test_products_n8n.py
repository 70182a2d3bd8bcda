"""Proof inside the real product: the exported n8n package runs in n8n itself.

n8n 2.8.4 (the npm package, pinned in ``products/n8n``; the newest that runs on Node 20)
loads the built package from ``N8N_CUSTOM_EXTENSIONS`` as a user's instance loads a
community package, with its database on a throw-away PostgreSQL server (the SQLite driver
is a native module whose install step downloads a binary). Credentials and workflows go
in through n8n's own CLI (``import:credentials``, ``import:workflow``, ``publish:workflow``);
then

* ``n8n execute`` runs a workflow whose Practiceflow node creates a client;
* under ``n8n start`` on 127.0.0.1, every webhook trigger (``any_webhook_event`` included)
  and the ``new_client`` poll trigger run in active workflows: the webhook ones subscribe
  with the sandbox when n8n activates them, the sandbox's signed deliveries start them, the
  poll one reads the client list every minute; each workflow then creates a client through
  the Practiceflow node, which is what the test finds on the sandbox.

Part of ``make test-connectors`` (minutes: n8n's install, start-up and a poll interval).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from practiceflow.testing import SandboxHandle

sys.path.insert(0, str(Path(__file__).parents[1]))
from pgserver import shared_server

pytestmark = [pytest.mark.products, pytest.mark.timeout(1200)]

CREDENTIAL = {"id": "pfSandboxCred01", "name": "Practiceflow sandbox"}
WEBHOOK_TRIGGERS = {
    "any_webhook_event": {"event": "proposal.accepted"},
    "proposal_accepted": {},
    "eform_submitted": {},
    "onboarding_completed": {},
}
POLL_TRIGGERS = {"new_client": {}}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(what: str, check: Callable[[], Any], timeout: float, log: Path | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(1)
    tail = log.read_text(errors="replace")[-6000:] if log and log.exists() else ""
    pytest.fail(f"waited {timeout:.0f}s for {what}\n{tail}")


@pytest.fixture(scope="module")
def n8n_package(n8n_product: Path, n8n_built: Path) -> Path:
    """The built package where n8n's own n8n-workflow resolves for it (as in ~/.n8n/nodes)."""
    target = n8n_product / "node_modules" / "n8n-nodes-practiceflow"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy(n8n_built / "package.json", target / "package.json")
    shutil.copytree(n8n_built / "dist", target / "dist")
    return target


@pytest.fixture(scope="module")
def n8n_instance(tmp_path_factory: pytest.TempPathFactory, n8n_package: Path) -> dict[str, str]:
    url = shared_server().new_database("n8n")
    port = url.rsplit(":", 1)[1].split("/", 1)[0]
    database = url.rsplit("/", 1)[1]
    http = _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("N8N_")}
    env.pop("NODE_ENV", None)
    env.update(
        N8N_USER_FOLDER=str(tmp_path_factory.mktemp("n8n-user")),
        N8N_CUSTOM_EXTENSIONS=str(n8n_package),
        N8N_ENCRYPTION_KEY="practiceflow-proof-only",
        DB_TYPE="postgresdb",
        DB_POSTGRESDB_HOST="127.0.0.1",
        DB_POSTGRESDB_PORT=port,
        DB_POSTGRESDB_DATABASE=database,
        DB_POSTGRESDB_USER="postgres",
        DB_POSTGRESDB_PASSWORD="",
        N8N_LISTEN_ADDRESS="127.0.0.1",
        N8N_PORT=str(http),
        WEBHOOK_URL=f"http://127.0.0.1:{http}/",
        N8N_RUNNERS_BROKER_PORT=str(_free_port()),
        N8N_DIAGNOSTICS_ENABLED="false",
        N8N_VERSION_NOTIFICATIONS_ENABLED="false",
        N8N_TEMPLATES_ENABLED="false",
        N8N_PERSONALIZATION_ENABLED="false",
        N8N_SECURE_COOKIE="false",
        N8N_LOG_LEVEL="info",
    )
    return env


def _n8n(product: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(  # noqa: S603 - fixed arguments
        [str(product / "node_modules" / ".bin" / "n8n"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"n8n {' '.join(args)} failed:\n{output[-6000:]}"
    return output


def _create_client(name: str, marker: str, after: str) -> tuple[dict[str, Any], dict[str, Any]]:
    node = {
        "id": f"{marker}-create",
        "name": "Create Client",
        "type": "CUSTOM.practiceflow",
        "typeVersion": 1,
        "position": [300, 0],
        "parameters": {
            "resource": "client",
            "operation": "create_client",
            "entityName": name,
            "additionalFields": {"entityType": "Company", "externalSystemID": marker},
        },
        "credentials": {"practiceflowApi": CREDENTIAL},
    }
    connection = {after: {"main": [[{"node": "Create Client", "type": "main", "index": 0}]]}}
    return node, connection


def _workflow(ident: str, name: str, start: dict[str, Any], marker: str) -> dict[str, Any]:
    label = "={{ 'n8n proof: ' + JSON.stringify($json).slice(0, 60) }}"
    create, connections = _create_client(label, marker, start["name"])
    return {
        "id": ident,
        "name": name,
        "active": False,
        "nodes": [start, create],
        "connections": connections,
        "settings": {"executionOrder": "v1"},
    }


def _lead_workflow(ident: str, name: str, start: dict[str, Any], marker: str) -> dict[str, Any]:
    """Start -> Create Lead named after the event (a lead is not a new client: no loop)."""
    create = {
        "id": f"{marker}-lead",
        "name": "Create Lead",
        "type": "CUSTOM.practiceflow",
        "typeVersion": 1,
        "position": [300, 0],
        "parameters": {
            "resource": "lead",
            "operation": "create_lead",
            "entityType": "Company",
            "entityName": f"={{{{ '{marker}: ' + $json.entityKey }}}}",
        },
        "credentials": {"practiceflowApi": CREDENTIAL},
    }
    connections = {start["name"]: {"main": [[{"node": "Create Lead", "type": "main", "index": 0}]]}}
    return {
        "id": ident,
        "name": name,
        "active": False,
        "nodes": [start, create],
        "connections": connections,
        "settings": {"executionOrder": "v1"},
    }


def _trigger_node(key: str, inputs: dict[str, Any], polling: bool) -> dict[str, Any]:
    node: dict[str, Any] = {
        "id": f"{key}-trigger",
        "name": "Trigger",
        "type": "CUSTOM.practiceflowPollTrigger" if polling else "CUSTOM.practiceflowTrigger",
        "typeVersion": 1,
        "position": [0, 0],
        "parameters": {"trigger": key, **inputs},
        "credentials": {"practiceflowApi": CREDENTIAL},
    }
    if polling:
        node["parameters"]["pollTimes"] = {"item": [{"mode": "everyMinute"}]}
    else:
        node["webhookId"] = f"pf-proof-{key.replace('_', '-')}"
    return node


def _clients(sandbox: SandboxHandle, marker: str) -> list[dict[str, Any]]:
    rows = sandbox.admin("GET", "/_admin/records/entities")
    return [row for row in rows if row.get("externalSystemID") == marker]


@pytest.fixture(scope="module")
def imported(
    n8n_product: Path, n8n_instance: dict[str, str], roomy_sandbox: SandboxHandle, tmp_path_factory
) -> Path:
    """Credentials and workflows imported with n8n's CLI; the trigger workflows published."""
    folder = tmp_path_factory.mktemp("n8n-import")
    client_id, secret = roomy_sandbox.credentials("anz", "rw")
    data = {
        "clientId": client_id,
        "clientSecret": secret,
        "region": "anz",
        "baseUrl": roomy_sandbox.base_url("anz"),
    }
    (folder / "credentials.json").write_text(
        json.dumps([{**CREDENTIAL, "type": "practiceflowApi", "data": data}])
    )
    manual = {
        "id": "start",
        "name": "Start",
        "type": "n8n-nodes-base.manualTrigger",
        "typeVersion": 1,
        "position": [0, 0],
        "parameters": {},
    }
    workflows = [_workflow("pfExecuteCreate", "Create a client", manual, "n8n-execute")]
    bill = roomy_sandbox.admin("GET", "/_admin/records/bills")[0]
    download = {
        "id": "download",
        "name": "Download Bill PDF",
        "type": "CUSTOM.practiceflow",
        "typeVersion": 1,
        "position": [300, 0],
        "parameters": {
            "resource": "bill",
            "operation": "download_bill_pdf",
            "billingID": bill["billingID"],
        },
        "credentials": {"practiceflowApi": CREDENTIAL},
    }
    workflows.append(
        {
            "id": "pfExecuteDownload",
            "name": "Download a bill",
            "active": False,
            "nodes": [manual, download],
            "connections": {
                "Start": {"main": [[{"node": "Download Bill PDF", "type": "main", "index": 0}]]}
            },
            "settings": {"executionOrder": "v1"},
        }
    )
    (folder / "bill.json").write_text(json.dumps(bill))
    for key, inputs in WEBHOOK_TRIGGERS.items():
        workflows.append(
            _workflow(
                f"pfHook{len(workflows)}", key, _trigger_node(key, inputs, False), f"n8n-{key}"
            )
        )
    for key, inputs in POLL_TRIGGERS.items():
        start = _trigger_node(key, inputs, True)
        workflows.append(_lead_workflow(f"pfPoll{len(workflows)}", key, start, f"n8n-{key}"))
    (folder / "workflows.json").write_text(json.dumps(workflows))
    _n8n(n8n_product, n8n_instance, "import:credentials", f"--input={folder / 'credentials.json'}")
    _n8n(n8n_product, n8n_instance, "import:workflow", f"--input={folder / 'workflows.json'}")
    for workflow in workflows[2:]:
        _n8n(n8n_product, n8n_instance, "publish:workflow", f"--id={workflow['id']}")
    return folder


def test_n8n_execute_runs_a_create_against_the_sandbox(
    n8n_product: Path, n8n_instance: dict[str, str], imported: Path, roomy_sandbox: SandboxHandle
):
    output = _n8n(n8n_product, n8n_instance, "execute", "--id=pfExecuteCreate")
    assert '"status": "success"' in output, output[-4000:]
    made = _clients(roomy_sandbox, "n8n-execute")
    assert len(made) == 1
    assert made[0]["entityName"] == "n8n proof: {}"  # a manual start has an empty item


def test_n8n_execute_downloads_a_bill_pdf_as_binary_data(
    n8n_product: Path, n8n_instance: dict[str, str], imported: Path
):
    bill = json.loads((imported / "bill.json").read_text())
    output = _n8n(n8n_product, n8n_instance, "execute", "--id=pfExecuteDownload", "--rawOutput")
    assert '"status": "success"' in output or '"finished": true' in output, output[-4000:]
    name = f"bill-{bill['billingID']}.pdf"
    assert f'"fileName": "{name}"' in output, output[-4000:]
    assert '"mimeType": "application/pdf"' in output, output[-4000:]
    assert '"contentType": "application/pdf"' in output, output[-4000:]


@pytest.fixture(scope="module")
def n8n_running(
    n8n_product: Path, n8n_instance: dict[str, str], imported: Path, roomy_sandbox: SandboxHandle
) -> Iterator[str]:
    """``n8n start`` on 127.0.0.1 until every published webhook trigger has subscribed."""
    log = imported / "n8n-start.log"
    with log.open("w") as out:
        process = subprocess.Popen(  # noqa: S603 - fixed arguments
            [str(n8n_product / "node_modules" / ".bin" / "n8n"), "start"],
            env=n8n_instance,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = n8n_instance["WEBHOOK_URL"].rstrip("/")

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=5) as answer:  # noqa: S310
                return bool(answer.status == 200)
        except OSError:
            return False

    def subscribed() -> bool:
        rows = roomy_sandbox.admin("GET", "/_admin/records/subscriptions")
        urls = {row["url"] for row in rows if str(row.get("url", "")).startswith(base)}
        return len(urls) >= len(WEBHOOK_TRIGGERS)

    try:
        _wait("n8n to answer /healthz", healthy, 240, log)
        _wait("every webhook trigger to subscribe", subscribed, 180, log)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _api(sandbox: SandboxHandle, method: str, path: str, body: Any = None) -> Any:
    client_id, secret = sandbox.credentials("anz", "rw")
    request = urllib.request.Request(  # noqa: S310 - the sandbox on 127.0.0.1
        sandbox.base_url("anz") + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "X-SVC-Auth-ID": client_id,
            "X-SVC-Auth-Key": secret,
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        return json.loads(answer.read() or b"null")


def test_every_webhook_trigger_and_a_poll_trigger_fire_under_n8n_start(
    n8n_running: str, roomy_sandbox: SandboxHandle, imported: Path
):
    log = imported / "n8n-start.log"
    sandbox = roomy_sandbox
    client = next(
        row
        for row in sandbox.admin("GET", "/_admin/records/entities")
        if row.get("status") == "Active"
    )
    # Deliveries: a proposal accepted (proposal_accepted and any_webhook_event), an eForm
    # submitted, an onboarding completed.
    proposal = next(
        row
        for row in sandbox.admin("GET", "/_admin/records/proposals")
        if row.get("status") not in ("Accepted", "Renewed")
    )
    sandbox.admin("POST", f"/_admin/proposals/{proposal['proposalKey']}/accept")
    sent = _api(
        sandbox,
        "POST",
        "/api/v1/eforms/send",
        {"templateId": 101, "entityKey": client["entityKey"], "mute": True},
    )
    sandbox.admin("POST", f"/_admin/eforms/{sent['formKey']}/submit")
    job = _api(
        sandbox,
        "POST",
        "/api/v1/onboardings/create",
        {
            "sendToRecipient": False,
            "recipient": {"name": "Proof Recipient", "email": "proof@example.com"},
            "clients": [{"entityKey": client["entityKey"]}],
        },
    )
    sandbox.admin("POST", f"/_admin/onboardings/{job['onboardingKey']}/complete")
    for key in WEBHOOK_TRIGGERS:
        made = _wait(
            f"{key} to create its client", lambda k=key: _clients(sandbox, f"n8n-{k}"), 120, log
        )
        assert len(made) == 1, (key, made)
        assert made[0]["entityName"].startswith('n8n proof: {"'), made[0]  # the event's fields
    # The poll trigger: its first poll (at activation) took the list as the baseline; a
    # client created now is fired by a later poll (n8n polls at most once a minute).
    polled_client = sandbox.admin(
        "POST", "/_admin/entities", {"entityName": "Polled Into n8n Ltd", "entityType": "Company"}
    )

    def polled() -> list[str]:
        rows = sandbox.admin("GET", "/_admin/records/leads")
        names = [str(row.get("entityName")) for row in rows]
        return [name for name in names if name.startswith("n8n-new_client: ")]

    names = _wait(
        "new_client's poll to fire for the new client",
        lambda: [n for n in polled() if n.endswith(polled_client["entityKey"])],
        200,
        log,
    )
    assert names == [f"n8n-new_client: {polled_client['entityKey']}"]
    # Every new client since the baseline fired once: the polled one and the four that the
    # webhook workflows created; nothing twice.
    time.sleep(70)  # one more poll: it must fire nothing it already fired
    fired = polled()
    assert len(fired) == len(set(fired)), fired
    assert len(fired) == 1 + len(WEBHOOK_TRIGGERS), fired
