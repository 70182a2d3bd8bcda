"""Proofs of the Zapier export, using zapier-platform-core and zapier-platform-schema.

The hand-written harness in ``connectors/zapier/test/`` runs under ``node --test``:
``validate.test.js`` (validateApp(prepareApp(app)) and each trigger/search/create against
its own schema) and ``sandbox.test.js`` (createAppTester against the sandbox started here).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from practiceflow.testing import SandboxHandle


def _run_harness(node: str, folder: Path, env: dict[str, str]) -> str:
    done = subprocess.run(  # noqa: S603 - fixed arguments
        [node, "--test", "--test-reporter=tap", "test/"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    return output


def _count(output: str, what: str) -> int:
    match = re.search(rf"^# {what} (\d+)$", output, re.MULTILINE)
    assert match, f"no '# {what}' line in the harness output:\n{output[-2000:]}"
    return int(match.group(1))


def test_zapier_app_validates_and_runs_against_the_sandbox(
    zapier_dir: Path, roomy_sandbox: SandboxHandle, node_bin: str, node_env: dict[str, str]
):
    client_id, secret = roomy_sandbox.credentials("anz", "rw")
    env = dict(
        node_env,
        PF_BASE_URL=roomy_sandbox.base_url("anz"),
        PF_ADMIN_URL=roomy_sandbox.url,
        PF_ADMIN_TOKEN=roomy_sandbox.admin_token,
        PF_CLIENT_ID=client_id,
        PF_CLIENT_SECRET=secret,
    )
    output = _run_harness(node_bin, zapier_dir, env)
    assert _count(output, "fail") == 0
    assert _count(output, "skipped") == 0, "a proof was skipped:\n" + output[-3000:]
    assert _count(output, "pass") >= 7
    # What the sandbox received came with the credential headers of the rw client.
    requests = roomy_sandbox.admin("GET", "/_admin/requests")
    writes = [row for row in requests if row["method"] == "POST"]
    assert writes, "the harness sent no write"
    assert {row["clientId"] for row in requests} == {client_id}
