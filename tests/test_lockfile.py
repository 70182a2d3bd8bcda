"""The lock (uv.lock) agrees with pyproject.toml, and the venv the tests run in is the lock's.

pyproject.toml keeps open ranges for people who install the wheel; ``make`` installs exactly
what uv.lock pins. When someone edits a range without running ``make lock``, these tests say
so (and ``make`` itself refuses: ``uv sync --locked``).
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _lock() -> dict[str, Any]:
    return tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))


def _declared() -> list[Requirement]:
    project = _pyproject()["project"]
    declared = [Requirement(text) for text in project["dependencies"]]
    for extra, texts in project.get("optional-dependencies", {}).items():
        for text in texts:
            requirement = Requirement(text)
            marker = f"extra == '{extra}'"
            requirement.marker = Requirement(f"x; {marker}").marker
            declared.append(requirement)
    return declared


def _locked_packages() -> dict[str, dict[str, Any]]:
    return {canonicalize_name(p["name"]): p for p in _lock()["package"]}


def _named(name: str, extras: list[str]) -> str:
    return name + "".join(f"[{extra}]" for extra in extras)


def _key(name: str, specifier: str, marker: str) -> tuple[str, str, str]:
    return (canonicalize_name(name), str(sorted(specifier.split(","))), marker.replace('"', "'"))


def test_the_lock_records_exactly_the_ranges_of_pyproject():
    own = _locked_packages()["practiceflow"]
    recorded = {
        _key(_named(row["name"], row.get("extras", [])), row.get("specifier", ""),
             row.get("marker", ""))
        for row in own["metadata"]["requires-dist"]
    }  # fmt: skip
    declared = {
        _key(_named(r.name, sorted(r.extras)), str(r.specifier), str(r.marker or ""))
        for r in _declared()
    }
    assert declared == recorded, (
        "pyproject.toml and uv.lock disagree; run 'make lock' and commit uv.lock\n"
        f"only in pyproject.toml: {sorted(declared - recorded)}\n"
        f"only in uv.lock: {sorted(recorded - declared)}"
    )


@pytest.mark.parametrize("requirement", _declared(), ids=lambda r: r.name)
def test_each_locked_version_is_within_its_declared_range(requirement: Requirement):
    locked = _locked_packages()[canonicalize_name(requirement.name)]
    assert requirement.specifier.contains(Version(locked["version"]), prereleases=True)


def test_the_test_venv_holds_exactly_the_locked_versions():
    locked = _locked_packages()
    wrong = []
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        if name == "practiceflow" or name not in locked:
            continue
        if Version(dist.version) != Version(locked[name]["version"]):
            wrong.append(f"{name} {dist.version} (lock: {locked[name]['version']})")
    for requirement in _declared():
        if requirement.marker is not None and "extra" not in str(requirement.marker):
            continue
        try:
            metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            wrong.append(f"{requirement.name} not installed")
    assert not wrong, f"the venv is not the lock's (rebuild it: make clean test): {wrong}"
