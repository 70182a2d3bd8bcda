"""The store is the ground truth, and ``serve`` knows when it is gone (issue 35): a state
file deleted or replaced under a running ``serve`` stops it with a clear message (exit
2); no delivery is acknowledged into the lost file (the sender is answered 503 and
retries), where before ``serve`` ran on, unnoticed, and the acknowledged events were lost.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from practiceflow.state import SQLiteStore
from practiceflow.state._sqlite import StateFileGone
from practiceflow.testing import SandboxHandle
from reliability._support import (
    TWO_STEP_RECIPE,
    Serve,
    cli_env,
    create_clients,
    free_port,
    wait_until,
)


def _delete(state: Path) -> None:
    state.unlink()


def _replace(state: Path) -> None:
    """A restore: an older copy moved over the live file."""
    copy = state.with_name("copy.db")
    shutil.copyfile(state, copy)
    os.replace(copy, state)


LOSSES: dict[str, Callable[[Path], None]] = {"deleted": _delete, "replaced": _replace}


@pytest.mark.parametrize("loss", LOSSES)
def test_the_store_refuses_every_use_once_its_file_is_gone(tmp_path: Path, loss: str) -> None:
    state = tmp_path / "state.db"
    with SQLiteStore(state) as store:
        store.record_event("p", "s", "k", "before", {"n": 1})
        LOSSES[loss](state)
        with pytest.raises(StateFileGone, match=f"was {loss}") as raised:
            store.record_event("p", "s", "k", "after", {"n": 2})
        assert raised.value.exit_code == 2
        with pytest.raises(StateFileGone):
            store.pending_events("p")


@pytest.mark.integration
@pytest.mark.parametrize("loss", LOSSES)
def test_serve_stops_when_its_state_file_is_gone_and_acknowledges_nothing_after(
    rsandbox: SandboxHandle, tmp_path: Path, loss: str
) -> None:
    recipe = tmp_path / "two_writes.yaml"
    recipe.write_text(TWO_STEP_RECIPE, encoding="utf-8")
    env = cli_env(
        rsandbox, PRACTICEFLOW_PUBLIC_URL="local", PRACTICEFLOW_LISTEN=f"127.0.0.1:{free_port()}"
    )
    serve = Serve(recipe, tmp_path / "state.db", env, tmp_path).start()
    try:
        wait_until(lambda: rsandbox.admin("GET", "/_admin/records/subscriptions"), 90, "subscribe")
        LOSSES[loss](serve.state)
        create_clients(rsandbox, 2, "Gone")
        assert serve.proc is not None
        assert serve.proc.wait(timeout=90) == 2, serve.output()
    finally:
        if serve.proc is not None and serve.proc.poll() is None:
            serve.proc.kill()
            serve.proc.wait()
    output = serve.output()
    assert f"was {loss}" in output
    assert "Traceback" not in output
    acknowledged = [row for row in rsandbox.admin("GET", "/_admin/deliveries") if row["ok"]]
    assert acknowledged == []
