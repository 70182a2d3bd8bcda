"""Helpers of the MCP tests: the server's environment, sandbox facts, leak checks."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_types as types

from practiceflow.testing import SandboxHandle

REPO = Path(__file__).resolve().parents[2]
#: The command that starts the server, as a desktop assistant would.
PRACTICEFLOW = [sys.executable, "-m", "practiceflow"]
#: The same, killing itself at a journal point given next (``tests/kill_at.py``).
KILL_AT = [sys.executable, str(REPO / "tests" / "kill_at.py")]

#: Personal values a test types into a write; none may reach the assistant, a log line or
#: the journal's step entries.
PERSONAL = {
    "entityName": "Zelda",
    "entitySurname": "Quartermaine",
    "email": "zelda.quartermaine@example.org",
    "mobile": "+61 400 123 987",
}


def server_env(sandbox: SandboxHandle, state: Path, kind: str = "rw") -> dict[str, str]:
    """Environment of a ``practiceflow mcp`` subprocess talking to the sandbox."""
    client_id, secret = sandbox.credentials("anz", kind)  # type: ignore[arg-type]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    env.update(
        PRACTICEFLOW_CLIENT_ID=client_id,
        PRACTICEFLOW_CLIENT_SECRET=secret,
        PRACTICEFLOW_BASE_URL=sandbox.base_url("anz"),
        PRACTICEFLOW_STATE=str(state),
        PYTHONPATH=str(REPO / "src"),
    )
    return env


def active_client(sandbox: SandboxHandle) -> str:
    """The entityKey of an Active client of the sandbox's ANZ practice."""
    practice = sandbox.state.practice("anz")
    return next(entity.key for entity in practice.order if entity.status == "Active")


def bill_input(sandbox: SandboxHandle) -> dict[str, Any]:
    """A valid create_bill input for an Active client of the sandbox's ANZ practice."""
    return {
        "entityKey": active_client(sandbox),
        "billDetails": "Onboarding",
        "lineItems": [{"amount": 300, "taxPercent": 10, "narration": "Onboarding fee"}],
    }


def bill_count(sandbox: SandboxHandle) -> int:
    """How many bills the sandbox's ANZ practice holds."""
    return len(sandbox.state.practice("anz").bills)


def api_requests(sandbox: SandboxHandle, method: str | None = None) -> list[dict[str, Any]]:
    """The API requests the sandbox received (``/api/v1/...``), optionally of one method."""
    rows: list[dict[str, Any]] = sandbox.admin("GET", "/_admin/requests")
    return [row for row in rows if method is None or row.get("method") == method]


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def leaks(text: str, values: dict[str, str] | None = None) -> list[str]:
    """The personal values (of ``PERSONAL`` unless given) found in ``text``."""
    chosen = PERSONAL if values is None else values
    return [value for value in chosen.values() if value in text]


def as_text(payload: Any) -> str:
    """Any tool result or journal entry as one searchable string."""
    return json.dumps(payload, default=str, ensure_ascii=False)


def result_text(result: types.CallToolResult) -> str:
    """The text blocks of a tool result, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def user_code(notices: str, write_id: str) -> str:
    """The confirmation code the server printed for a write (``notices``: what it wrote on
    its standard error), as the user reads it there."""
    found = re.findall(
        rf"\(write {write_id[:8]}\)\. If you agree, give the assistant this "
        r"code: (\d{6})",
        notices,
    )
    assert found, f"no code printed for write {write_id}"
    return str(found[-1])


def confirmation(preview: types.CallToolResult, notices: str) -> dict[str, str]:
    """The arguments of ``confirm_write`` for a preview, with the code the user reads."""
    shown = preview.structured_content or {}
    return {
        "confirm_token": shown["confirm_token"],
        "user_code": user_code(notices, shown["write_id"]),
    }


@contextmanager
def http_server(
    sandbox: SandboxHandle,
    tmp_path: Path,
    *flags: str,
    state: str | None = None,
    log: str = "server.log",
    env: dict[str, str] | None = None,
    kill_at: str | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``practiceflow mcp --transport http`` in a subprocess over the store ``state``
    (``tmp_path/state.db`` by default); yields its MCP URL and its process (stopped on
    exit unless it died). Its standard error goes to ``tmp_path/log``. ``kill_at``: a
    journal point where the process kills itself (``tests/kill_at.py``)."""
    port = free_port()
    args = ["mcp", "--transport", "http", "--listen", f"127.0.0.1:{port}", *flags]
    store = state or str(tmp_path / "state.db")
    with (tmp_path / log).open("a", encoding="utf-8") as errlog:
        command = PRACTICEFLOW if kill_at is None else [*KILL_AT, kill_at]
        process = subprocess.Popen(  # noqa: S603 - our own CLI, fixed arguments
            [*command, *args],
            env={**server_env(sandbox, Path(store)), **(env or {}), "PRACTICEFLOW_STATE": store},
            cwd=tmp_path,
            stdout=errlog,
            stderr=errlog,
        )
        try:
            deadline = time.monotonic() + 120  # generous: start-up on a busy machine
            while not _listening(port):
                assert process.poll() is None, (tmp_path / log).read_text()
                assert time.monotonic() < deadline, "the MCP server did not start listening"
                time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp", process
        finally:
            if process.poll() is None:
                process.terminate()
            process.wait(timeout=60)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
