"""One name per file: outside the sandbox (a separate program that imports nothing of the
rest), no two modules of the package share a file name (issue 33)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "practiceflow"
SHARED_BY_DESIGN = {"__init__.py", "__main__.py"}


def test_no_file_name_is_used_twice_outside_the_sandbox() -> None:
    places: dict[str, list[str]] = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "sandbox" or path.name in SHARED_BY_DESIGN:
            continue
        places[path.name].append(relative.as_posix())
    repeated = {name: where for name, where in places.items() if len(where) > 1}
    assert not repeated, repeated


def test_the_check_sees_the_package() -> None:
    names = {path.name for path in PACKAGE.rglob("*.py")}
    assert {"needs_person.py", "attention_rows.py", "journal.py"} <= names
