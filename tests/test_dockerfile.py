"""The Dockerfile that docs/deploy.md's compose file builds installs exactly the lock.

No Docker engine is needed: the test runs the Dockerfile's own ``uv sync`` command (its
flags as written) into a throw-away environment and compares what it installed with
uv.lock, and reads the rest of the file for the rules that hold (pinned uv, non-root user).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
UV = ROOT / ".tools" / "bin" / "uv"

pytestmark = pytest.mark.slow


def _makefile_uv_version() -> str:
    found = re.search(r"^UV_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found, "the Makefile pins uv (UV_VERSION)"
    return found.group(1)


def _run_lines() -> list[str]:
    return [line[4:] for line in DOCKERFILE.splitlines() if line.startswith("RUN ")]


def test_the_compose_file_builds_this_dockerfile():
    assert "build: ." in (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")


def test_the_compose_file_restarts_a_worker_that_gave_up_on_its_database():
    deploy = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    compose = deploy.split("```yaml\n# compose.yaml\n", 1)[1].split("```", 1)[0]
    services = yaml.safe_load(compose)["services"]
    assert services["worker"]["restart"] in ("unless-stopped", "always", "on-failure")


def test_uv_is_the_makefiles_version_and_nothing_else_is_installed_by_pip():
    pip_lines = [line for line in _run_lines() if "pip install" in line]
    assert pip_lines == [f"pip install --no-cache-dir uv=={_makefile_uv_version()}"]


def test_every_sync_is_locked_and_leaves_the_dev_extras_out():
    syncs = [line for line in _run_lines() if line.startswith("uv sync")]
    assert syncs, "the image installs with uv sync"
    for line in syncs:
        assert "--locked" in line.split()
        assert "--all-extras" not in line
        assert "--extra" not in line


def test_the_image_runs_as_a_non_root_user():
    users = re.findall(r"^USER (\S+)$", DOCKERFILE, re.MULTILINE)
    assert users
    assert users[-1] not in ("root", "0")
    assert re.search(rf"useradd .*\b{users[-1]}\b", DOCKERFILE)


def test_the_dockerfiles_install_holds_exactly_the_locked_versions(tmp_path: Path):
    final_sync = [line for line in _run_lines() if line.startswith("uv sync")][-1]
    env_dir = tmp_path / "image-venv"
    environ = {
        **os.environ,
        "UV_PROJECT_ENVIRONMENT": str(env_dir),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_LINK_MODE": "copy",
    }
    command = [str(UV), *shlex.split(final_sync)[1:], "--quiet"]
    subprocess.run(command, cwd=ROOT, env=environ, check=True, timeout=600)  # noqa: S603
    listed = subprocess.run(  # noqa: S603 - uv, fixed arguments
        [str(UV), "pip", "list", "--python", str(env_dir / "bin" / "python"), "--format", "json"],
        cwd=ROOT, env=environ, check=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    rows = json.loads(listed.stdout)
    installed = {canonicalize_name(row["name"]): row["version"] for row in rows}
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    locked = {canonicalize_name(p["name"]): p["version"] for p in lock["package"]}
    assert installed.pop("practiceflow") == locked["practiceflow"]
    assert {name: locked.get(name) for name in installed} == installed
    for dev_only in ("pytest", "mypy", "ruff"):
        assert dev_only not in installed
    for runtime in ("procrastinate", "psycopg", "starlette", "pyyaml"):
        assert runtime in installed
