"""The pytest plugin (entry point ``pytest11``): each case of a ``*.test.yaml`` file is an
item; a file that does not load is a collection error naming file, line and field. The
fixtures are described in docs/testing.md, section 5.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from practiceflow.testing import (
        CaseResult,
        Cassette,
        FakeClock,
        SandboxHandle,
        TestCase,
        TestFile,
    )

_SUFFIX = ".test.yaml"


class CaseFailed(AssertionError):
    """A case's result differs from its ``expect`` (the lines say where)."""


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect ``*.test.yaml`` files."""
    if file_path.name.endswith(_SUFFIX):
        collector: pytest.Collector = TestFileCollector.from_parent(parent, path=file_path)
        return collector
    return None


class TestFileCollector(pytest.File):
    """One test file: its cases are the items."""

    __test__ = False

    def collect(self) -> Iterator[pytest.Item]:
        """Load the file (a problem is a collection error naming file, line and field)."""
        from practiceflow.errors import PracticeflowError
        from practiceflow.testing import load_test_file

        try:
            test = load_test_file(self.path, display=str(self.path))
        except PracticeflowError as exc:
            raise self.CollectError(str(exc)) from None
        for case in test.cases:
            yield CaseItem.from_parent(self, name=case.name, test=test, case=case)


class CaseItem(pytest.Item):
    """One case of a test file."""

    def __init__(self, *, test: TestFile, case: TestCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.test = test
        self.case = case

    def runtest(self) -> None:
        """Run the case offline and compare it with its ``expect``."""
        from practiceflow.testing import case_differences, run_case

        result = run_case(self.test, self.case)
        lines = case_differences(self.case, result, recipe=self.test.recipe is not None)
        if lines:
            raise CaseFailed("\n".join(lines))

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> Any:
        """The differences (or the loading problem), without a traceback."""
        from practiceflow.errors import PracticeflowError

        if isinstance(excinfo.value, CaseFailed | PracticeflowError):
            where = f"{self.test.display}:{self.case.line} {self.case.name}"
            lines = str(excinfo.value).splitlines()
            return where + "\n" + "\n".join(f"  {line}" for line in lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the case is (pytest shows it in reports)."""
        return self.path, self.case.line - 1, f"case: {self.case.name}"


@pytest.fixture
def practiceflow_clock() -> Iterator[FakeClock]:
    """A fake clock at 2026-01-05 09:00 UTC that templates read as ``now`` for this test."""
    from practiceflow.testing import FakeClock
    from practiceflow.testing._case_run import templates_on

    with templates_on(FakeClock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))) as clock:
        yield clock


@pytest.fixture(scope="session")
def practiceflow_sandbox() -> Iterator[SandboxHandle]:
    """A sandbox on 127.0.0.1 for the whole session."""
    from practiceflow.testing import running_sandbox

    with running_sandbox() as handle:
        yield handle


@pytest.fixture
def practiceflow_cassette(request: pytest.FixtureRequest) -> Callable[[str | Path], Cassette]:
    """``load(path)``: a cassette file, relative to the test's folder."""
    from practiceflow.testing import load_cassette

    folder = Path(request.path).parent

    def load(path: str | Path) -> Cassette:
        return load_cassette(folder / path)

    return load


@pytest.fixture
def practiceflow_run(request: pytest.FixtureRequest) -> Callable[..., CaseResult]:
    """``run(recipe, event=None, *, vars=None, answers=(), cassette=None, now=None,
    modules=None)``: the recipe run offline for one event, as a :class:`CaseResult`."""
    from practiceflow.testing import run_recipe_once

    folder = Path(request.path).parent

    def run(
        recipe: str | Path,
        event: dict[str, Any] | None = None,
        *,
        vars: dict[str, Any] | None = None,
        answers: Sequence[dict[str, Any]] = (),
        cassette: str | Path | None = None,
        now: str | None = None,
        modules: str | Path | None = None,
    ) -> CaseResult:
        return run_recipe_once(
            folder / recipe,
            event,
            variables=vars,
            answers=answers,
            cassette=None if cassette is None else folder / cassette,
            now=now,
            modules=None if modules is None else folder / modules,
        )

    return run
