"""One recorded exchange, every runtime: each shipped module's cassette (default and hostile
sandbox) replayed through every place the module runs, as that place's user drives it.

A cell is green when the runtime sent exactly the recorded requests (method, path, query,
body) and its user saw the same output (in the view every runtime may show: secrets and
personal fields masked), or differed only in a declared way:

* ``run``, ``worker``, ``mcp``: the runner's run-unique marker in the field the module
  declares (``read_back.marker``); the request is compared without it, and the marker
  must be there;
* ``openapi``: a platform client sends the operation's one request: the reads only the
  engine makes (checks, the read-back of an empty create answer, further pages) are not
  sent, and where the export declares no ``pageNumber`` it reads page one only (noted);
  its user sees the API's answer, not the module's mapped output.

The table (``-s`` or the terminal summary) shows every cell; a red cell fails its row, and a
shipped module without a cassette fails.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance._runtimes import (
    Case,
    Outcome,
    dumps,
    poll_trigger,
    run_as_mcp_tool,
    run_as_recipe_step,
    run_as_worker_job,
    run_with_action,
    run_with_openapi,
    shown,
)
from conformance.table import RUNTIMES, record_row, render
from practiceflow.hooks.read_backs import marker_in
from practiceflow.manifest import default_registry
from practiceflow.sandbox.variants import PRESETS
from practiceflow.state import open_store
from practiceflow.testing import load_cassette

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"
REGISTRY = default_registry()
MODULES = sorted([*REGISTRY.actions, *REGISTRY.triggers])


def _judge(
    name: str, outcome: Outcome, reference: Outcome, compare: Any = None
) -> tuple[str, list[str]]:
    """The cell's text and, when red, why."""
    problems: list[str] = []
    kind, value = outcome.result
    ref_kind, ref_value = reference.result
    if (kind, kind == "error" and value) != (ref_kind, ref_kind == "error" and ref_value):
        said = f" ({outcome.detail[:200]})" if outcome.detail else ""
        problems.append(
            f"ended {kind} {dumps(value)}{said}; action ended {ref_kind} {dumps(ref_value)}"
        )
    elif kind == "ok" and compare is not None and compare(value) != compare(ref_value):
        problems.append(f"output {dumps(compare(value))} != action's {dumps(compare(ref_value))}")
    problems += outcome.mismatches
    if outcome.unplayed and not outcome.declared:
        problems += [f"not sent: {text}" for text in outcome.unplayed]
    if problems:
        return f"RED: {problems[0][:160]}", problems
    if outcome.declared:
        return f"ok*: {'; '.join(outcome.declared)}", []
    return "ok", []


def _action_row(case: Case, openapi: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    module = REGISTRY.actions[case.cassette.module]
    data = case.cassette.input

    def view(output: Any) -> Any:
        return shown(module, data, output)

    reference = _guarded(run_with_action, case)
    cells: dict[str, str] = {}
    problems: list[str] = []
    cells["action"], found = _judge("action", reference, reference)
    problems += found
    runtimes = {"run": run_as_recipe_step, "worker": run_as_worker_job, "mcp": run_as_mcp_tool}
    for name, runtime in runtimes.items():
        outcome = _guarded(runtime, case)
        cells[name], found = _judge(name, outcome, reference, view)
        found += _marker_problems(case, outcome)
        if found and not cells[name].startswith("RED"):
            cells[name] = f"RED: {found[0]}"
        problems += [f"{name}: {line}" for line in found]
    outcome = _guarded(lambda case: run_with_openapi(case, openapi), case)
    cells["openapi"], found = _judge("openapi", outcome, reference)
    problems += [f"openapi: {line}" for line in found]
    return cells, problems


def _guarded(runtime: Callable[[Case], Outcome], case: Case) -> Outcome:
    """The runtime's outcome; an exception it let out is a red cell, not a stopped row."""
    try:
        return runtime(case)
    except Exception as exc:
        found: BaseException = exc
        while isinstance(found, BaseExceptionGroup) and found.exceptions:
            found = found.exceptions[0]  # a task group's first error is the one to read
        text = f"{type(found).__name__}: {found}"
        return Outcome(("error", f"crashed: {type(found).__name__}"), detail=text)


def _marker_problems(case: Case, outcome: Outcome) -> list[str]:
    """The declared difference must be real: a marked module's write carries the marker."""
    declared = REGISTRY.actions[case.cassette.module].read_back
    field = declared.marker_field if declared is not None else None
    if field is None or outcome.result[0] != "ok":
        return []
    writes = [r for r in outcome.sent if r.method == "POST" and isinstance(r.body, Mapping)]
    if any(marker_in(r.body.get(field)) for r in writes):
        return []
    return [f"the write carries no run marker in {field}"]


def _trigger_row(case: Case, pg_url: str) -> tuple[dict[str, str], list[str]]:
    with open_store(str(case.folder / "poll.db")) as store:
        reference = poll_trigger(case, store)
    with open_store(pg_url) as store:
        worker = poll_trigger(case, store)
    cells: dict[str, str] = {}
    problems: list[str] = []
    cells["run"], found = _judge("run", reference, reference)
    problems += found
    cells["worker"], found = _judge("worker", worker, reference, lambda events: events)
    problems += [f"worker: {line}" for line in found]
    for name in ("action", "mcp", "openapi"):
        cells[name] = "n/a"
    return cells, problems


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("key", MODULES)
def test_every_runtime_sends_the_recorded_requests_and_shows_the_same_output(
    key: str,
    preset: str,
    tmp_path: Path,
    conformance_pg_url: str,
    openapi_export: Mapping[str, Any],
    request: pytest.FixtureRequest,
) -> None:
    path = CASSETTES / preset / f"{key}.yaml"
    assert path.is_file(), f"{key} has no cassette for the {preset} sandbox: run make cassettes"
    cassette = load_cassette(path)
    assert (cassette.module, cassette.preset) == (key, preset)
    case = Case(cassette, tmp_path, conformance_pg_url)
    if cassette.kind == "action":
        cells, problems = _action_row(case, openapi_export)
    else:
        cells, problems = _trigger_row(case, conformance_pg_url)
    row = f"{preset}/{key}"
    record_row(request.config, row, cells)
    print("\n" + render({row: cells}))
    assert not problems, f"{row}:\n" + "\n".join(problems)


def test_every_cassette_belongs_to_a_shipped_module() -> None:
    stray = [
        str(path.relative_to(CASSETTES))
        for path in sorted(CASSETTES.glob("*/*.yaml"))
        if path.parent.name not in PRESETS or path.stem not in MODULES
    ]
    assert stray == []


def test_the_table_says_which_runtime_differs_and_why() -> None:
    rows = {
        "default/a": {
            "action": "ok",
            "run": "RED: not sent: GET /x",
            "openapi": "ok*: cannot page",
        },
    }
    text = render(rows)
    assert "default/a" in text
    assert "RED" in text
    assert "default/a run: not sent: GET /x" in text
    assert "default/a openapi: cannot page" in text
    assert "1 rows, 1 red cell(s)" in text
    assert RUNTIMES == ("action", "run", "worker", "mcp", "openapi")
