"""Proof inside the real product: Zapier's own CLI validates and tests the exported app.

``zapier-platform validate --without-style`` (the structural validation; the style checks
are Zapier's online service) and ``zapier-platform test --skip-validate`` (the app's own
tests, exported with it, through its package.json ``test`` script) on Node 22, which CLI 19
requires, against a sandbox on 127.0.0.1. Part of ``make test-connectors``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.products


def _cli(script: Path, node22: Any, app: Path, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(  # noqa: S603 - fixed arguments
        [node22.node, str(script), *args],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"zapier-platform {' '.join(args)} failed:\n{output[-6000:]}"
    return output


def test_zapier_cli_validates_and_tests_the_exported_app(
    zapier_cli: Path, node22: Any, zapier_dir: Path, roomy_sandbox: SandboxHandle
):
    client_id, secret = roomy_sandbox.credentials("anz", "rw")
    env = dict(
        node22.env,
        HOME=str(zapier_dir / "node_modules" / ".zapier-home"),  # no ~/.zapierrc of anyone's
        NODE_ENV="test",
        PF_BASE_URL=roomy_sandbox.base_url("anz"),
        PF_ADMIN_URL=roomy_sandbox.url,
        PF_ADMIN_TOKEN=roomy_sandbox.admin_token,
        PF_CLIENT_ID=client_id,
        PF_CLIENT_SECRET=secret,
        ZAPIER_DISABLE_UPDATE_NOTIFICATIONS="1",
    )
    Path(env["HOME"]).mkdir(exist_ok=True)
    version = subprocess.run(  # noqa: S603 - fixed arguments
        [node22.node, "--version"], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert version.startswith("v22."), version
    validated = _cli(zapier_cli, node22, zapier_dir, "validate", "--without-style", env=env)
    assert "No structural errors found" in validated
    tested = _cli(zapier_cli, node22, zapier_dir, "test", "--skip-validate", env=env)
    # node --test's TAP summary (its reporter when the output is not a terminal).
    found = re.findall(r"^# (pass|fail|skipped|todo) (\d+)$", tested, re.MULTILINE)
    counts = {name: int(number) for name, number in found}
    assert counts.get("fail") == 0, tested[-4000:]
    assert counts.get("skipped") == 0, "a test of the app was skipped:\n" + tested[-4000:]
    assert counts.get("pass", 0) >= 12, tested[-4000:]
    # The app's tests reached the sandbox with the rw client's credentials.
    requests = roomy_sandbox.admin("GET", "/_admin/requests")
    assert {row["clientId"] for row in requests} == {client_id}
    assert any(row["method"] == "POST" for row in requests)
