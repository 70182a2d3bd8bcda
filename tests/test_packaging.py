"""The wheel ships the declarative data and works outside the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(  # noqa: S603 - fixed argv built by the test
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel and install it into a fresh venv outside the repository."""
    work = tmp_path_factory.mktemp("wheel")
    _run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(work)],
        cwd=REPO,
    )
    wheels = list(work.glob("practiceflow-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    _run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(wheels[0]),
        ],
        cwd=work,
    )
    return env_dir


@pytest.mark.slow
def test_wheel_finds_shipped_data_outside_the_repository(
    installed_wheel: Path, tmp_path: Path
) -> None:
    python = installed_wheel / "bin" / "python"
    script = (
        "import json\n"
        "from practiceflow.resources import data_dir\n"
        "out = {}\n"
        "for kind in ('actions', 'triggers', 'manifests'):\n"
        "    d = data_dir(kind)\n"
        "    out[kind] = {'path': str(d), 'files': sorted(p.name for p in d.iterdir())}\n"
        "print(json.dumps(out))\n"
    )
    found = json.loads(_run([str(python), "-c", script], cwd=tmp_path))
    for kind in ("actions", "triggers", "manifests"):
        assert "site-packages" in found[kind]["path"], found[kind]
        assert str(REPO) not in found[kind]["path"]
        shipped = sorted(p.name for p in (REPO / kind).iterdir() if p.is_file())
        assert found[kind]["files"] == shipped


@pytest.mark.slow
def test_wheel_console_script_runs(installed_wheel: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    out = _run([str(installed_wheel / "bin" / "practiceflow"), "--help"], cwd=tmp_path, env=env)
    assert "Usage: practiceflow" in out
    for command in ("auth", "sandbox", "modules"):
        assert command in out
