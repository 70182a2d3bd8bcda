"""One event's unexpected exception fails its run, recorded; the service goes on.

The fault is injected by the test: a local step registered here raises what no step
catches (``RecursionError``, as a runaway template used to). The other events, and the
other recipe on the same trigger, run; the failed run carries its reason and is not run
again; an event whose failure cannot even be recorded is quarantined after a few tries.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import LOCAL_STEPS, Runner, local_step, validate_recipe
from practiceflow.runner.faults import QUARANTINE_AFTER
from practiceflow.runner.local import LocalContext
from practiceflow.runner.service import Service
from practiceflow.state import StateStore
from runner._support import write_recipe

PRACTICE = "faults"
CALLS: list[Any] = []


@pytest.fixture(autouse=True)
def exploding_step() -> Iterator[None]:
    schema = {"type": "object", "properties": {"boom": {"type": "boolean"}}}

    @local_step("explode_for_test", "Raise when told", schema, {"ok": True})
    def explode(data: Mapping[str, Any], ctx: LocalContext) -> dict[str, Any]:
        CALLS.append((ctx.run_id, data.get("boom")))
        if data.get("boom"):
            raise RecursionError("maximum recursion depth exceeded")
        return {"ok": True}

    CALLS.clear()
    yield
    LOCAL_STEPS.pop("explode_for_test")


def _service(tmp_path: Path, registry: ModuleRegistry, store: StateStore) -> Service:
    steps = "  - id: x\n    use: explode_for_test\n    with: {boom: '{{ trigger.boom }}'}\n"
    first = validate_recipe(write_recipe(tmp_path, steps, name="first"), registry=registry)
    plain = "  - id: y\n    use: explode_for_test\n    with: {boom: false}\n"
    second = validate_recipe(write_recipe(tmp_path, plain, name="second"), registry=registry)
    runners = [Runner(recipe, store, None, practice=PRACTICE) for recipe in (first, second)]
    return Service(runners=runners, store=store)


def test_an_exception_fails_that_run_recorded_and_the_service_goes_on(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore
):
    store.record_event(PRACTICE, "test_event", "e", "bad", {"boom": True})
    store.record_event(PRACTICE, "test_event", "e", "good", {"boom": False})
    service = _service(tmp_path, registry, store)
    outcomes: list[Any] = []
    service.on_outcome = outcomes.append

    assert service.run_once() == 2  # no exception escapes

    runs = {(run.recipe, run.event_id): run for run in store.list_runs(practice=PRACTICE)}
    bad = runs[("first", "bad")]
    assert bad.status == "failed"
    assert bad.error["kind"] == "bug"
    assert "RecursionError" in bad.error["message"]
    # The other recipe on the same event, and the next event, ran.
    assert runs[("second", "bad")].status in ("succeeded", "failed")
    assert runs[("first", "good")].status == "succeeded"
    assert runs[("second", "good")].status == "succeeded"
    assert store.pending_events(PRACTICE, 10) == []
    assert {outcome.status for outcome in outcomes} >= {"failed", "succeeded"}

    # Never retried in a loop: another pass runs nothing.
    calls = len(CALLS)
    assert service.run_once() == 0
    assert len(CALLS) == calls


def test_an_event_whose_failure_cannot_be_recorded_is_quarantined(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore, monkeypatch: pytest.MonkeyPatch
):
    store.record_event(PRACTICE, "test_event", "e", "bad", {"boom": True})
    service = _service(tmp_path, registry, store)
    service.runners = service.runners[:1]

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the store refuses (a fault of the test)")

    monkeypatch.setattr(store, "start_run", refuse)
    for _ in range(QUARANTINE_AFTER):
        service.drain()
    assert service.guard.skips("test_event/bad")
    calls = len(CALLS)
    assert service.drain() == 0  # skipped, so an idle service sleeps instead of spinning
    assert len(CALLS) == calls
    assert [event.event_id for event in store.pending_events(PRACTICE, 10)] == ["bad"]


def test_a_recursive_template_at_run_time_fails_its_step_not_the_service(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore
):
    macro = "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(trigger.boom) }}"
    steps = f'  - id: x\n    use: explode_for_test\n    with: {{boom: "{macro}"}}\n'
    recipe = validate_recipe(write_recipe(tmp_path, steps, name="macro"), registry=registry)
    store.record_event(PRACTICE, "test_event", "e", "deep", {"boom": "k-1"})
    store.record_event(PRACTICE, "test_event", "e", "next", {"boom": "k-2"})
    service = Service(runners=[Runner(recipe, store, None, practice=PRACTICE)], store=store)
    assert service.run_once() == 2
    runs = store.list_runs(practice=PRACTICE)
    assert [run.status for run in runs] == ["failed", "failed"]
    for run in runs:
        (step,) = [s for s in store.get_steps(run.run_id) if s.step_id == "x"]
        assert step.status == "failed"
        assert "macro calls nest deeper than" in step.error["message"]
    assert CALLS == []  # nothing ran with a half-rendered input
