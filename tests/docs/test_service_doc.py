"""docs/architecture.md, "Serving from your own program": the example runs as written, in a
folder of its own, and prints what the page says it prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "architecture.md"
EXAMPLE = re.compile(
    r'<!-- test: runs and prints "(?P<out>[^"]+)" -->\n```python\n(?P<code>.*?)```', re.S
)


def test_the_embedding_example_serves_one_event_to_its_first_write(tmp_path: Path) -> None:
    (example,) = EXAMPLE.finditer(PAGE.read_text(encoding="utf-8"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    env["PYTHONPATH"] = str(REPO / "src")
    done = subprocess.run(  # noqa: S603 - our own interpreter, the page's code
        [sys.executable, "-c", example["code"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines() == [example["out"]]
    assert (tmp_path / "state.db").exists()
