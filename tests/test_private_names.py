"""No module imports another package's private name (STYLE rule 16).

A name or module whose last part starts with one underscore (``_sql``, ``_bind``) is its
package's own: a module of that package may import it, a module of any other package
(a sub-package included) imports the package's public surface instead. Every import of
``src/practiceflow`` is read from the syntax tree, imports inside functions included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import practiceflow

SRC = Path(practiceflow.__file__).resolve().parent


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _is_package(dotted: str) -> bool:
    return (SRC.parent / Path(*dotted.split("."))).is_dir()


def _owner_of_private(dotted: str) -> str | None:
    """The package that owns the first private part of ``dotted``, if it has one."""
    parts = dotted.split(".")
    for index, part in enumerate(parts):
        if _private(part):
            owner = ".".join(parts[:index])
            return owner if _is_package(owner) else owner.rpartition(".")[0]
    return None


def private_imports(text: str, here: str, where: str) -> list[str]:
    """``where:line: what`` for each import of another package's private name in ``text``,
    the source of a module of package ``here``."""
    tree = ast.parse(text, filename=where)
    found: list[str] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            if not target.startswith("practiceflow."):
                continue
            owner = _owner_of_private(target)
            if owner is not None and owner != here:
                found.append(f"{where}:{node.lineno}: {target}")
    return found


@pytest.mark.parametrize(
    ("source", "package", "expected"),
    [
        ("from practiceflow.state._sql import SQLStore", "practiceflow.runner",
         ["m.py:1: practiceflow.state._sql.SQLStore"]),
        ("from practiceflow.cli.sandbox import _bind", "practiceflow.mcp",
         ["m.py:1: practiceflow.cli.sandbox._bind"]),
        ("import practiceflow.ops._metrics", "practiceflow.cli",
         ["m.py:1: practiceflow.ops._metrics"]),
        ("def f():\n    from practiceflow.state import _sql", "practiceflow.fleet",
         ["m.py:2: practiceflow.state._sql"]),
        ("from practiceflow.state._sql import SQLStore", "practiceflow.state", []),
        ("from ._sql import SQLStore", "practiceflow.state", []),
        ("from .._template_bounds import check_size", "practiceflow.engine",
         ["m.py:1: practiceflow._template_bounds.check_size"]),
        ("from practiceflow.runner import journal", "practiceflow.cli", []),
        ("from practiceflow.api.client import __all__", "practiceflow.cli", []),
    ],
    ids=["private module", "private name", "import statement", "inside a function",
         "own package", "own package, relative", "parent package, relative", "public",
         "dunder"],
)  # fmt: skip
def test_the_checker_tells_another_packages_private_names_from_the_rest(
    source: str, package: str, expected: list[str]
) -> None:
    assert private_imports(source, package, "m.py") == expected


@pytest.mark.parametrize(
    "path", sorted(SRC.rglob("*.py")), ids=lambda path: str(path.relative_to(SRC))
)
def test_no_module_imports_another_packages_private_name(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert private_imports(text, _package(path), str(path.relative_to(SRC))) == []
