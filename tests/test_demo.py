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
    assert _children(os.getpid()) == []
