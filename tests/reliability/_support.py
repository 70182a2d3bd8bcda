"""Helpers of the reliability suite: the ``practiceflow serve`` subprocess, the recipes it
runs, and counts taken from the sandbox's own records (never from practiceflow's).

Numbers are scaled for ``make test`` (2 cores, the whole suite under 4 minutes); set
``PRACTICEFLOW_RELIABILITY_FULL=1`` for the sizes the issue names (5,000 events ...).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from practiceflow.testing import SandboxHandle

HERE = Path(__file__).parent
REPO = HERE.parent.parent
#: The full sizes of issue 10 when set; scaled-down sizes otherwise.
FULL = os.environ.get("PRACTICEFLOW_RELIABILITY_FULL") == "1"
#: Rate limits far above what the suite sends (budgets have their own tests and bench).
FAST = {"perMinute": 1_000_000, "perHour": 10_000_000, "perDay": 100_000_000}

#: Two writes per event: bill the new client, then add a contact to it. The trigger is
#: any_webhook_event on client.created, so each event is one admin-created entity.
TWO_STEP_RECIPE = """\
name: reliability two writes
trigger:
  use: any_webhook_event
  mode: webhook
  with: {event: client.created}
steps:
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ (trigger.body.data | default(trigger.body)).entityKey }}"
      billDetails: "reliability {{ (trigger.body.data | default(trigger.body)).entityName }}"
      lineItems:
        - {amount: 100, taxPercent: 10, narration: Onboarding fee}
  - id: contact
    use: create_contact
    with:
      entityKey: "{{ (trigger.body.data | default(trigger.body)).entityKey }}"
      contact:
        firstName: Rel
        lastName: "Bill {{ steps.bill.billingID }}"
        email: rel@example.com
"""


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (for a receiver that must keep its URL across restarts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli_env(sandbox: SandboxHandle, **extra: str) -> dict[str, str]:
    """Environment of a ``practiceflow`` subprocess talking to the sandbox's ANZ practice."""
    client_id, secret = sandbox.credentials("anz", "rw")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    env.update(
        PRACTICEFLOW_CLIENT_ID=client_id,
        PRACTICEFLOW_CLIENT_SECRET=secret,
        PRACTICEFLOW_BASE_URL=sandbox.base_url("anz"),
        PYTHONPATH=str(REPO / "src"),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def practiceflow(*args: str) -> list[str]:
    """The command line of the ``practiceflow`` CLI in this interpreter."""
    return [sys.executable, "-m", "practiceflow", *args]


class Serve:
    """``practiceflow serve`` as a subprocess, with its output kept in files."""

    def __init__(self, recipe: Path, state: Path, env: dict[str, str], logs: Path) -> None:
        self.recipe = recipe
        self.state = state
        self.env = env
        self.logs = logs
        #: The journal point at which the next start kills itself (``tests/kill_at.py``).
        self.kill_at: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> Serve:
        """Start a new process (its stdout and stderr are appended to ``logs``)."""
        self.starts += 1
        out = (self.logs / f"serve-{self.starts}.out").open("wb")
        err = (self.logs / f"serve-{self.starts}.err").open("wb")
        command = practiceflow("serve", str(self.recipe), "--state", str(self.state))
        if self.kill_at is not None:
            kill_at = Path(__file__).resolve().parents[1] / "kill_at.py"
            command = [sys.executable, str(kill_at), self.kill_at, *command[3:]]
        self.proc = subprocess.Popen(  # noqa: S603 - our own CLI
            command,
            env=self.env,
            stdout=out,
            stderr=err,
        )
        out.close()
        err.close()
        return self

    def kill9(self) -> int:
        """``kill -9`` the process; returns its exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait(timeout=10)

    def stop(self) -> int:
        """SIGTERM (graceful stop), then wait; returns the exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                raise
        return int(self.proc.returncode)

    def output(self) -> str:
        """Everything every process of this service printed so far."""
        return "\n".join(
            path.read_text("utf-8", "replace") for path in sorted(self.logs.glob("serve-*"))
        )


def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.05) -> Any:
    """Poll ``check`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


def writes_by_entity(sandbox: SandboxHandle, keys: set[str]) -> tuple[Counter[str], Counter[str]]:
    """Bills and contacts per entity key, counted in the sandbox's own records."""
    bills = Counter(
        row["entityKey"]
        for row in sandbox.admin("GET", "/_admin/records/bills")
        if row.get("entityKey") in keys
    )
    contacts = Counter(
        row["entityKey"]
        for row in sandbox.admin("GET", "/_admin/records/contacts")
        if row.get("entityKey") in keys
    )
    return bills, contacts


def create_clients(sandbox: SandboxHandle, count: int, prefix: str) -> list[str]:
    """Create ``count`` Active clients behind the API's back; each fires client.created."""
    keys = []
    for i in range(count):
        row = sandbox.admin(
            "POST",
            "/_admin/entities",
            {"entityName": f"{prefix} {i}", "entityType": "CO", "clientStatus": "Active"},
        )
        keys.append(row["entityKey"])
    return keys


class InProcessService:
    """``serve`` in this process: receiver (``public_url="local"``), runner, state store.

    Built by :func:`practiceflow.service.serve` as the CLI builds it, with a client
    whose local budget matches the sandbox's raised limits (the CLI's client keeps the
    spec's 60/min default, which would make a 1,000-event burst take half an hour).
    """

    def __init__(
        self,
        sandbox: SandboxHandle,
        recipe: Path,
        state: Path,
        *,
        listen_port: int = 0,
        timeout: float = 5.0,
        idle: float = 0.05,
    ) -> None:
        from practiceflow.api import Client, RateLimits
        from practiceflow.manifest import load_modules
        from practiceflow.runner import validate_recipe
        from practiceflow.service import ServeOptions, serve
        from practiceflow.state import open_store

        client_id, secret = sandbox.credentials("anz", "rw")
        limits = RateLimits(per_minute=1_000_000, per_hour=10_000_000, per_day=100_000_000)
        self.client = Client(
            client_id, secret, base_url=sandbox.base_url("anz"), limits=limits, timeout=timeout
        )
        self.store = open_store(str(state))
        self.practice = client_id
        checked = validate_recipe(recipe, registry=load_modules(), can_write=True)
        options = ServeOptions(
            public_url="local", listen=("127.0.0.1", listen_port), idle=idle, watch_gaps=False
        )
        self.service = serve([checked], self.store, self.client, client_id, options)
        self.intake = self.service.intake
        self.runner = self.service.runners[0]
        self.thread = threading.Thread(target=self.service.run, name="rel-serve", daemon=True)

    def start(self) -> InProcessService:
        """Serve in a background thread."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Graceful stop (what SIGTERM does), then close the client and the store."""
        self.service.stop.set()
        self.service.wake.set()
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "serve did not stop within 60 s"
        self.client.close()
        self.store.close()
