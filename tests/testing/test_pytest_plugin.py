"""The pytest plugin: ``*.test.yaml`` cases are items (collected once), a failure shows the
differences, a bad file is a collection error naming its line, and the fixtures work."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

KEY = "66f52ac4-8158-444d-90de-69dbd17646e8"

RECIPE = """\
name: bill the fee
trigger: {use: proposal_accepted}
vars: {fee: 300}
steps:
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.entityKey }}"
      lineItems: [{amount: "{{ vars.fee }}", taxPercent: 10, narration: Fee}]
"""

ANSWERS = f"""\
      answers:
        - {{method: GET, path: /api/v1/entities/{KEY}, body: {{entityKey: {KEY}, status: Active}}}}
        - {{method: GET, path: /api/v1/bills/ledger/status, body: {{connected: false}}}}
        - {{method: POST, path: /api/v1/bills, status: 201,
           body: {{billingID: 1, billTotal: 330.0}}}}
"""

TEST = f"""\
recipe: bill.yaml
cases:
  - name: the fee is billed
    given:
      event: {{entityKey: {KEY}}}
{ANSWERS}    expect:
      steps:
        bill:
          request: {{method: POST, path: /api/v1/bills, body: {{lineItems: [{{amount: 300}}]}}}}
  - name: a planted expectation fails
    given:
      event: {{entityKey: {KEY}}}
{ANSWERS}    expect:
      steps:
        bill: {{output: {{billTotal: 385.0}}}}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", bill=RECIPE)
    (pytester.path / "bill.test.yaml").write_text(TEST)
    return pytester


def test_each_case_is_an_item_and_a_failure_names_step_and_field(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*step bill: output.billTotal: expected 385.0, got 330.0*"])
    assert "Traceback" not in result.stdout.str()


def test_a_conftest_naming_the_plugin_too_collects_each_case_once(
    project: pytest.Pytester,
) -> None:
    project.makeconftest('pytest_plugins = ["practiceflow.testing.pytest_plugin"]\n')
    result = project.runpytest("-p", "no:randomly", "--collect-only", "-q")
    lines = [line for line in result.stdout.lines if "bill.test.yaml::" in line]
    assert len(lines) == 2, result.stdout.str()


def test_the_plugin_can_be_turned_off(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:practiceflow.testing.pytest_plugin")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_bad_test_file_is_a_collection_error_naming_its_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", bill=RECIPE)
    (pytester.path / "bad.test.yaml").write_text(
        "recipe: bill.yaml\ncases:\n  - name: x\n    expect: {stauts: succeeded}\n"
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*bad.test.yaml:4:*cases[[]0[]].expect*stauts*"])


def test_the_run_fixture_gives_the_journal_and_the_requests(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_python=f"""
        def test_the_fee(practiceflow_run):
            answers = [
                {{"method": "GET", "path": "/api/v1/entities/{KEY}",
                  "body": {{"entityKey": "{KEY}", "status": "Active"}}}},
                {{"method": "GET", "path": "/api/v1/bills/ledger/status",
                  "body": {{"connected": False}}}},
                {{"method": "POST", "path": "/api/v1/bills", "status": 201,
                  "body": {{"billingID": 1, "billTotal": 385.0}}}},
            ]
            result = practiceflow_run("bill.yaml", {{"entityKey": "{KEY}"}},
                                      vars={{"fee": 350}}, answers=answers)
            assert result.status == "succeeded"
            assert result.steps["bill"].output["billTotal"] == 385.0
            (post,) = [r for r in result.steps["bill"].requests if r.method == "POST"]
            assert post.body["lineItems"][0]["amount"] == 350

        def test_the_clock(practiceflow_clock):
            from practiceflow.templating import utcnow
            start = utcnow()
            practiceflow_clock.sleep(60)
            assert (utcnow() - start).total_seconds() == 60
        """
    )
    result = project.runpytest("-p", "no:randomly", "test_python.py")
    result.assert_outcomes(passed=2)


def test_this_repository_collects_its_shipped_test_files_once() -> None:
    """make test runs tests/ and recipes/ (pyproject's testpaths): each file once."""
    repo = Path(__file__).resolve().parents[2]
    text = (repo / "pyproject.toml").read_text()
    assert 'testpaths = ["tests", "recipes"]' in text
    assert not list((repo / "tests").glob("**/recipes/tests/*.test.yaml"))
