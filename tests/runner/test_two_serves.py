"""Two processes, one store (issue 24): a second ``serve`` on the same SQLite state file
refuses with a message naming the first (pid, console address); the lease dies with its
process, so a restart after ``kill -9`` is never blocked. Real subprocesses."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from practiceflow.testing import SandboxHandle
from runner._support import CLI, cli_env

pytestmark = pytest.mark.integration

RECIPE = """\
name: changed client
trigger:
  use: updated_client
  mode: poll
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(recipe: Path, env: dict[str, str], port: int) -> subprocess.Popen[str]:
    command = [*CLI, "serve", str(recipe), "--console-listen", f"127.0.0.1:{port}"]
    return subprocess.Popen(  # noqa: S603 - our own CLI
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def _wait_console(port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/console/api/recipes", timeout=5):
                return
        except OSError:
            assert time.monotonic() < deadline, "serve did not start its console"
            time.sleep(0.1)


def test_a_second_serve_refuses_naming_the_first_and_a_killed_one_leaves_no_lease(
    fast_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    recipe = tmp_path / "changed.yaml"
    recipe.write_text(RECIPE, encoding="utf-8")
    env = cli_env(fast_sandbox, PRACTICEFLOW_STATE=str(tmp_path / "state.db"))
    first_port, second_port = _free_port(), _free_port()
    first = _serve(recipe, env, first_port)
    started: list[subprocess.Popen[str]] = [first]
    try:
        _wait_console(first_port, first)
        second = _serve(recipe, env, second_port)
        started.append(second)
        code = second.wait(timeout=60)
        message = second.stderr.read() if second.stderr else ""
        assert code == 2, message
        assert f"pid {first.pid}" in message
        assert f"http://127.0.0.1:{first_port}/console/" in message
        assert str(tmp_path / "state.db") in message

        os.kill(first.pid, signal.SIGKILL)  # no clean-up: the kernel drops the lock
        first.wait(timeout=30)
        third = _serve(recipe, env, second_port)
        started.append(third)
        _wait_console(second_port, third)
        third.send_signal(signal.SIGTERM)
        assert third.wait(timeout=60) == 0
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stderr:
                process.stderr.close()
