"""The sandbox's latency: every API answer held back a fixed time plus up to a jitter, set
on the command line (``--latency 150ms --jitter 50ms``) or through ``/_admin/config``."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from practiceflow.sandbox.config import SandboxConfig, parse_duration
from practiceflow.testing import SandboxHandle


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("150ms", 0.15), ("0.15s", 0.15), ("0.15", 0.15), (" 50MS ", 0.05), ("0", 0.0)],
)
def test_durations_read_as_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["fast", "-5ms", "61s", "ms"])
def test_a_bad_duration_says_what_would_be_valid(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_duration(text)


def test_the_command_line_refuses_a_bad_latency_with_the_option_named() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "practiceflow", "sandbox", "--latency", "soon"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--latency" in done.stderr
    assert "150ms" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_config_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="jitter: got -1"):
        SandboxConfig(jitter=-1)


@pytest.mark.integration
def test_every_answer_is_held_back_by_the_latency_set_through_the_admin_surface(
    sandbox: SandboxHandle, api
) -> None:
    switches = sandbox.admin("POST", "/_admin/config", {"latencyMs": 300, "jitterMs": 100})
    assert (switches["latencyMs"], switches["jitterMs"]) == (300, 100)
    try:
        for _ in range(2):
            started = time.monotonic()
            answer = api.get("/api/v1/auth/validate")
            assert answer.status_code == 200
            assert time.monotonic() - started >= 0.3  # held back at least the fixed part
    finally:
        sandbox.admin("POST", "/_admin/config", {"latencyMs": 0, "jitterMs": 0})
    assert sandbox.admin("GET", "/_admin/config")["latencyMs"] == 0
