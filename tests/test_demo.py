"""``make demo`` runs end to end, says what it did, and leaves no process behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def _children(pid: int) -> list[str]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        if re.search(rf"^PPid:\s+{pid}$", text, re.MULTILINE):
            found.append(status.parent.name)
    return found


def test_demo_runs_the_webhook_recipe_then_the_polling_fallback_then_the_console(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    env["COLUMNS"] = "200"
    # Children this test process had before (a multiprocessing resource tracker another
    # test in the same worker started) are not the demo's.
    before = set(_children(os.getpid()))
    done = subprocess.run(
        [sys.executable, "-m", "practiceflow.demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "signed delivery received, verified and stored" in out
    assert re.search(r"accepted proposal -> first bill -> onboarding eForm: run \w+ succeeded", out)
    assert "polling caught up: 2 new client event(s)" in out
    assert len(re.findall(r"new client -> integration ids -> JSONL: run \w+ succeeded", out)) == 2
    # Not at a terminal: the console stops with the demo, so no address is printed as live.
    assert "run console on http" not in out
    assert "stops with the demo" in out
    assert out.index("stops with the demo") < out.index("run console stopped")
    assert "screenshot of the run page:" in out or "no screenshot:" in out
    assert "sandbox and receiver stopped" in out
    assert set(_children(os.getpid())) - before == set()


@pytest.mark.timeout(600)  # the whole demo, on a busy machine; against a hang only
def test_at_a_terminal_the_demo_prints_the_console_url_only_while_it_answers(
    tmp_path: Path,
) -> None:
    """At a terminal the console stays up until Enter: the URL printed answers until then,
    and once "run console stopped" is printed it no longer does."""
    import pty
    import select
    import time
    import urllib.error
    import urllib.request

    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    env.update(COLUMNS="200", NO_COLOR="1")
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "practiceflow.demo"],
        cwd=tmp_path,
        env=env,
        stdin=follower,
        stdout=follower,
        stderr=follower,  # input() at a terminal writes its prompt there
    )
    os.close(follower)
    said = b""

    def read_until(marker: bytes) -> None:
        nonlocal said
        deadline = time.monotonic() + 500  # against a hang only
        while marker not in said:
            assert time.monotonic() < deadline, said.decode(errors="replace")
            ready, _, _ = select.select([leader], [], [], 1.0)
            if ready:
                try:
                    said += os.read(leader, 65536)
                except OSError:  # the demo ended
                    break

    try:
        read_until(b"press Enter")
        found = re.search(rb"run console on \S*?(http://127\.0\.0\.1:\d+/console/)", said)
        assert found is not None, said.decode(errors="replace")
        url = found.group(1).decode()
        with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - 127.0.0.1
            assert answer.status == 200  # printed while it answers
        os.write(leader, b"\n")
        read_until(b"sandbox and receiver stopped")
        assert process.wait(timeout=60) == 0
        assert b"run console stopped" in said
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(url, timeout=5)  # noqa: S310 - stopped: no answer
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
