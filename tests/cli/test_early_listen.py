"""The receiver's socket is bound before serve's slow start-up (issue 24): connections made
then wait in the backlog instead of being refused; a taken port is left to the normal
start-up to report."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from practiceflow.errors import ConfigError
from practiceflow.service.intake import TriggerIntake
from practiceflow.service.netaddr import bind_listen, claim
from practiceflow.state import open_store


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_claim_listens_at_once_and_returns_the_socket() -> None:
    port = _port()
    env = {"PRACTICEFLOW_LISTEN": f"127.0.0.1:{port}", "PRACTICEFLOW_PUBLIC_URL": "local"}
    claimed = claim(env, [])
    try:
        assert claimed is not None
        # Nobody accepts yet, and still the connection is made (queued in the backlog).
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        assert claimed.getsockname()[1] == port
    finally:
        if claimed is not None:
            claimed.close()


def test_nothing_is_claimed_without_a_public_url_or_on_a_taken_port() -> None:
    port = _port()
    assert claim({"PRACTICEFLOW_LISTEN": f"127.0.0.1:{port}"}, []) is None
    with bind_listen("127.0.0.1", 0) as holder:
        taken = int(holder.getsockname()[1])
        env = {"PRACTICEFLOW_LISTEN": f"127.0.0.1:{taken}", "PRACTICEFLOW_PUBLIC_URL": "x"}
        assert claim(env, []) is None
        with pytest.raises(ConfigError, match="cannot listen"):
            bind_listen("127.0.0.1", taken)


def test_an_intake_without_webhook_triggers_closes_the_socket_it_was_given(
    tmp_path: Path,
) -> None:
    port = _port()
    env = {"PRACTICEFLOW_LISTEN": f"127.0.0.1:{port}", "PRACTICEFLOW_PUBLIC_URL": "local"}
    claimed = claim(env, [])
    assert claimed is not None
    with open_store(str(tmp_path / "state.db")) as store:
        intake = TriggerIntake([], store, None, "p", listen=("127.0.0.1", port), sock=claimed)
        intake.start_receiving()
    assert claimed.fileno() == -1
    assert intake.server is None


def test_the_command_line_wins_over_the_environment() -> None:
    port, other = _port(), _port()
    env = {"PRACTICEFLOW_LISTEN": f"127.0.0.1:{other}", "PRACTICEFLOW_PUBLIC_URL": "local"}
    claimed = claim(env, ["serve", "r.yaml", "--listen", f"127.0.0.1:{port}"])
    assert claimed is not None
    assert claimed.getsockname()[1] == port
    claimed.close()
    again = claim({}, ["serve", f"--listen=127.0.0.1:{port}", "--public-url", "local"])
    assert again is not None
    again.close()
