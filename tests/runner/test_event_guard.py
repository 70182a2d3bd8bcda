"""An exception no step caught is recorded on its run and the service goes on; a run that
keeps failing, or whose every start ends the process, is quarantined: held ``in_doubt``
with its reason, listed as needing attention, never started again but by a person.

The faults are injected by the test: a local step registered here raises what no step
catches (``RecursionError``, as a runaway template used to), and a process "dies" at a
journal point by raising :class:`Killed`, a ``BaseException`` that no boundary of the
product catches: what was committed stays, nothing else happens, as after a SIGKILL. Each
"process" is a new :class:`Service` on the same store. Both store backends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pgserver import shared_server
from practiceflow.cli import cli
from practiceflow.console.data import ConsoleContext, attention_view, run_view
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import LOCAL_STEPS, Runner, local_step, validate_recipe
from practiceflow.runner.local import LocalContext
from practiceflow.runner.quarantine import QUARANTINE_AFTER
from practiceflow.service.event_guard import SKIP_AFTER
from practiceflow.service.loop import Service
from practiceflow.state import RunRecord, StateStore, open_store
from runner._support import write_recipe

PRACTICE = "faults"
CALLS: list[Any] = []
#: Set by a test to make the exploding step raise whatever its input says ("the cause").
FIXED: list[bool] = []


class Killed(BaseException):
    """The process died here (no ``except Exception`` of the product catches it)."""


@pytest.fixture(autouse=True)
def exploding_step() -> Iterator[None]:
    schema = {"type": "object", "properties": {"boom": {"type": "boolean"}}}

    @local_step("explode_for_test", "Raise when told", schema, {"ok": True})
    def explode(data: Mapping[str, Any], ctx: LocalContext) -> dict[str, Any]:
        CALLS.append((ctx.run_id, data.get("boom")))
        if data.get("boom") and not FIXED:
            raise RecursionError("maximum recursion depth exceeded")
        return {"ok": True}

    CALLS.clear()
    FIXED.clear()
    yield
    LOCAL_STEPS.pop("explode_for_test")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "state.db")
    return shared_server().new_schema(prefix="faults")


@pytest.fixture
def store(store_url: str) -> Iterator[StateStore]:
    with open_store(store_url) as opened:
        yield opened


def _runners(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore, on_point: Any = None
) -> list[Runner]:
    """``first`` explodes when the event says so; ``second``, on the same trigger, never."""
    steps = "  - id: x\n    use: explode_for_test\n    with: {boom: '{{ trigger.boom }}'}\n"
    first = validate_recipe(write_recipe(tmp_path, steps, name="first"), registry=registry)
    plain = "  - id: y\n    use: explode_for_test\n    with: {boom: false}\n"
    second = validate_recipe(write_recipe(tmp_path, plain, name="second"), registry=registry)
    return [
        Runner(recipe, store, None, practice=PRACTICE, on_point=on_point)
        for recipe in (first, second)
    ]


def _service(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore, *, alone: bool = False
) -> Service:
    """A new process's service: both recipes, or ``first`` alone."""
    runners = _runners(tmp_path, registry, store)
    return Service(runners=runners[:1] if alone else runners, store=store)


def _runs(store: StateStore) -> dict[tuple[str, str], RunRecord]:
    return {(run.recipe, run.event_id): run for run in store.list_runs(practice=PRACTICE)}


def _booms(run_id: str) -> int:
    return sum(1 for called, boom in CALLS if called == run_id and boom)


def test_a_run_that_keeps_raising_is_quarantined_after_n_starts_and_the_service_goes_on(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore
):
    store.record_event(PRACTICE, "test_event", "e", "bad", {"boom": True})
    store.record_event(PRACTICE, "test_event", "e", "good", {"boom": False})
    service = _service(tmp_path, registry, store)
    outcomes: list[Any] = []
    service.on_outcome = outcomes.append

    assert service.run_once() >= 2  # no exception escapes

    runs = _runs(store)
    bad = runs[("first", "bad")]
    assert bad.status == "in_doubt"
    assert _booms(bad.run_id) == QUARANTINE_AFTER  # started N times, each failing
    assert bad.error["kind"] == "quarantined"
    assert bad.error["starts"] == QUARANTINE_AFTER
    assert bad.error["last_error"]["kind"] == "bug"
    reason = bad.error["reason"]
    assert f"started {QUARANTINE_AFTER} times without ending" in reason
    assert "RecursionError: maximum recursion depth exceeded" in reason
    assert f"practiceflow runs retry {bad.run_id}" in reason
    assert f"practiceflow runs cancel {bad.run_id} --reason" in reason
    # The other recipe on the same event, and the next event, ran.
    assert runs[("second", "bad")].status == "succeeded"
    assert runs[("first", "good")].status == "succeeded"
    assert runs[("second", "good")].status == "succeeded"
    assert store.pending_events(PRACTICE, 10) == []
    assert [o.status for o in outcomes if o.run_id == bad.run_id][-1] == "in_doubt"

    # Never started again, by this process or the next one.
    calls = len(CALLS)
    assert service.run_once() == 0
    assert _service(tmp_path, registry, store).run_once() == 0
    assert len(CALLS) == calls
    assert _runs(store)[("first", "bad")].status == "in_doubt"


def _quarantined(tmp_path: Path, registry: ModuleRegistry, store: StateStore) -> RunRecord:
    store.record_event(PRACTICE, "test_event", "e", "bad", {"boom": True})
    _service(tmp_path, registry, store).run_once()
    run = _runs(store)[("first", "bad")]
    assert run.error["kind"] == "quarantined"
    return run


def test_a_quarantined_run_is_listed_as_needing_attention_with_its_reason(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore, store_url: str
):
    run = _quarantined(tmp_path, registry, store)
    reason = run.error["reason"]
    cli_runner = CliRunner(env={"PRACTICEFLOW_STATE": store_url})

    listed = cli_runner.invoke(cli, ["runs", "list", "--status", "in_doubt", "--json"])
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.stdout)
    assert (row["run_id"], row["needs_attention"]) == (run.run_id, True)
    assert row["error"]["reason"] == reason
    wide = CliRunner(env={"PRACTICEFLOW_STATE": store_url, "COLUMNS": "160"})
    table = wide.invoke(cli, ["runs", "list", "--status", "in_doubt"])
    assert "in_doubt (quarantined)" in table.stdout  # at 80 columns the status wraps
    shown = cli_runner.invoke(cli, ["runs", "show", run.run_id])
    assert "quarantined: started" in " ".join(shown.stdout.split())

    ctx = ConsoleContext(store=store, practice=PRACTICE)
    (attention,) = attention_view(ctx)
    assert attention["run_id"] == run.run_id
    assert attention["quarantined"] is True
    assert attention["why_in_doubt"] == reason
    view = run_view(ctx, run.run_id)
    assert view is not None
    assert view["advice"] == reason
    # What /metrics reads: the run counts among the practice's in_doubt runs.
    assert store.practice_counts()[PRACTICE].runs["in_doubt"] == 1


def test_a_person_retries_a_quarantined_run_once_the_cause_is_fixed(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore
):
    run = _quarantined(tmp_path, registry, store)
    first = _runners(tmp_path, registry, store)[0]
    FIXED.append(True)

    outcome = first.resume_run(run.run_id, retry_failed=True)  # what `runs retry` does

    assert outcome.status == "succeeded"
    again = store.get_run(run.run_id)
    assert again is not None
    assert (again.status, again.starts) == ("succeeded", 0)


def test_a_person_cancels_a_quarantined_run_with_a_reason(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore, store_url: str
):
    run = _quarantined(tmp_path, registry, store)
    cli_runner = CliRunner(env={"PRACTICEFLOW_STATE": store_url})

    result = cli_runner.invoke(cli, ["runs", "cancel", run.run_id, "--reason", "bad data"])

    assert result.exit_code == 0, result.output
    cancelled = store.get_run(run.run_id)
    assert cancelled is not None
    assert cancelled.status == "cancelled"
    assert cancelled.error["was"]["kind"] == "quarantined"
    listed = cli_runner.invoke(cli, ["runs", "list", "--status", "in_doubt", "--json"])
    assert json.loads(listed.stdout) == []


def test_a_run_whose_every_start_killed_the_process_is_quarantined_at_the_next_start(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore
):
    store.record_event(PRACTICE, "test_event", "e", "deadly", {"boom": False})
    store.record_event(PRACTICE, "test_event", "e", "later", {"boom": False})

    def die(label: str) -> None:
        if label == "pending:x":
            raise Killed(label)

    for _ in range(QUARANTINE_AFTER):  # serve restarts, resumes the run, dies again
        runners = _runners(tmp_path, registry, store, on_point=die)[:1]
        with pytest.raises(Killed):
            Service(runners=runners, store=store).run_once()
    assert CALLS == []  # each died before the step ran
    deadly = _runs(store)[("first", "deadly")]
    assert (deadly.status, deadly.starts) == ("running", QUARANTINE_AFTER)

    _service(tmp_path, registry, store, alone=True).run_once()  # dies if it starts the run

    runs = _runs(store)
    held = runs[("first", "deadly")]
    assert held.status == "in_doubt"
    assert held.error["kind"] == "quarantined"
    assert "without recording an error" in held.error["reason"]
    assert "killed, out of memory, or crashed" in held.error["reason"]
    assert runs[("first", "later")].status == "succeeded"  # the events behind it ran
    assert [called for called, _ in CALLS] == [runs[("first", "later")].run_id]
    assert store.pending_events(PRACTICE, 10) == []


def test_a_resumed_run_that_raises_is_started_again_by_serve_until_quarantined(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore
):
    # A run left `running` whose event is handled (a `runs retry` that was killed): only
    # the resume path brings it back, and serve keeps doing so until it is quarantined.
    store.record_event(PRACTICE, "test_event", "e", "bad", {"boom": True})
    service = _service(tmp_path, registry, store, alone=True)
    service.idle = 0.01
    (event,) = store.pending_events(PRACTICE, 10)
    run_id, _ = store.start_run(PRACTICE, "first", "bad", origin=service.runners[0].origin(event))
    store.count_start(run_id)
    store.mark_event_handled(PRACTICE, event.source, event.event_id)

    service.run(max_loops=QUARANTINE_AFTER + 2)

    run = store.get_run(run_id)
    assert run is not None
    assert run.status == "in_doubt"
    assert run.error["kind"] == "quarantined"
    assert _booms(run_id) == QUARANTINE_AFTER - 1  # the killed start counted too


def test_a_run_stopped_in_order_any_number_of_times_is_not_quarantined(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore
):
    store.record_event(PRACTICE, "test_event", "e", "slow", {"boom": False})
    for _ in range(QUARANTINE_AFTER + 1):  # serve stopped by SIGTERM before the step
        service = _service(tmp_path, registry, store, alone=True)
        service.stop.set()
        (event,) = store.pending_events(PRACTICE, 10)
        outcome = service.runners[0].run_event(event)
        assert outcome is not None
        assert outcome.status == "running"
        assert _runs(store)[("first", "slow")].starts == 0

    _service(tmp_path, registry, store, alone=True).run_once()
    assert _runs(store)[("first", "slow")].status == "succeeded"


def test_an_event_whose_failure_cannot_be_recorded_is_skipped_by_the_process(
    tmp_path: Path, registry: ModuleRegistry, store: StateStore, monkeypatch: pytest.MonkeyPatch
):
    store.record_event(PRACTICE, "test_event", "e", "bad", {"boom": True})
    service = _service(tmp_path, registry, store, alone=True)

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the store refuses (a fault of the test)")

    monkeypatch.setattr(store, "start_run", refuse)
    for _ in range(SKIP_AFTER):
        assert service.drain() == 1
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
