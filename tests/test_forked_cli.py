"""The warm fork helper of the crash tests (``tests/forked_cli.py``) tells what a process
start would: the exit status and the output (the kills: ``tests/runner/test_crash.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from forked_cli import run_cli
from practiceflow import __version__


def test_a_child_that_exits_gives_its_status_and_output() -> None:
    env = dict(os.environ)
    done = run_cli(["no-such-point", "--version"], env)  # ends at once: both lines together
    assert (done.returncode, __version__ in done.stdout) == (0, True), done.stderr
    refused = run_cli(["no-such-point", "run", "--no-such-option"], env)
    assert refused.returncode == 2
    assert "no-such-option" in refused.stderr


def test_the_child_has_the_environment_it_is_given(tmp_path: Path) -> None:
    state = tmp_path / "given.db"
    done = run_cli(
        ["no-such-point", "db", "migrate"], {**os.environ, "PRACTICEFLOW_STATE": str(state)}
    )
    assert done.returncode == 0, done.stderr
    assert state.exists()
