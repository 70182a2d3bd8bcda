"""A state file in a read-only place is a clear configuration error (issue 35): exit 2
naming the file and the way out, never a traceback nor "a bug" (exit 70). The place is
made read-only by a read-only bind mount in a mount namespace of the command's own
(``unshare -m``, which needs root: a root process writes through file permissions)."""

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
    reason="needs root and unshare for a read-only bind mount",
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


def _in_read_only(folder: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """Run ``practiceflow COMMAND`` with ``folder`` mounted read-only for it alone."""
    cli = " ".join([sys.executable, "-m", "practiceflow", *command])
    script = f"mount --bind -o ro {folder} {folder} && exec {cli}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")},
        "PYTHONPATH": str(REPO / "src"),
        "PRACTICEFLOW_CLIENT_ID": "id",
        "PRACTICEFLOW_CLIENT_SECRET": "secret",
    }
    return subprocess.run(  # noqa: S603 - our own CLI under unshare
        ["unshare", "-m", "sh", "-c", script],  # noqa: S607 - found on PATH above
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


#: (command, where the state file is): the store's three refusals, and serve's lease file.
CASES = [
    ("runs list", "new file"),
    ("runs list", "existing file"),
    ("runs list", "new folder"),
    ("serve", "existing file"),
]


@pytest.mark.parametrize(("command", "where"), CASES)
def test_a_state_file_in_a_read_only_place_is_exit_2_naming_it(
    tmp_path: Path, command: str, where: str
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    state = folder / "state.db"
    if where == "existing file":
        made = subprocess.run(  # noqa: S603 - our own CLI
            [sys.executable, "-m", "practiceflow", "runs", "list", "--state", str(state)],
            env={**os.environ, "PYTHONPATH": str(REPO / "src")},
            capture_output=True,
            check=False,
        )
        assert made.returncode == 0, made.stderr
    elif where == "new folder":
        state = folder / "sub" / "state.db"
    recipe = tmp_path / "changed.yaml"
    recipe.write_text(RECIPE, encoding="utf-8")
    args = command.split()
    if command == "serve":
        args += [str(recipe), "--no-console"]
    done = _in_read_only(folder, *args, "--state", str(state))
    assert done.returncode == 2, done.stderr
    assert str(state) in done.stderr
    assert "writ" in done.stderr  # "cannot be written", "a folder this process can write"
    assert "Traceback" not in done.stderr
