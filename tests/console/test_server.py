"""Where the console may listen, and how ``serve`` starts and stops it."""

from __future__ import annotations

import threading

import pytest
from click.testing import CliRunner

from practiceflow.cli.runs import serve
from practiceflow.console import ConsoleContext, ConsoleServer, check_bind
from practiceflow.errors import ConfigError
from practiceflow.service.loop import Service
from practiceflow.state import StateStore
from runner._support import RECIPES


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_needs_no_token(host: str):
    check_bind(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "console.example"])  # noqa: S104 - the point of the test
def test_any_other_address_is_refused_without_a_token(host: str):
    with pytest.raises(ConfigError, match="--console-token"):
        check_bind(host, None)
    with pytest.raises(ConfigError):
        check_bind(host, "   ")
    check_bind(host, "a-token")


def test_the_server_refuses_to_start_beyond_loopback_without_a_token(
    ctx: ConsoleContext,
):
    with pytest.raises(ConfigError, match="no token"):
        ConsoleServer(ctx, "0.0.0.0", 0)  # noqa: S104 - the point of the test


def test_serve_refuses_a_public_console_without_a_token_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.delenv("PRACTICEFLOW_CONSOLE_TOKEN", raising=False)
    result = CliRunner().invoke(
        serve,
        [str(RECIPES / "three_writes.yaml"), "--console-listen", "0.0.0.0:0"],
    )
    assert isinstance(result.exception, ConfigError)
    assert "no token" in str(result.exception)


def test_serve_starts_the_console_first_and_stops_it_last(seeded_store: StateStore):
    calls: list[str] = []

    class Fake:
        def start(self) -> None:
            calls.append("start")

        def stop(self) -> None:
            calls.append("stop")

    service = Service([], seeded_store, console=Fake(), idle=0.01)
    service.run(max_loops=2)
    assert calls == ["start", "stop"]


def test_a_resolution_wakes_serve_to_resume_settled_runs(
    seeded_store: StateStore, monkeypatch: pytest.MonkeyPatch
):
    service = Service([], seeded_store, idle=0.01)
    resumed = threading.Event()
    monkeypatch.setattr(service, "resume_unfinished", lambda: resumed.set() or 0)
    service.settled.set()
    service.run(max_loops=1)
    assert resumed.is_set()
    assert not service.settled.is_set()


@pytest.fixture
def seeded_store(ctx: ConsoleContext) -> StateStore:
    """The seeded store (through the console context)."""
    return ctx.store


def test_a_busy_port_does_not_stop_serve_when_the_console_is_optional(ctx: ConsoleContext):
    first = ConsoleServer(ctx, "127.0.0.1", 0).start()
    try:
        taken = ConsoleServer(ctx, "127.0.0.1", first.port, optional=True).start(timeout=2)
        assert not taken.running
        with pytest.raises(ConfigError, match="did not start"):
            ConsoleServer(ctx, "127.0.0.1", first.port).start(timeout=2)
    finally:
        first.stop()
