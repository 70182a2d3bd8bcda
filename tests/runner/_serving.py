"""``practiceflow serve`` as a real subprocess, for the restart tests (issue 24)."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from practiceflow.api import Client
from practiceflow.state import StateStore, open_store
from practiceflow.testing import SandboxHandle
from runner._support import CLI, cli_env

#: Generous bound against a hang; never a speed assertion.
#: A webhook recipe on one client's accepted proposals (``.format(entity=KEY)``).
ACCEPTED = """\
name: accepted
trigger:
  use: proposal_accepted
  with:
    entityKey: {entity}
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{{{ trigger.entityKey }}}}"
"""
#: A recipe that writes each submitted eForm to a file (``.format(out=PATH)``).
FORMS = """\
name: forms
trigger:
  use: eform_submitted
steps:
  - id: save
    use: write_jsonl
    with:
      path: "{out}"
      record:
        formKey: "{{{{ trigger.formKey | default(None) }}}}"
"""

PATIENCE = 90.0


def free_port() -> int:
    """A port free on 127.0.0.1 just now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(what: str, check: Callable[[], Any], timeout: float = PATIENCE) -> Any:
    """Poll ``check`` until it returns something true; fail naming ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def in_store(state: Path, read: Callable[[StateStore], Any]) -> Any:
    """Read the state store once (a fresh handle, as another process would)."""
    with open_store(str(state)) as store:
        return read(store)


class Serve:
    """One ``practiceflow serve`` configuration, started and stopped as often as wanted."""

    def __init__(self, sandbox: SandboxHandle, folder: Path, recipes: list[Path], **env: str):
        self.state = folder / "state.db"
        self.log = folder / "serve.log"
        self.recipes = recipes
        self.port = free_port()
        self.env = cli_env(
            sandbox,
            PRACTICEFLOW_STATE=str(self.state),
            PRACTICEFLOW_LISTEN=f"127.0.0.1:{self.port}",
            PRACTICEFLOW_PUBLIC_URL="local",
            **env,
        )
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str) -> subprocess.Popen[bytes]:
        command = [*CLI, "serve", *map(str, self.recipes), "--no-console", *extra]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(  # noqa: S603 - our own CLI
                command, env=self.env, stdout=subprocess.DEVNULL, stderr=log
            )
        return self.process

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        code = self.process.wait(timeout=PATIENCE)
        self.process = None
        return code

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def errors(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""


@contextmanager
def serving(
    sandbox: SandboxHandle, folder: Path, recipes: list[Path], **env: str
) -> Iterator[Serve]:
    """A :class:`Serve`, killed at the end if still running."""
    serve = Serve(sandbox, folder, recipes, **env)
    try:
        yield serve
    finally:
        if serve.process is not None and serve.process.poll() is None:
            serve.process.kill()
            serve.process.wait()


def api_client(sandbox: SandboxHandle) -> Client:
    """A read-write client of the sandbox's ANZ practice."""
    client_id, secret = sandbox.credentials("anz", "rw")
    return Client(client_id, secret, base_url=sandbox.base_url("anz"), timeout=10)


def new_proposal(client: Client, entity_key: str) -> str:
    """Create a draft proposal for a client; its key."""
    made = client.post(
        "/api/v1/proposals", json={"entityKey": entity_key, "services": [{"serviceID": 400}]}
    )
    return str(made["proposalKey"])
