"""The path of one webhook event: how many source files it crosses, and how many calls.

``serve`` is composed as the CLI composes it, through :func:`practiceflow.service.serve`,
against a sandbox in its own process (so that nothing of the sandbox is traced). One
client is created behind the API's back; the sandbox delivers the signed
``client.created`` to the receiver, and the recipe's first step writes a bill.

Every thread of this process is profiled (``threading.setprofile``) from the moment the
receiver is handed the delivery to the moment the journal has recorded the outcome of the
first write; the background loops that are not the event's path (heartbeat, sweeps,
pollers, the request log's writer) are left out by thread name. Two figures:

* **files**: distinct files of ``src/practiceflow`` that call a function of another file
  of ``src/practiceflow`` in that window (the layers the event crosses);
* **calls**: calls of functions of ``src/practiceflow`` in that window.

Both are deterministic (they count code, not time). Target: at most 15 files.

Run: ``python bench/event_path.py [--show]`` (``--show`` lists the files and their edges).
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import requests

import practiceflow
from practiceflow.api import Client, RateLimits
from practiceflow.manifest import load_modules
from practiceflow.runner import validate_recipe
from practiceflow.service import ServeOptions, serve
from practiceflow.state import open_store

SRC = str(Path(practiceflow.__file__).resolve().parent) + "/"
TOKEN = "bench-admin-token"
TARGET = 15
RECIPE = """\
name: bench event path
trigger:
  use: any_webhook_event
  mode: webhook
  with: {event: client.created}
steps:
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.body.data.entityKey }}"
      lineItems:
        - {amount: 100, taxPercent: 10, narration: Onboarding fee}
"""
LIMITS = RateLimits(per_minute=1_000_000, per_hour=10_000_000, per_day=100_000_000)
#: Threads that run beside the event's path, not on it.
BESIDE = ("pf-heartbeat", "pf-gap-sweep", "pf-silence", "pf-poll-", "pf-request-log", "pf-ops")
#: Where the window opens (the receiver's endpoint) and closes (the journal's outcome).
OPENS = (SRC + "triggers/webhook_receiver.py", "_deliver")
CLOSES = (SRC + "runner/journal.py", "outcome")


@dataclass
class EventPath:
    """What the profiler saw between :data:`OPENS` and the return of :data:`CLOSES`."""

    calls: int = 0
    edges: Counter[tuple[str, str]] = field(default_factory=Counter)
    open: bool = False
    closed: threading.Event = field(default_factory=threading.Event)

    @property
    def files(self) -> list[str]:
        """The files that call into another file, by name under ``src/practiceflow``."""
        return sorted({caller for caller, _ in self.edges})

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        """The profile function (``sys.setprofile``): counts calls inside the window."""
        del arg
        if self.closed.is_set() or event not in ("call", "return"):
            return
        code = frame.f_code
        where = code.co_filename
        if not self.open:
            if event == "call" and (where, code.co_name) == OPENS:
                self.open = True
            else:
                return
        if threading.current_thread().name.startswith(BESIDE):
            return
        if event == "return":
            if (where, code.co_name) == CLOSES:
                self.closed.set()
            return
        if not where.startswith(SRC):
            return
        self.calls += 1
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(SRC):
            caller = caller.f_back  # through a library (starlette, requests) back to ours
        if caller is not None and caller.f_code.co_filename != where:
            self.edges[(caller.f_code.co_filename[len(SRC) :], where[len(SRC) :])] += 1


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _admin(url: str, method: str, path: str, body: object = None) -> Any:
    answer = requests.request(
        method, url + path, json=body, headers={"X-Admin-Token": TOKEN}, timeout=10
    )
    answer.raise_for_status()
    return answer.json()


def _start_sandbox() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    command = [sys.executable, "-m", "practiceflow", "sandbox", "--port", str(port)]
    command += ["--admin-token", TOKEN, "--rate-per-minute", "1000000"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            requests.get(url + "/_admin", headers={"X-Admin-Token": TOKEN}, timeout=1)
            return process, url
        except requests.RequestException:
            time.sleep(0.1)
    process.kill()
    message = "the sandbox did not start within 30 s"
    raise RuntimeError(message)


def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    message = f"timed out waiting for {what}"
    raise RuntimeError(message)


def trace_event_path() -> EventPath:
    """Serve one recipe, deliver one event, and trace its path to the first write.

    Returns:
        What the profiler saw.

    Raises:
        RuntimeError: the sandbox did not start, or the event did not reach its write.
    """
    process, url = _start_sandbox()
    path = EventPath()
    try:
        info = _admin(url, "GET", "/_admin")
        rw = info["credentials"]["anz"]["rw"]
        client_id, secret = rw["clientId"], rw["secret"]
        with (
            Client(client_id, secret, base_url=url + "/anz", limits=LIMITS) as client,
            tempfile.TemporaryDirectory() as folder,
        ):
            recipe_file = Path(folder) / "bench.yaml"
            recipe_file.write_text(RECIPE, encoding="utf-8")
            recipe = validate_recipe(recipe_file, registry=load_modules(), can_write=True)
            with open_store(str(Path(folder) / "state.db")) as store:
                options = ServeOptions(public_url="local", idle=600.0, settle_every=600.0)
                threading.setprofile(path.profile)
                try:
                    service = serve([recipe], store, client, client_id, options)
                    thread = threading.Thread(target=service.run, name="pf-serve", daemon=True)
                    thread.start()
                    try:
                        _wait(
                            lambda: _admin(url, "GET", "/_admin/records/subscriptions"),
                            60,
                            "serve to subscribe",
                        )
                        body = {"entityName": "Path", "entityType": "CO", "clientStatus": "Active"}
                        _admin(url, "POST", "/_admin/entities", body)
                        if not path.closed.wait(60):
                            message = "the event did not reach its first journaled write"
                            raise RuntimeError(message)
                    finally:
                        service.stop.set()
                        service.wake.set()
                        thread.join(timeout=60)
                finally:
                    threading.setprofile(None)  # type: ignore[arg-type]
    finally:
        process.terminate()
        process.wait(timeout=10)
    return path


def main() -> None:
    """Print the files and calls of one event's path to its first journaled write."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list the files and their edges")
    options = parser.parse_args()
    path = trace_event_path()
    if options.show:
        for caller in path.files:
            callees = sorted({callee for one, callee in path.edges if one == caller})
            print(f"{caller} -> {', '.join(callees)}")
    print(
        f"one webhook event -> its first journaled write: {len(path.files)} files that call "
        f"into another, {path.calls} calls"
    )
    result = {
        "name": "serve: files one webhook event crosses to its first journaled write",
        "figure": round(len(path.files) / TARGET, 3),
        "unit": f"x {TARGET} files",
        "baseline": f"{TARGET} files",
        "target": f"<= 1.0 (at most {TARGET} files)",
        "measured": f"{len(path.files)} files, {path.calls} calls",
        "ok": len(path.files) <= TARGET,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
