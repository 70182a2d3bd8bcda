"""Proofs of the n8n export, using n8n's own packages (@n8n/node-cli, n8n-core, n8n-workflow).

* the package builds with ``n8n-node build`` and passes ``n8n-node lint`` (strict mode, the
  community-node rules, which include the webhook lifecycle methods);
* the hand-written harness in ``connectors/n8n/test/`` runs the built nodes in n8n-core's
  engine (``WorkflowExecute``, ``PollContext`` / the poll runner, ``HookContext``,
  ``WebhookContext``) with ``N8N_USER_FOLDER`` in a temp dir, against a sandbox started here.

Node packages come from the committed lockfile (``npm ci --ignore-scripts``; the first
install takes minutes, later runs reuse ``node_modules``). No npm or registry: the tests fail.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from practiceflow.testing import SandboxHandle


def _export_conftest() -> ModuleType:
    """tests/export/conftest.py as a module (tests/ has no packages to import it from)."""
    path = Path(__file__).with_name("conftest.py")
    spec = importlib.util.spec_from_file_location("_export_conftest_n8n", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SUPPORT = _export_conftest()
FOLDER = _SUPPORT.CONNECTORS / "n8n"


def _run(command: list[str], env: dict[str, str], timeout: int = 300) -> str:
    done = subprocess.run(  # noqa: S603 - fixed arguments, tools from node_modules
        command,
        cwd=FOLDER,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{output[-6000:]}"
    return output


@pytest.mark.timeout(900)  # the first 'npm ci' downloads n8n-core and the CLI (minutes)
def test_n8n_package_passes_n8n_node_lint(n8n_built: Path, n8n_env: dict[str, str]):
    output = _run([str(n8n_built / "node_modules" / ".bin" / "n8n-node"), "lint"], n8n_env)
    assert "problem" not in output, output[-4000:]


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_n8n_nodes_run_in_n8n_core_against_the_sandbox(
    n8n_built: Path,
    roomy_sandbox: SandboxHandle,
    node_bin: str,
    n8n_env: dict[str, str],
    tmp_path: Path,
):
    client_id, secret = roomy_sandbox.credentials("anz", "rw")
    env = dict(
        n8n_env,
        N8N_USER_FOLDER=str(tmp_path / "n8n"),
        PF_BASE_URL=roomy_sandbox.base_url("anz"),
        PF_ADMIN_URL=roomy_sandbox.url,
        PF_ADMIN_TOKEN=roomy_sandbox.admin_token,
        PF_CLIENT_ID=client_id,
        PF_CLIENT_SECRET=secret,
    )
    (tmp_path / "n8n").mkdir()
    output = _run([node_bin, "--test", "--test-reporter=tap", "test/n8n.test.js"], env, timeout=180)
    counts = {
        name: int(match.group(1))
        for name in ("pass", "fail", "skipped")
        if (match := re.search(rf"^# {name} (\d+)$", output, re.MULTILINE))
    }
    assert counts.get("fail") == 0, output[-4000:]
    assert counts.get("skipped") == 0, output[-4000:]
    assert counts.get("pass", 0) >= 3, output[-4000:]
    # Every request the nodes sent came with the rw client's credential headers.
    requests = roomy_sandbox.admin("GET", "/_admin/requests")
    assert {row["clientId"] for row in requests} == {client_id}
    sent = {(row["method"], row["path"].rsplit("/api/v1/", 1)[-1]) for row in requests}
    assert ("POST", "entities") in sent
    assert any(method == "DELETE" and path.startswith("webhooks/") for method, path in sent)


@pytest.mark.timeout(900)
def test_npm_test_passes_in_a_fresh_export(
    n8n_built: Path, n8n_env: dict[str, str], tmp_path: Path
):
    """What a user gets from 'practiceflow export n8n': `npm test` builds the package (its
    pretest) and runs the exported test folder: the classes package.json lists load, each
    operation has its module, and Return All reads every page of each paged list."""
    from practiceflow.export import export

    out = tmp_path / "n8n"
    result = export("n8n", out)
    assert "test/package.test.js" in result.written
    (out / "node_modules").symlink_to(n8n_built / "node_modules", target_is_directory=True)
    done = subprocess.run(  # noqa: S603 - fixed arguments, npm from PATH
        [_SUPPORT.node_tool("npm"), "test"],
        cwd=out,
        env=n8n_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert re.search(r"^# pass 3$", output, re.MULTILINE), output[-4000:]
    assert re.search(r"^# fail 0$", output, re.MULTILINE), output[-4000:]
