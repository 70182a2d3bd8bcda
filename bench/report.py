"""Run every benchmark in ``bench/`` and write ``bench/REPORT.md``.

Each benchmark is run as its own process (one at a time, bounded by ``TIMEOUT`` seconds)
and its output is kept whole in the report. Figures are read from the lines a benchmark
prints: ``RESULT {json}`` lines (name, figure, unit, baseline, target, measured, ok: true,
false, or null for a figure judged against no target), or,
for benchmarks that print prose, every line that states a ratio. Every figure is a ratio
against a baseline measured in the same run, on the machine named at the top.

Usage: ``python bench/report.py`` (``make bench``); ``--only NAME ...`` runs some of them
and keeps the other benchmarks' rows and outputs from the last report.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPORT = HERE / "REPORT.md"
TIMEOUT = 900
#: Benchmarks that need longer than ``TIMEOUT`` (several runs of minutes each).
TIMEOUTS = {"many_practices": 3600}
#: Lines of prose benchmarks that carry their figure.
RATIO_LINE = re.compile(r"ratio|/ script|x best|worst ratio", re.IGNORECASE)


def _benches(only: list[str]) -> list[Path]:
    # A leading underscore: a helper another benchmark runs (bench/_lean_poller.py).
    found = sorted(
        path
        for path in HERE.glob("*.py")
        if path.name != Path(__file__).name and not path.name.startswith("_")
    )
    return [path for path in found if not only or path.stem in only]


def _run(path: Path) -> tuple[int | None, str, float]:
    started = time.perf_counter()
    limit = TIMEOUTS.get(path.stem, TIMEOUT)
    try:
        done = subprocess.run(
            [sys.executable, str(path)],
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
            cwd=HERE.parent,
        )
        output, code = done.stdout + (done.stderr if done.returncode else ""), done.returncode
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout if isinstance(exc.stdout, str) else ""
        output, code = partial + f"\n(stopped after {limit} s)", None
    return code, output, time.perf_counter() - started


def _machine() -> list[str]:
    return [
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {os.cpu_count()} CPUs, {platform.machine()}, {platform.platform()}",
        f"- python: {platform.python_implementation()} {platform.python_version()}",
    ]


def _last_report(exclude: set[str]) -> tuple[list[str], list[str]]:
    """The rows and output sections of the last report, but those of ``exclude``."""
    if not REPORT.is_file():
        return [], []
    text = REPORT.read_text(encoding="utf-8")
    head, _, outputs = text.partition("## Output of each benchmark")
    rows = [
        line
        for line in head.splitlines()
        if line.startswith("| ")
        and not line.startswith(("| bench ", "|---"))
        and line.split("|")[1].strip() not in exclude
    ]
    sections = [
        "### " + part.rstrip() + "\n"
        for part in outputs.split("\n### ")[1:]
        if part.split(" ", 1)[0] not in exclude
    ]
    return rows, sections


def main(argv: list[str]) -> int:
    """Run the benchmarks, write the report, print where it is."""
    only = argv[argv.index("--only") + 1 :] if "--only" in argv else []
    rows: list[str] = []
    sections: list[str] = []
    failed = 0
    for path in _benches(only):
        print(f"== {path.name}", flush=True)
        code, output, seconds = _run(path)
        print(output, flush=True)
        failed += code != 0
        results = [
            json.loads(line[len("RESULT ") :])
            for line in output.splitlines()
            if line.startswith("RESULT ")
        ]
        for result in results:
            ok = result.get("ok")
            verdict = "figure only" if ok is None else "met" if ok else "**not met**"
            rows.append(
                f"| {path.stem} | {result['name']} | {result['figure']} {result['unit']} | "
                f"{result['baseline']} | {result['target']} | {verdict} |"
            )
        if not results:
            for line in output.splitlines():
                if RATIO_LINE.search(line):
                    text = " ".join(line.split()).replace("|", "/")
                    verdict = "**not met**" if "NOT" in line else "see output"
                    rows.append(
                        f"| {path.stem} | {text} | (in the line) | same run | "
                        f"(in the line) | {verdict} |"
                    )
        shown = "\n".join(line for line in output.splitlines() if not line.startswith("RESULT "))
        status = "ok" if code == 0 else f"exit {code}"
        sections.append(
            f"### {path.stem} ({status}, {seconds:.0f} s)\n\n```\n{shown.strip()}\n```\n"
        )
    lines = [
        "# Benchmark report",
        "",
        "Generated by `bench/report.py` (`make bench`); do not edit by hand. Every figure is a",
        "ratio against a baseline measured in the same run on this machine.",
        "",
        *_machine(),
        *([f"- this run: {', '.join(only)}; the other rows are the last report's"] if only else []),
        "",
        "| bench | figure | value | baseline | target | verdict |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "## Output of each benchmark",
        "",
        *sections,
    ]
    if only:
        kept_rows, kept_sections = _last_report(exclude={path.stem for path in _benches(only)})
        rows = sorted([*kept_rows, *rows], key=lambda row: row.split("|")[1].strip())
        sections = sorted([*kept_sections, *sections])
        lines[
            lines.index("|---|---|---|---|---|---|") + 1 : lines.index(
                "## Output of each benchmark"
            )
            - 1
        ] = rows
        lines[lines.index("## Output of each benchmark") + 2 :] = sections
    REPORT.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {REPORT}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
