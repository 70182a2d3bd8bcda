"""The README and docs/ point only inside the repository, at files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)", text):
        if target.startswith(("http://", "https://")):
            continue
        assert (page.parent / target).exists(), f"{page.name}: {target} does not exist"


def test_the_readme_points_to_no_file_outside_the_repository() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "DESIGN.md" not in text
    assert "shared folder" not in text
    for name in ("tutorial.md", "recipes-reference.md", "modules-guide.md", "architecture.md"):
        assert f"(docs/{name})" in text
