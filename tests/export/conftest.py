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
import tempfile
from collections.abc import Iterator
from pathlib import Path

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


def npm_ci(folder: Path) -> Path:
    """Install ``folder``'s dependencies from its lockfile unless already current.

    Args:
        folder: a connector folder with package.json and package-lock.json.

    Returns:
        Its node_modules folder.
    """
    # Test workers running side by side (pytest-xdist) install one at a time; the lock
    # file lives outside the repository (the connector folders are compared with exports).
    key = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    with (Path(tempfile.gettempdir()) / f"practiceflow-npm-ci-{key}.lock").open("a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            return _npm_ci(folder)
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)


def _npm_ci(folder: Path) -> Path:
    lock = folder / "package-lock.json"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    modules = folder / "node_modules"
    stamp = modules / STAMP
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
        return modules
    npm = node_tool("npm")
    command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
    done = subprocess.run(  # noqa: S603 - fixed arguments, npm from PATH
        command, cwd=folder, capture_output=True, text=True, timeout=600, check=False
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
