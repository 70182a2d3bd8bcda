"""The README and docs/ point only inside the repository, at files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _link_problems(text: str, folder: Path, root: Path = REPO) -> list[str]:
    """What is wrong with each relative link of a page kept in ``folder`` under ``root``."""
    problems: list[str] = []
    for target in re.findall(r"\]\(([^)#\s]+)", text):
        if target.startswith(("http://", "https://")):
            continue
        path = folder / target
        if not path.exists():
            problems.append(f"{target} does not exist")
        elif not path.resolve().is_relative_to(root.resolve()):
            problems.append(f"{target} is outside the repository")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_exists_inside_the_repository(page: Path) -> None:
    problems = _link_problems(page.read_text(encoding="utf-8"), page.parent)
    assert problems == [], f"{page.name}: {problems}"


def test_a_link_out_of_the_repository_fails_even_when_its_target_exists(tmp_path: Path) -> None:
    repo, shared = tmp_path / "repo", tmp_path / "shared"
    (repo / "docs").mkdir(parents=True)
    (repo / "README.md").write_text("# r\n", encoding="utf-8")
    shared.mkdir()
    (shared / "STYLE.md").write_text("# style\n", encoding="utf-8")
    text = "[readme](../README.md), [style](../../shared/STYLE.md), [gone](missing.md)"
    assert _link_problems(text, repo / "docs", root=repo) == [
        "../../shared/STYLE.md is outside the repository",
        "missing.md does not exist",
    ]
    readme = "[style](../shared/STYLE.md)"  # the README's own view of the shared folder
    assert _link_problems(readme, repo, root=repo) == [
        "../shared/STYLE.md is outside the repository"
    ]


def test_the_readme_points_to_no_file_outside_the_repository() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "DESIGN.md" not in text
    assert "shared folder" not in text
    for name in ("tutorial.md", "recipes-reference.md", "modules-guide.md", "architecture.md"):
        assert f"(docs/{name})" in text
