"""Tables of valid and invalid module files (``cases/``): each invalid file lists, in its
``# expect:`` comments, issues that must be reported, all at once, located as
``file:line:column path: message``."""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.errors import ManifestError
from practiceflow.manifest import ActionModule, load_action

CASES = Path(__file__).parent / "cases"
VALID = sorted((CASES / "valid").glob("*.yaml"))
INVALID = sorted((CASES / "invalid").glob("*.yaml"))


def _expected(path: Path) -> list[str]:
    prefix = "# expect: "
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line[len(prefix) :] for line in lines if line.startswith(prefix)]


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_valid_module_loads(path):
    module = load_action(path, display=f"valid/{path.name}")
    assert isinstance(module, ActionModule)
    assert module.key == path.stem


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_module_reports_every_issue_with_its_location(path):
    expected = _expected(path)
    assert expected, f"{path.name} has no '# expect:' line"
    with pytest.raises(ManifestError) as caught:
        load_action(path, display=f"invalid/{path.name}")
    reported = [str(issue) for issue in caught.value.issues]
    for fragment in expected:
        assert any(line.startswith(fragment) for line in reported), (
            f"expected an issue starting with:\n  {fragment}\ngot:\n  " + "\n  ".join(reported)
        )
