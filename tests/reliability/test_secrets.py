"""Secrets: every CLI command's main path, and the demo, run with a known client secret
(``PRACTICEFLOW_CLIENT_SECRET``); stdout, stderr, log lines, the state database and the run
history are searched for it (and for every webhook secret the sandbox handed out, outside
the database's subscriptions table, which must hold them to verify deliveries): zero hits.

Not run: ``worker`` (needs PostgreSQL; the fleet tests cover it) and ``sandbox``'s own
output (it prints its own demo credentials on purpose; it is started and stopped only).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from practiceflow.testing import running_sandbox
from reliability._support import REPO, cli_env, free_port, practiceflow, wait_until

pytestmark = pytest.mark.integration

SECRET = "pf-known-secret-7f3a9c1e5b"
RECIPE = REPO / "recipes" / "proposal_to_bill_and_eform.yaml"
POLL_RECIPE = REPO / "recipes" / "new_client_integrations_to_jsonl.yaml"


def _run(args: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> str:
    done = subprocess.run(  # noqa: S603 - our own CLI
        args,
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return f"$ {' '.join(args[2:])} -> {done.returncode}\n{done.stdout}\n{done.stderr}"


def test_no_command_and_not_the_demo_ever_shows_the_secret(tmp_path: Path):
    with running_sandbox(client_secret=SECRET, webhook_retry_scale=0.05) as sandbox:
        fast = {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}
        sandbox.admin("POST", "/_admin/config", {"rateLimits": fast})
        assert sandbox.credentials("anz", "rw")[1] == SECRET
        state = tmp_path / "state.db"
        env = cli_env(sandbox, PRACTICEFLOW_STATE=str(state))
        (tmp_path / "out").mkdir()
        # Commands that leave the state store alone run side by side (the suite's time);
        # those that write it run one after the other.
        alone: list[tuple[list[str], str | None]] = [
            (practiceflow("--help"), None),
            (practiceflow("auth", "check"), None),
            (practiceflow("auth", "check", "--json"), None),
            (practiceflow("modules", "list"), None),
            (practiceflow("modules", "show", "create_bill"), None),
            (practiceflow("modules", "validate"), None),
            (practiceflow("action", "list_entity_types", "--input", "-", "--json"), "{}"),
            (practiceflow("export", "openapi", "--out", str(tmp_path / "oa")), None),
            (practiceflow("plan", str(RECIPE)), None),
            (practiceflow("run", str(RECIPE), "--dry-run"), None),
            (practiceflow("triggers", "list"), None),
        ]
        with ThreadPoolExecutor(3) as pool:
            side = [pool.submit(_run, args, env, tmp_path, stdin) for args, stdin in alone]
            outputs = [
                _run(practiceflow("db", "migrate", "--state", str(state)), env, tmp_path),
                _run(practiceflow("run", str(POLL_RECIPE), "--once", "-v"), env, tmp_path),
                _run(
                    practiceflow("triggers", "poll", "new_client", "--once", "--state", str(state)),
                    env,
                    tmp_path,
                ),
            ]
            outputs += [future.result() for future in side]
        # serve: receive a webhook, run the recipe (a bill and an eForm), stop on SIGTERM.
        serve_env = {
            **env,
            "PRACTICEFLOW_PUBLIC_URL": "local",
            "PRACTICEFLOW_LISTEN": f"127.0.0.1:{free_port()}",
        }
        serve = subprocess.Popen(  # noqa: S603 - our own CLI
            practiceflow("serve", str(RECIPE), "-v", "--log-json"),
            env=serve_env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until(lambda: sandbox.admin("GET", "/_admin/records/subscriptions"), 90, "sub")
            proposal = sandbox.admin("GET", "/_admin/records/proposals")[0]
            sandbox.admin("POST", f"/_admin/proposals/{proposal['proposalKey']}/accept")
            wait_until(lambda: sandbox.admin("GET", "/_admin/records/bills"), 90, "a bill")
            time.sleep(0.5)
        finally:
            serve.send_signal(signal.SIGTERM)
            out, err = serve.communicate(timeout=60)
        outputs.append(f"$ serve\n{out}\n{err}")
        webhook_secrets = [
            row["secret"] for row in sandbox.state.practice("anz").subscriptions.values()
        ]
        outputs += [
            _run(practiceflow("runs", "list", "--json"), env, tmp_path),
            _run(practiceflow("runs", "list"), env, tmp_path),
            _run(practiceflow("triggers", "unsubscribe", "proposal_accepted"), env, tmp_path),
        ]
        runs = subprocess.run(  # noqa: S603 - our own CLI
            practiceflow("runs", "list", "--json"),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        with ThreadPoolExecutor(3) as pool:
            shows = [
                pool.submit(_run, practiceflow("runs", "show", run["run_id"]), env, tmp_path)
                for run in json.loads(runs)
            ]
            outputs += [future.result() for future in shows]
    demo = subprocess.run(
        [sys.executable, "-m", "practiceflow.demo"],
        env=cli_env(sandbox),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    outputs.append(f"$ demo -> {demo.returncode}\n{demo.stdout}\n{demo.stderr}")
    text = "\n".join(outputs)
    commands = [line for line in text.splitlines() if line.startswith("$ ")]
    assert all(line.endswith("-> 0") for line in commands if "->" in line), commands
    assert "bill" in text
    assert "-> 0" in text
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert SECRET not in text
    assert "sandbox-anz-rw-secret" not in demo.stdout + demo.stderr
    for secret in webhook_secrets:
        assert secret not in text

    # The state database and its run history (journal, requests, outputs, errors).
    db = sqlite3.connect(state)
    try:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f"SELECT * FROM {table}"):  # noqa: S608 - our own table names
                assert SECRET not in repr(row), table
                if table != "subscriptions":
                    assert not any(secret in repr(row) for secret in webhook_secrets), table
    finally:
        db.close()
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix not in (".db", ".db-wal", ".db-shm"):
            assert SECRET.encode() not in path.read_bytes(), path
