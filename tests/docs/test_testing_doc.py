"""docs/testing.md, run as written in an empty folder: each file block is written, each
``sh`` line is run (``practiceflow ...`` in-process, ``pytest ...`` in a subprocess), a
``# exits N`` comment is its exit code, and each ``text`` block after it holds lines of what
it printed, in order (``…`` stands for any text). ``<!-- edit: FILE: OLD => NEW -->`` is
a change the page asks the reader to make."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from practiceflow.cli import cli

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "testing.md"
PART = re.compile(
    r"<!-- file: (?P<file>\S+) -->\n```\w*\n(?P<content>.*?)```"
    r"|<!-- edit: (?P<edit>\S+): (?P<old>.+?) => (?P<new>.+?) -->"
    r"|```(?P<lang>sh|text)\n(?P<body>.*?)```",
    re.S,
)


def _run(line: str, folder: Path) -> tuple[int, str]:
    command, _, note = line.partition("#")
    wanted = int(note.split()[-1]) if "exits" in note else 0
    words = shlex.split(command)
    if words[0] == "practiceflow":
        result = CliRunner().invoke(cli, words[1:])
        code, out = result.exit_code, result.output
    else:
        assert words[0] == "pytest", line
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        done = subprocess.run(  # noqa: S603 - the page's own command
            [sys.executable, "-m", *words, "-p", "no:randomly"],
            cwd=folder, capture_output=True, text=True, env=env, check=False, timeout=300,
        )  # fmt: skip
        code, out = done.returncode, done.stdout + done.stderr
    assert code == wanted, f"{line}: exit {code}\n{out}"
    return code, out


def _holds(out: str, expected: str) -> None:
    lines = out.splitlines()
    at = 0
    for want in expected.strip().splitlines():
        pattern = re.compile(".*?".join(re.escape(part) for part in want.split("…")))
        while at < len(lines) and not pattern.search(lines[at]):
            at += 1
        assert at < len(lines), f"not printed (in order): {want!r}\n---\n{out}"
        at += 1


def test_every_example_of_the_testing_guide_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("PRACTICEFLOW_"):
            monkeypatch.delenv(name)
    text = PAGE.read_text(encoding="utf-8")
    out = ""
    ran = 0
    workflow: dict[str, object] = {}
    for part in PART.finditer(text):
        if part["file"]:
            path = tmp_path / part["file"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(part["content"], encoding="utf-8")
            if path.suffix == ".yml":
                workflow = yaml.safe_load(part["content"])
        elif part["edit"]:
            path = tmp_path / part["edit"]
            content = path.read_text(encoding="utf-8")
            assert part["old"] in content
            path.write_text(content.replace(part["old"], part["new"], 1), encoding="utf-8")
        elif part["lang"] == "sh":
            out = ""
            for line in part["body"].strip().splitlines():
                _, printed = _run(line, tmp_path)
                out += printed
                ran += 1
        else:
            _holds(out, part["body"])
        if workflow:  # the CI job's command, run where the page has got to
            steps = workflow["jobs"]["test"]["steps"]  # type: ignore[index]
            (command,) = [s["run"] for s in steps if "practiceflow test" in s.get("run", "")]
            _run(command, tmp_path)
            assert (tmp_path / "reports" / "practiceflow.xml").exists()
            workflow = {}
    assert ran >= 8
    cassette = (tmp_path / "recipes/tests/cassettes/welcome.yaml").read_text(encoding="utf-8")
    assert "exchanges:" in cassette
