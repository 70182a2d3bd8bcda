"""Which recipes and modules no test file names (``modules validate`` warns of them).

A file is tested when a ``*.test.yaml`` beside it, in a ``tests/`` folder beside it, or in
the ``tests/`` folder of its parent (``DIR/tests/`` for ``DIR/actions/x.yaml``) names it:
its ``recipe`` or ``module`` is that file, or its ``module`` is the module's key.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from practiceflow.testing._case import TEST_SUFFIX


def _named_by(test: Path) -> set[str]:
    """What one test file names: resolved paths, and a module key."""
    try:
        data = yaml.safe_load(test.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return set()  # a broken test file is reported by 'practiceflow test'
    if not isinstance(data, dict):
        return set()
    named: set[str] = set()
    for key in ("recipe", "module"):
        value = data.get(key)
        if isinstance(value, str):
            named.add(str((test.parent / value).resolve()))
            named.add(value)
    return named


def untested(files: Iterable[Path]) -> list[Path]:
    """The recipe and module files that no test file near them names.

    Args:
        files: recipe and module files (test files among them are skipped).

    Returns:
        Those without a test, in the order given.
    """
    cache: dict[Path, set[str]] = {}
    out = []
    for file in files:
        if file.name.endswith(TEST_SUFFIX):
            continue
        named: set[str] = set()
        for folder in (file.parent, file.parent / "tests", file.parent.parent / "tests"):
            if folder not in cache:
                found: set[str] = set()
                if folder.is_dir():
                    for test in sorted(folder.glob("*" + TEST_SUFFIX)):
                        found |= _named_by(test)
                cache[folder] = found
            named |= cache[folder]
        if str(file.resolve()) not in named and file.stem not in named:
            out.append(file)
    return out
