"""Helpers shared by the runner tests (paths, subprocess environment, the CLI entry)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from practiceflow.testing import SandboxHandle

HERE = Path(__file__).parent
MODULES = HERE / "modules"
RECIPES = HERE / "recipes"
REPO = HERE.parent.parent
#: Generous budgets: the runner tests send many requests; budgets are tested elsewhere.
FAST = {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}


def cli_env(sandbox: SandboxHandle, kind: str = "rw", **extra: str) -> dict[str, str]:
    """Environment for a ``practiceflow`` subprocess talking to the sandbox."""
    client_id, secret = sandbox.credentials("anz", kind)  # type: ignore[arg-type]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    env.update(
        PRACTICEFLOW_CLIENT_ID=client_id,
        PRACTICEFLOW_CLIENT_SECRET=secret,
        PRACTICEFLOW_BASE_URL=sandbox.base_url("anz"),
        PYTHONPATH=str(REPO / "src"),
    )
    env.update(extra)
    return env


#: The CLI entry of the runner commands, runnable before they are registered.
CLI = [sys.executable, "-m", "practiceflow.cli.runs"]
#: The CLI killed by SIGKILL at a journal point: ``[*KILL_AT, "sent:bill", "run", ...]``.
KILL_AT = [sys.executable, str(HERE.parent / "kill_at.py")]


def write_recipe(folder: Path, steps: str, *, name: str = "t", extra: str = "") -> Path:
    """Write a recipe on the test trigger with the given ``steps:`` YAML block."""
    path = folder / f"{name.replace(' ', '_')}.yaml"
    text = f"name: {name}\ntrigger:\n  use: test_event\n{extra}steps:\n{steps}"
    path.write_text(text, encoding="utf-8")
    return path
