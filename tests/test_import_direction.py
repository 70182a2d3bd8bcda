"""Imports go one way: the rooms below never import the rooms above them.

The store knows nothing of who writes into it; the client nothing of the runner; the
engine nothing of runs; the runner (one durable run) nothing of the long-running service
or its callers. Every import of ``src/practiceflow`` is read from the syntax tree,
imports inside functions and under ``TYPE_CHECKING`` included.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import practiceflow

SRC = Path(practiceflow.__file__).resolve().parent

#: package -> the packages it must not import.
BELOW: dict[str, frozenset[str]] = {
    "state": frozenset({"api", "engine", "runner", "service", "triggers", "cli", "fleet"}),
    "api": frozenset({"engine", "runner", "service", "triggers", "state", "cli", "fleet"}),
    "engine": frozenset({"runner", "service", "state", "cli", "fleet"}),
    "runner": frozenset({"service", "cli", "console", "mcp", "fleet"}),
}


def _imported(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module != "practiceflow":
                yield node.lineno, node.module
                continue
            for alias in node.names:  # from practiceflow import service
                yield node.lineno, f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def _upward(package: str, path: Path) -> list[str]:
    found = []
    for line, module in _imported(path):
        parts = module.split(".")
        if parts[0] == "practiceflow" and len(parts) > 1 and parts[1] in BELOW[package]:
            found.append(f"{path.name}:{line} imports {module}")
    return found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("def f():\n    from practiceflow.service.loop import Service\n", 1),
        ("from practiceflow import service\n", 1),
        ("import practiceflow.cli.main\n", 1),
        ("from practiceflow.state import StateStore\nfrom . import journal\n", 0),
    ],
)
def test_the_checker_sees_an_import_upward(tmp_path: Path, source: str, found: int) -> None:
    module = tmp_path / "plan.py"
    module.write_text(source, encoding="utf-8")
    assert len(_upward("runner", module)) == found


@pytest.mark.parametrize("package", sorted(BELOW))
def test_a_room_never_imports_the_rooms_above_it(package: str) -> None:
    files = sorted((SRC / package).rglob("*.py"))
    found = [line for path in files for line in _upward(package, path)]
    assert not found, "\n".join(found)
