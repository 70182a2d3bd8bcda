"""The wheel ships the declarative data and works outside the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
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
    """Build the wheel and install it into a fresh venv outside the repository.

    The fresh venv borrows the already installed third-party dependencies through a ``.pth``
    line (installing them again would cost a minute and test nothing of ours); practiceflow
    itself comes only from the wheel: the source checkout is never on its path.
    """
    work = tmp_path_factory.mktemp("wheel")
    _run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(work)],
        cwd=REPO,
    )
    wheels = list(work.glob("practiceflow-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], work)
    deps = sysconfig.get_path("purelib")
    (Path(site.strip()) / "borrowed_dependencies.pth").write_text(deps + "\n", encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    _run([*pip, "--quiet", "--disable-pip-version-check", str(wheels[0])], cwd=work)
    return env_dir


@pytest.mark.slow
def test_wheel_finds_shipped_data_outside_the_repository(
    installed_wheel: Path, tmp_path: Path
) -> None:
    python = installed_wheel / "bin" / "python"
    script = (
        "import json\n"
        "from practiceflow.manifest.resources import data_dir\n"
        "import practiceflow\n"
        "out = {'module': practiceflow.__file__}\n"
        "for kind in ('actions', 'triggers', 'manifests'):\n"
        "    d = data_dir(kind)\n"
        "    out[kind] = {'path': str(d), 'files': sorted(p.name for p in d.iterdir())}\n"
        "print(json.dumps(out))\n"
    )
    found = json.loads(_run([str(python), "-c", script], cwd=tmp_path))
    assert str(installed_wheel) in found.pop("module")  # the wheel, not the checkout
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


@pytest.mark.slow
def test_wheel_lists_every_shipped_module(installed_wheel: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    command = [str(installed_wheel / "bin" / "practiceflow"), "modules", "list", "--json"]
    listed = json.loads(_run(command, cwd=tmp_path, env=env))
    keys = {(row["type"], row["key"]) for row in listed}
    shipped = {("action", p.stem) for p in (REPO / "actions").glob("*.yaml")}
    shipped |= {("trigger", p.stem) for p in (REPO / "triggers").glob("*.yaml")}
    assert keys == shipped
