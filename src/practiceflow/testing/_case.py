"""The test file format (``*.test.yaml``): what it tests, and cases, each ``given`` the world
and what to ``expect``; checked against ``manifests/test.schema.json``, every problem naming
file, line and field. ``docs/testing.md`` is the guide to every key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft202012Validator

from practiceflow.errors import Issue, ManifestError
from practiceflow.manifest.loader import read_located
from practiceflow.manifest.validation import issues_for, meta_schema
from practiceflow.manifest.yamlpos import Located

#: The suffix that marks a test file.
TEST_SUFFIX: Final = ".test.yaml"
#: The clock of a case that does not set ``given.now``.
DEFAULT_NOW: Final = "2026-01-05T09:00:00Z"


@dataclass(frozen=True)
class Answer:
    """One answer written in a test (``given.answers[i]``): the request it answers (``query``
    a subset), the answer or fault (``drop``: a timeout; ``refuse``: never sent), how many
    requests it answers, and its ``file:line``."""

    method: str
    path: str
    query: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    drop: bool = False
    refuse: bool = False
    times: int = 1
    where: str = ""

    def describe(self) -> str:
        """``METHOD /path`` and the fault, for messages."""
        fault = " (dropped)" if self.drop else " (refused)" if self.refuse else ""
        return f"{self.method} {self.path} -> {self.status}{fault}"


@dataclass(frozen=True)
class TestCase:
    """One case of a test file: its name, ``given`` and ``expect`` as written, the answers
    parsed, the cassette resolved against the file's folder, the clock's start (UTC), and its
    index and line in the file."""

    __test__ = False  # not a pytest class, whatever its name

    name: str
    given: dict[str, Any]
    expect: dict[str, Any]
    answers: tuple[Answer, ...]
    cassette: Path | None
    now: datetime
    index: int
    line: int


@dataclass(frozen=True)
class TestFile:
    """A loaded test file: its path and name in messages, the recipe (resolved) or module (a
    key or file) it tests, the folder of the user's own modules (resolved), and its cases."""

    __test__ = False

    path: Path
    display: str
    recipe: Path | None
    module: str | None
    modules: Path | None
    cases: tuple[TestCase, ...]

    def module_path(self) -> Path | None:
        """The module file it tests, when ``module`` names a file rather than a key."""
        if self.module is None or not self.module.endswith((".yaml", ".yml")):
            return None
        return (self.path.parent / self.module).resolve()


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    return Draft202012Validator(meta_schema("test"))


def _parse_now(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    return moment.astimezone(UTC)


def _answers(raw: Any, file: str, located: Located, at: tuple[str | int, ...]) -> list[Answer]:
    answers = []
    for index, item in enumerate(raw or []):
        line = located.where((*at, index))[0]
        headers = {str(k): str(v) for k, v in (item.get("headers") or {}).items()}
        answers.append(
            Answer(
                str(item["method"]).upper(),
                str(item["path"]),
                dict(item.get("query") or {}),
                int(item.get("status", 200)),
                headers,
                item.get("body"),
                bool(item.get("drop", False)),
                bool(item.get("refuse", False)),
                int(item.get("times", 1)),
                f"{file}:{line}",
            )
        )
    return answers


def _kind_issues(data: Mapping[str, Any], file: str, located: Located) -> list[Issue]:
    """Keys of ``given``/``expect`` that make no sense for what the file tests."""
    issues = []
    tested, other = ("recipe", "module") if "recipe" in data else ("module", "recipe")
    wrong = {"input", "delivery", "poll"} if tested == "recipe" else {"event", "overrides", "vars"}
    for index, case in enumerate(data.get("cases") or []):
        given = case.get("given") or {}
        for key in sorted(set(given) & wrong):
            line, column = located.where(("cases", index, "given", key), key=True)
            message = f"got {key!r} in a test of a {tested}; it belongs to a test of a {other}"
            issues.append(Issue(file, line, column, f"cases[{index}].given.{key}", message))
        if "delivery" in given and "poll" in given:
            line, column = located.where(("cases", index, "given", "poll"), key=True)
            message = "got both delivery and poll; a case tests one way of receiving"
            issues.append(Issue(file, line, column, f"cases[{index}].given.poll", message))
    return issues


def _path_issues(raw: Mapping[str, Any], base: Path, file: str, located: Located) -> list[Issue]:
    issues = []
    named = {"recipe": raw.get("recipe"), "modules": raw.get("modules")}
    module = raw.get("module")
    if isinstance(module, str) and module.endswith((".yaml", ".yml")):
        named["module"] = module
    for key, value in named.items():
        if isinstance(value, str) and not (base / value).exists():
            line, column = located.where((key,))
            message = f"got {value!r}; no such file or folder beside {file}"
            issues.append(Issue(file, line, column, key, message))
    return issues


def load_test_file(path: str | Path, *, display: str | None = None) -> TestFile:
    """Read and check a ``*.test.yaml`` file (``display``: its name in messages).

    Raises:
        ManifestError: with every problem, each naming the file, line and field.
    """
    target = Path(path)
    located, file = read_located(target, display or str(path))
    return build_test_file(located, target, file)


def build_test_file(located: Located, path: Path, file: str) -> TestFile:
    """Check a test document (read from ``path``, or built in code) and read it.

    Args:
        located: the document and its positions (empty positions for one built in code).
        path: the file it is (or stands for): relative paths in it are read from its folder.
        file: its name in messages.

    Raises:
        ManifestError: with every problem, each naming the file, line and field.
    """
    data = located.data
    if not isinstance(data, Mapping):
        message = "expected a mapping with recipe (or module) and cases at the top"
        raise ManifestError([Issue(file, 1, 1, "", message)])
    issues = issues_for(_validator(), data, file=file, located=located)
    if not issues:
        issues += _kind_issues(data, file, located)
        issues += _path_issues(data, path.parent, file, located)
    if issues:
        raise ManifestError(issues)
    base = path.parent
    cases = []
    for index, raw in enumerate(data["cases"]):
        given = dict(raw.get("given") or {})
        at = ("cases", index, "given", "answers")
        cassette = base / given["cassette"] if "cassette" in given else None
        cases.append(
            TestCase(
                raw["name"],
                given,
                dict(raw["expect"]),
                tuple(_answers(given.get("answers"), file, located, at)),
                cassette,
                _parse_now(str(given.get("now", DEFAULT_NOW))),
                index,
                located.where(("cases", index))[0],
            )
        )
    recipe = (base / data["recipe"]).resolve() if "recipe" in data else None
    modules = (base / data["modules"]).resolve() if "modules" in data else None
    return TestFile(path, file, recipe, data.get("module"), modules, tuple(cases))
