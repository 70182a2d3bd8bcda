"""``practiceflow test``: a planted change fails with a difference naming step and field; bad
test files are refused with file, line and field; faults; JUnit XML; exit codes."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.testing import load_test_file, run_test_file

REPO = Path(__file__).resolve().parents[2]
RECIPE = "proposal_to_bill_and_eform"


def _copy_example(tmp_path: Path) -> Path:
    """The example recipe, its test file and cassette, in a folder of their own."""
    (tmp_path / "tests" / "cassettes").mkdir(parents=True)
    shutil.copy(REPO / "recipes" / f"{RECIPE}.yaml", tmp_path / f"{RECIPE}.yaml")
    shutil.copy(
        REPO / "recipes" / "tests" / f"{RECIPE}.test.yaml",
        tmp_path / "tests" / f"{RECIPE}.test.yaml",
    )
    shutil.copy(
        REPO / "recipes" / "tests" / "cassettes" / "proposal_accepted.yaml",
        tmp_path / "tests" / "cassettes" / "proposal_accepted.yaml",
    )
    return tmp_path / "tests" / f"{RECIPE}.test.yaml"


def _plant(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _plant_module(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of create_bill that overrides the shipped one, with a change planted."""
    folder = tmp_path / "modules"
    folder.mkdir(exist_ok=True)
    module = folder / "create_bill.yaml"
    text = (REPO / "actions" / "create_bill.yaml").read_text(encoding="utf-8")
    module.write_text("override: true\n" + text, encoding="utf-8")
    _plant(module, old, new)
    return folder


def _test(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["test", *args])
    return result.exit_code, result.output


def test_the_example_recipe_passes_as_shipped(tmp_path: Path) -> None:
    code, out = _test([str(_copy_example(tmp_path))])
    assert code == 0, out
    assert "5 passed, 0 failed, 0 errors" in out


PLANTS = [
    pytest.param(
        "recipe",
        "fee: 300",
        "fee: 350",
        "step bill: request.body.lineItems[0].amount: expected 300, sent 350",
        id="a fee",
    ),
    pytest.param(
        "module",
        'billDate: "{{ input.billDate | default(None) }}"',
        'billDate: "{{ input.dueDate | default(None) }}"',
        "step bill: request.body.billDate: expected '2026-11-27', sent nothing (no such field)",
        id="a mapping",
    ),
    pytest.param(
        "recipe",
        'if: "{{ steps.bill.billTotal > 0 }}"',
        'if: "{{ steps.bill.billTotal > 1000 }}"',
        "step form: status: expected succeeded, got skipped",
        id="an if",
    ),
]


@pytest.mark.parametrize(("where", "old", "new", "difference"), PLANTS)
def test_a_planted_change_fails_with_a_difference_naming_step_and_field(
    tmp_path: Path, where: str, old: str, new: str, difference: str
) -> None:
    test_file = _copy_example(tmp_path)
    if where == "recipe":
        _plant(tmp_path / f"{RECIPE}.yaml", old, new)
    else:
        _plant_module(tmp_path, old, new)
        _plant(
            test_file, f"recipe: ../{RECIPE}.yaml", f"recipe: ../{RECIPE}.yaml\nmodules: ../modules"
        )
    code, out = _test([str(test_file)])
    assert code == 1, out
    assert any(line.strip().startswith(difference) for line in out.splitlines()), out
    assert "FAIL " in out


def test_a_planted_mapping_fails_a_shipped_module_test(tmp_path: Path) -> None:
    folder = _plant_module(
        tmp_path,
        'entityKey: "{{ input.entityKey }}"',
        'entityKey: "{{ input.entityKey | upper }}"',
    )
    test_file = tmp_path / "create_bill.test.yaml"
    text = (REPO / "tests" / "actions" / "create_bill.test.yaml").read_text(encoding="utf-8")
    cassette = REPO / "tests" / "cassettes" / "default" / "create_bill.yaml"
    text = text.replace("module: create_bill", f"module: {folder.name}/create_bill.yaml")
    test_file.write_text(text.replace("../cassettes/default/create_bill.yaml", str(cassette)))
    (outcome,) = run_test_file(test_file)
    assert outcome.result == "failed"
    wanted = (
        "requests[2].body.entityKey: expected '66f52ac4-8158-444d-90de-69dbd17646e8', "
        "sent '66F52AC4-8158-444D-90DE-69DBD17646E8'"
    )
    assert wanted in outcome.lines


BAD_FILES = [
    pytest.param(
        "recipe: r.yaml\ncases:\n  - name: x\n    given: {evnt: sample}\n    expect: {}\n",
        "t.test.yaml:4:",
        "cases[0].given",
        id="a misspelt key",
    ),
    pytest.param(
        "recipe: r.yaml\ncases:\n  - name: x\n    expect: {steps: {bill: {status: done}}}\n",
        "t.test.yaml:4:",
        "cases[0].expect.steps.bill.status",
        id="a status that is not one",
    ),
    pytest.param(
        "recipe: r.yaml\ncases:\n  - name: x\n    given:\n      answers:\n"
        "        - {method: POST, path: api/v1/bills}\n    expect: {}\n",
        "t.test.yaml:6:",
        "cases[0].given.answers[0].path",
        id="a path without its slash",
    ),
    pytest.param(
        "recipe: missing.yaml\ncases:\n  - {name: x, expect: {}}\n",
        "t.test.yaml:1:",
        "recipe: got 'missing.yaml'; no such file",
        id="a recipe that is not there",
    ),
    pytest.param(
        "module: create_bill\ncases:\n  - name: x\n    given: {event: sample}\n    expect: {}\n",
        "t.test.yaml:4:",
        "cases[0].given.event: got 'event' in a test of a module",
        id="a recipe's key in a module's test",
    ),
]


@pytest.mark.parametrize(("text", "where", "what"), BAD_FILES)
def test_a_bad_test_file_is_refused_naming_file_line_and_field(
    tmp_path: Path, text: str, where: str, what: str
) -> None:
    (tmp_path / "r.yaml").write_text("name: r\n")
    path = tmp_path / "t.test.yaml"
    path.write_text(text)
    code, out = _test([str(path)])
    assert code == 2, out
    assert where in out, out
    assert what in out, out
    assert "Traceback" not in out


def test_a_case_without_its_cassette_says_how_to_record_it(tmp_path: Path) -> None:
    test_file = _copy_example(tmp_path)
    (tmp_path / "tests" / "cassettes" / "proposal_accepted.yaml").unlink()
    code, out = _test([str(test_file)])
    assert code == 2
    assert "does not exist yet; record it with 'practiceflow test --record'" in out


def test_an_answer_nobody_asks_for_fails_the_case(tmp_path: Path) -> None:
    test_file = _copy_example(tmp_path)
    _plant(
        test_file,
        "      cassette: cassettes/proposal_accepted.yaml\n    expect:\n      status: succeeded\n",
        "      cassette: cassettes/proposal_accepted.yaml\n      answers:\n"
        "        - {method: DELETE, path: /api/v1/webhooks/x}\n"
        "    expect:\n      status: succeeded\n",
    )
    outcomes = run_test_file(test_file)
    assert outcomes[0].result == "failed"
    assert any("answers[0] DELETE /api/v1/webhooks/x" in line for line in outcomes[0].lines)


def test_junit_xml_names_each_case_and_its_failure(tmp_path: Path) -> None:
    test_file = _copy_example(tmp_path)
    _plant(tmp_path / f"{RECIPE}.yaml", "fee: 300", "fee: 350")
    report = tmp_path / "reports" / "pf.xml"
    code, _ = _test([str(test_file), "--junit-xml", str(report)])
    assert code == 1
    suite = ET.parse(report).getroot().find("testsuite")  # noqa: S314 - our own file
    assert suite is not None
    assert suite.get("tests") == "5"
    failed = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    names = {case.get("name") for case in failed}
    assert "an accepted proposal is billed the fee, then the onboarding form is sent" in names
    texts = "\n".join(case.find("failure").text or "" for case in failed)  # type: ignore[union-attr]
    assert "lineItems[0].amount: expected 300, sent 350" in texts


def test_no_test_file_is_a_usage_error(tmp_path: Path) -> None:
    code, out = _test([str(tmp_path)])
    assert code == 2
    assert "no test files (*.test.yaml)" in out


def test_the_shipped_test_files_load() -> None:
    files = sorted((REPO / "recipes" / "tests").glob("*.test.yaml"))
    files += sorted((REPO / "tests" / "actions").glob("*.test.yaml"))
    files += sorted((REPO / "tests" / "triggers").glob("*.test.yaml"))
    assert len(files) == 4 + 57 + 13
    for path in files:
        assert load_test_file(path).cases


def test_files_run_in_worker_processes_come_out_the_same(tmp_path: Path) -> None:
    from practiceflow.testing import run_all

    files = [_copy_example(tmp_path / "a"), _copy_example(tmp_path / "b")]
    _plant(tmp_path / "b" / f"{RECIPE}.yaml", "fee: 300", "fee: 350")
    alone = [(o.name, o.result, o.lines) for o in run_all(files)]
    together = [(o.name, o.result, o.lines) for o in run_all(files, jobs=2)]
    assert together == alone
    assert [result for _, result, _ in alone].count("failed") == 2
