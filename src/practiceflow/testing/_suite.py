"""Finding test files, running their cases, and reporting them (for people, and as JUnit XML
for CI); :func:`untested` lists the recipes and modules no test file near them names.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import yaml

from practiceflow.errors import ConfigError, PracticeflowError
from practiceflow.testing._case import TEST_SUFFIX, load_test_file
from practiceflow.testing._case_run import load_target, run_case
from practiceflow.testing._expect import case_differences

#: Folders never searched for test files.
_SKIPPED: Final = frozenset({".git", ".venv", "node_modules", "__pycache__", ".tox"})


@dataclass(frozen=True)
class CaseOutcome:
    """How one case (``name`` ``""``: a file that would not load) came out: ``passed``,
    ``failed`` (``lines`` are the differences) or ``error`` (the test, the recipe or a module
    does not load; ``lines`` are the problems), and in how many ``seconds`` (for CI)."""

    file: str
    name: str
    line: int
    result: Literal["passed", "failed", "error"]
    lines: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def title(self) -> str:
        """``file:line case name``."""
        return f"{self.file}:{self.line} {self.name}" if self.name else self.file


def find_test_files(paths: Iterable[str | Path]) -> list[Path]:
    """Every ``*.test.yaml`` named in ``paths`` (files and folders), in order, each once
    (sorted within a folder).

    Raises:
        ConfigError: a path does not exist, or names a file that is not a test file.
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(
                item
                for item in path.rglob("*" + TEST_SUFFIX)
                if item.is_file() and not _SKIPPED.intersection(item.relative_to(path).parts)
            )
        elif path.is_file():
            if not path.name.endswith(TEST_SUFFIX):
                message = f"{path}: not a test file (a test file's name ends in {TEST_SUFFIX})"
                raise ConfigError(message)
            found.append(path)
        else:
            message = f"{path}: no such file or folder"
            raise ConfigError(message)
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def run_test_file(path: str | Path) -> list[CaseOutcome]:
    """Run every case of one ``*.test.yaml`` file (offline): one outcome per case, or one
    ``error`` outcome when the file, its recipe or a module does not load."""
    try:
        test = load_test_file(path)
    except PracticeflowError as exc:
        return [CaseOutcome(str(path), "", 0, "error", tuple(str(exc).splitlines()))]
    try:
        target, registry = load_target(test)
    except PracticeflowError as exc:
        lines = (f"{test.display}: what it tests does not load:", *str(exc).splitlines())
        return [CaseOutcome(test.display, "", 0, "error", lines)]
    outcomes = []
    for case in test.cases:
        started = time.perf_counter()
        try:
            result = run_case(test, case, target=target, registry=registry)
        except PracticeflowError as exc:
            took = time.perf_counter() - started
            lines = tuple(str(exc).splitlines())
            outcomes.append(CaseOutcome(test.display, case.name, case.line, "error", lines, took))
            continue
        differences = case_differences(case, result, recipe=test.recipe is not None)
        took = time.perf_counter() - started
        verdict: Literal["passed", "failed"] = "failed" if differences else "passed"
        outcome = CaseOutcome(test.display, case.name, case.line, verdict, tuple(differences), took)
        outcomes.append(outcome)
    return outcomes


def run_all(
    files: Sequence[Path],
    *,
    jobs: int = 1,
    each: Callable[[CaseOutcome], None] | None = None,
) -> list[CaseOutcome]:
    """Run many test files, each file's cases in order; every outcome, in the order of files.

    Args:
        files: the test files.
        jobs: worker processes (1: in this process). A case sets the templates' clock,
            which is one per process, so cases run in parallel only in processes.
        each: called with each outcome as it comes (progress).
    """
    report = each or (lambda outcome: None)
    results: list[CaseOutcome] = []
    pool = None
    if jobs > 1 and len(files) > 1:
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_quiet_worker)
    with pool or nullcontext():
        for outcomes in (pool.map if pool else map)(run_test_file, files):
            for outcome in outcomes:
                report(outcome)
                results.append(outcome)
    return results


def _quiet_worker() -> None:
    """A worker reports outcomes, not the engine's warnings about the faults a test planted."""
    logger = logging.getLogger("practiceflow")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())


def junit_xml(outcomes: Sequence[CaseOutcome], path: str | Path) -> Path:
    """Write ``outcomes`` (from :func:`run_all`) to ``path`` as JUnit XML, one ``testsuite``
    per test file; returns the path written."""
    root = ET.Element("testsuites", name="practiceflow test")
    suites: dict[str, list[CaseOutcome]] = {}
    for outcome in outcomes:
        suites.setdefault(outcome.file, []).append(outcome)
    for file, cases in suites.items():
        suite = ET.SubElement(
            root,
            "testsuite",
            name=file,
            tests=str(len(cases)),
            failures=str(sum(case.result == "failed" for case in cases)),
            errors=str(sum(case.result == "error" for case in cases)),
            time=f"{sum(case.seconds for case in cases):.3f}",
        )
        for case in cases:
            item = ET.SubElement(
                suite,
                "testcase",
                classname=file,
                name=case.name or "(the test file)",
                file=file,
                line=str(case.line),
                time=f"{case.seconds:.3f}",
            )
            if case.result != "passed":
                tag = "failure" if case.result == "failed" else "error"
                first = case.lines[0] if case.lines else case.result
                detail = ET.SubElement(item, tag, message=first)
                detail.text = "\n".join(case.lines)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(target, encoding="utf-8", xml_declaration=True)
    return target


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
    """The recipe and module ``files`` (test files among them skipped) that no test file beside
    them, or in a ``tests/`` folder beside them or their parent, names; in the order given."""

    @functools.cache
    def named_in(folder: Path) -> frozenset[str]:
        tests = sorted(folder.glob("*" + TEST_SUFFIX)) if folder.is_dir() else []
        return frozenset(name for test in tests for name in _named_by(test))

    def tested(file: Path) -> bool:
        folders = (file.parent, file.parent / "tests", file.parent.parent / "tests")
        return any({str(file.resolve()), file.stem} & named_in(folder) for folder in folders)

    return [file for file in files if not file.name.endswith(TEST_SUFFIX) and not tested(file)]
