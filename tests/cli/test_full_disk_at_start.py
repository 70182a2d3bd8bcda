"""A full disk at start is a clear configuration error (issue 35): exit 2 naming the file
that cannot be written, never a traceback, "a bug" (exit 70) or a transient exit 4 that
waiting does not cure. The disk is a 2 MB tmpfs filled to the last block, mounted in a
mount namespace of the command's own (``unshare -m``, which needs root). A delivery that
meets a full disk once serving is refused with 503 (tests/reliability/test_store_faults.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare for a tmpfs of its own",
)

RECIPE = """\
name: changed
trigger:
  use: updated_client
  mode: poll
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""

#: (command, the file it names)
CASES = [
    ("serve {recipe} --no-console", "state.db.serve.lock"),
    ("run {recipe} --once", "budget.db"),
    ("runs list", "state.db"),
]


@pytest.mark.parametrize(("command", "named"), CASES)
def test_a_full_disk_at_start_is_exit_2_naming_the_file(
    tmp_path: Path, command: str, named: str
) -> None:
    folder = tmp_path / "disk"
    folder.mkdir()
    recipe = tmp_path / "changed.yaml"
    recipe.write_text(RECIPE, encoding="utf-8")
    state = folder / "state.db"
    cli = f"{sys.executable} -m practiceflow"
    script = (
        f"mount -t tmpfs -o size=2m tmpfs {folder} && "
        f"{cli} runs list --state {state} >/dev/null && "
        f"(dd if=/dev/zero of={folder}/fill bs=4k 2>/dev/null; true) && "
        f"exec {cli} {command.format(recipe=recipe)} --state {state}"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")},
        "PYTHONPATH": str(REPO / "src"),
        "PRACTICEFLOW_CLIENT_ID": "id",
        "PRACTICEFLOW_CLIENT_SECRET": "secret",
        "PRACTICEFLOW_BASE_URL": "http://127.0.0.1:9/anz",
    }
    done = subprocess.run(  # noqa: S603 - our own CLI under unshare
        ["unshare", "-m", "sh", "-c", script],  # noqa: S607 - found on PATH above
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert str(folder / named) in done.stderr
    assert "Traceback" not in done.stderr
    assert "internal error" not in done.stderr
