"""``recipes new`` and ``modules new`` write a first test that passes; ``modules validate``
warns of a recipe or module no test names, without changing its exit code."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.testing import find_test_files, run_all


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_scaffolds_write_tests_that_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _run("modules", "new", "read_client", "--dir", "my-modules")
    _run("modules", "new", "my_bill", "--from", "create_bill", "--dir", "my-modules")
    _run("modules", "new", "my_clients", "--from", "new_client", "--dir", "my-modules")
    _run("modules", "new", "my_forms", "--from", "eform_submitted", "--dir", "my-modules")
    out = _run(
        "recipes", "new", "welcome", "--trigger", "proposal_accepted",
        "--step", "get_client", "--step", "create_bill", "--step", "send_eform",
    )  # fmt: skip
    assert "wrote recipes/tests/welcome.test.yaml; run it with: practiceflow test" in out
    _run("recipes", "new", "mine", "--trigger", "my_clients", "--step", "read_client",
         "--modules", "my-modules")  # fmt: skip
    files = find_test_files([Path()])
    assert sorted(path.name for path in files) == [
        "mine.test.yaml", "my_bill.test.yaml", "my_clients.test.yaml", "my_forms.test.yaml",
        "read_client.test.yaml", "welcome.test.yaml",
    ]  # fmt: skip
    outcomes = run_all(files)
    assert [(o.title, o.lines) for o in outcomes if o.result != "passed"] == []


def test_validate_names_a_recipe_without_a_test_as_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _run("recipes", "new", "welcome", "--trigger", "new_client", "--step", "get_client")
    Path("recipes/untested.yaml").write_text(
        Path("recipes/welcome.yaml").read_text().replace("name: welcome", "name: untested")
    )
    result = CliRunner().invoke(cli, ["modules", "validate", "recipes"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: recipes/untested.yaml has no test (a *.test.yaml naming it, beside it or in"
        " tests/); see docs/testing.md"
    ]
