"""``practiceflow test``: run the ``*.test.yaml`` tests of recipes and modules, offline
(:mod:`practiceflow.testing`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from practiceflow.errors import EXIT_CODES, ConfigError, PracticeflowError

if TYPE_CHECKING:
    from practiceflow.testing import CaseOutcome


_EXAMPLES = """
\b
Examples:
  practiceflow test
  practiceflow test recipes/tests/proposal_to_bill_and_eform.test.yaml
  practiceflow test recipes/tests/ --junit-xml reports/practiceflow.xml
  practiceflow test --record recipes/tests/
  practiceflow test --record --base-url http://127.0.0.1:8765/anz recipes/tests/

\b
Without PATH, every *.test.yaml under this folder. --record starts a sandbox on 127.0.0.1
unless --base-url names a server (credentials from the environment or profile). A test
file names a recipe or module and its cases, given and expected: see docs/testing.md.

\b
Exit codes: 0 every case passed; 1 a case failed (each difference is printed, naming the
step and the field); 2 a test file, recipe or module does not load, or no test was found.
"""


@click.command(
    "test",
    help="Run the *.test.yaml tests of recipes and modules (offline, no network).\n" + _EXAMPLES,
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--record",
    is_flag=True,
    help="Run each case that names a cassette against a server and write the cassette "
    "(secrets and x-pii values scrubbed), then replay it offline.",
)
@click.option(
    "--base-url",
    metavar="URL",
    help="With --record: the server to record against, credentials from the environment "
    "or profile (default: a sandbox started on 127.0.0.1).",
)
@click.option("--junit-xml", "junit", type=click.Path(path_type=Path),
              metavar="PATH", help="Also write the results as JUnit XML (for CI).")  # fmt: skip
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Run test files in this many worker processes.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print only what failed, and the summary.")
def test_command(
    paths: tuple[Path, ...],
    record: bool,
    base_url: str | None,
    junit: Path | None,
    jobs: int,
    as_json: bool,
    quiet: bool,
) -> None:
    """Run the tests (see the help text above)."""
    from practiceflow.testing import find_test_files, junit_xml, run_all

    # The engine's warnings (a dropped answer the test planted) are not news for the terminal.
    quiet_logger = logging.getLogger("practiceflow")
    if not quiet_logger.handlers:
        quiet_logger.addHandler(logging.NullHandler())
    files = find_test_files(paths or (Path(),))
    if not files:
        where = ", ".join(str(path) for path in paths) or "this folder"
        message = f"no test files (*.test.yaml) under {where}"
        raise ConfigError(message)
    if base_url is not None and not record:
        raise ConfigError("--base-url: only with --record (a test never sends otherwise)")

    def show(outcome: CaseOutcome) -> None:
        if as_json or (quiet and outcome.result == "passed"):
            return
        label = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}[outcome.result]
        click.echo(f"{label} {outcome.title}")
        for line in outcome.lines:
            click.echo(f"  {line}")

    outcomes = _record(files, base_url, show) if record else run_all(files, jobs=jobs, each=show)
    if junit is not None:
        junit_xml(outcomes, junit)
    results = [outcome.result for outcome in outcomes]
    if as_json:
        click.echo(json.dumps([asdict(outcome) for outcome in outcomes], indent=2))
    else:
        passed, failed, errors = (results.count(kind) for kind in ("passed", "failed", "error"))
        click.echo(
            f"{passed} passed, {failed} failed, {errors} error{'s' if errors != 1 else ''} "
            f"({len(files)} test file{'s' if len(files) != 1 else ''})"
        )
    code = EXIT_CODES["config"] if "error" in results else int("failed" in results)
    click.get_current_context().exit(code)


def _record(
    files: list[Path], base_url: str | None, show: Callable[[CaseOutcome], None]
) -> list[CaseOutcome]:
    """Record every case that names a cassette, then replay it; the outcomes of the replays."""
    from practiceflow.testing import (
        CaseOutcome,
        case_differences,
        load_target,
        load_test_file,
        record_case,
        recording_server,
        run_test_file,
    )

    outcomes: list[CaseOutcome] = []
    with recording_server(base_url) as where:
        click.echo(f"recording against {where.base_url}", err=True)
        for path in files:
            try:
                test = load_test_file(path)
                load_target(test)
            except PracticeflowError:
                for outcome in run_test_file(path):  # reports the problem as a test would
                    show(outcome)
                    outcomes.append(outcome)
                continue
            for case in test.cases:
                if case.cassette is None:
                    click.echo(f"note: {test.display}:{case.line} {case.name}: names no "
                               "given.cassette; not recorded", err=True)  # fmt: skip
                    continue
                written, _, result = record_case(test, case, where)
                click.echo(f"recorded {written}", err=True)
                lines = case_differences(case, result, recipe=test.recipe is not None)
                outcome = CaseOutcome(
                    test.display, case.name, case.line, "failed" if lines else "passed",
                    tuple(lines),
                )  # fmt: skip
                show(outcome)
                outcomes.append(outcome)
    return outcomes


COMMANDS: list[click.Command] = [test_command]
