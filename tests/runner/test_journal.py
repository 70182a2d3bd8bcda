"""What the journal holds while a step runs: a write is journaled ``pending`` and ``sent``
(one fsynced commit) before its request leaves, and its success while the next request is
in flight (or with the next write's ``sent``, or the run's end, whichever comes first); a
read, safe to send again, is journaled after its answer, with the run's next commit (the
next write's ``sent``, or the run's end with its event marked handled); both read the same
in the history."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pgserver import shared_server
from practiceflow.api import Client
from practiceflow.errors import StoreError
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import RECONCILER, TRIGGER_STEP, Runner, validate_recipe
from practiceflow.state import StateStore, StepStatus, open_store
from practiceflow.testing import SandboxHandle
from runner._support import write_recipe

pytestmark = pytest.mark.integration

STEPS = """\
  - id: client
    use: create_client
    with:
      entityType: Company
      entityName: "Journal {{ trigger.n }}"
      externalSystemID: "journal-{{ trigger.n }}"
  - id: ids
    use: get_client_integrations
    with: {entityKey: "{{ trigger.key or steps.client.entityKey }}"}
"""


def _runner(
    tmp_path: Path,
    registry: ModuleRegistry,
    store: StateStore,
    client: Client,
    payload: Any,
    seen: dict[str, str | None],
    steps: str = STEPS,
    watch: str | None = None,
) -> Runner:
    """A runner on one recorded event that notes at each point the journaled status of the
    point's step (or of step ``watch``)."""
    recipe = validate_recipe(write_recipe(tmp_path, steps), registry=registry)
    practice = client.settings.client_id
    store.record_event(practice, recipe.trigger.key, "x", "ev-1", payload)

    def point(label: str) -> None:
        runs = store.list_runs()
        if not runs:  # a new run is created by its first commit
            seen[label] = "no run"
            return
        (run,) = runs
        step = store.get_step(run.run_id, watch or label.split(":", 1)[1])
        seen[label] = None if step is None else step.status

    return Runner(recipe, store, client, practice=practice, on_point=point)


def test_a_write_is_journaled_sent_before_it_leaves_a_read_with_its_answer(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 1, "key": None}, seen)

    (outcome,) = runner.process_pending()

    assert outcome.status == "succeeded"
    assert seen == {
        "pending:client": "no run",  # rendered, nothing journaled yet, not even the run
        "sent:client": "sent",  # committed, with the run, before the request leaves
        "answered:client": "sent",
        "done:client": "sent",  # its success is committed while the read is in flight
        "pending:ids": None,
        "sent:ids": None,  # a read: journaled only with its answer
        "answered:ids": None,
        "done:ids": None,  # ... committed with the run's end
    }
    for step_id in ("client", "ids"):
        history = store.step_history(outcome.run_id, step_id)
        assert [(t.from_status, t.to_status) for t in history] == [
            (None, "pending"),
            ("pending", "sent"),
            ("sent", "succeeded"),
        ]
        step = store.get_step(outcome.run_id, step_id)
        assert step is not None
        assert (step.attempts, step.sent_at is not None) == (1, True)
    # The event is journaled with the run, before any step.
    assert store.step_history(outcome.run_id)[0].step_id == TRIGGER_STEP


def test_a_writes_success_is_committed_while_the_next_request_is_in_flight(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    seen: dict[str, str | None] = {}
    payload = {"n": 11, "key": None}
    runner = _runner(tmp_path, registry, store, client, payload, seen, watch="client")

    (outcome,) = runner.process_pending()

    assert outcome.status == "succeeded"
    assert (seen["done:client"], seen["pending:ids"]) == ("sent", "sent")
    assert seen["sent:ids"] == "sent"  # the read is about to leave; the success waits
    assert seen["answered:ids"] == "succeeded"  # committed while the read was in flight
    history = store.step_history(outcome.run_id, "client")
    assert [t.to_status for t in history] == ["pending", "sent", "succeeded"]


TWO_WRITES = """\
  - id: first
    use: create_client
    with:
      entityType: Company
      entityName: "Journal first {{ trigger.n }}"
      externalSystemID: "journal-first-{{ trigger.n }}"
  - id: second
    use: create_client
    with:
      entityType: Company
      entityName: "Journal second {{ trigger.n }}"
      externalSystemID: "journal-second-{{ trigger.n }}"
"""


def test_a_writes_success_rides_on_the_next_writes_sent_commit(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    seen: dict[str, str | None] = {}
    payload = {"n": 12, "key": None}
    runner = _runner(tmp_path, registry, store, client, payload, seen, TWO_WRITES, watch="first")

    (outcome,) = runner.process_pending()

    assert outcome.status == "succeeded"
    assert (seen["done:first"], seen["pending:second"]) == ("sent", "sent")
    # Committed with the second write's `sent`, before that request leaves: at most one
    # write is ever found `sent` without its answer.
    assert seen["sent:second"] == "succeeded"
    # The run ends on a write: its success is committed with the run's end.
    steps = {step.step_id: step.status for step in store.get_steps(outcome.run_id)}
    assert (steps["first"], steps["second"]) == ("succeeded", "succeeded")
    assert store.pending_events(client.settings.client_id) == []


def _fail_plain_commits(monkeypatch: pytest.MonkeyPatch, store: StateStore) -> list[bool]:
    """Fail every commit that is not durable (disk full); returns one entry per attempt."""
    atomic = store.atomic
    attempts: list[bool] = []

    @contextmanager
    def failing(
        *, durable: bool = False, before_commit: Callable[[], None] | None = None
    ) -> Iterator[None]:
        if not durable:
            attempts.append(True)
            raise StoreError("state database: the disk is full (test)")
        with atomic(durable=durable, before_commit=before_commit):
            yield

    monkeypatch.setattr(store, "atomic", failing)
    return attempts


def test_a_runs_end_is_committed_while_the_next_runs_write_is_in_flight(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    recipe = validate_recipe(write_recipe(tmp_path, STEPS), registry=registry)
    practice = client.settings.client_id
    for n in (15, 16):
        store.record_event(practice, recipe.trigger.key, "x", f"ev-{n}", {"n": n, "key": None})
    first_run: list[str] = []
    seen: list[tuple[str, str]] = []

    def point(label: str) -> None:
        runs = sorted(store.list_runs(), key=lambda run: run.created_at)
        if label == "sent:client" and len(runs) == 1:
            first_run.append(runs[0].run_id)
        if first_run and len(runs) == 2:  # the second run exists: its write's `sent`
            first = store.get_run(first_run[0])
            assert first is not None
            seen.append((label, first.status))

    runner = Runner(recipe, store, client, practice=practice, on_point=point)
    outcomes = runner.process_pending()

    assert [o.status for o in outcomes] == ["succeeded", "succeeded"]
    # Run 1 ended on a read: its end is not in run 2's fsynced `sent` commit, but is
    # committed while run 2's write is in flight.
    assert seen[:2] == [("sent:client", "pending"), ("answered:client", "succeeded")]
    assert store.pending_events(practice) == []


class _PlainClient:
    """A client that is not practiceflow's :class:`Client` (sends with ``request``)."""

    def __init__(self, inner: Client) -> None:
        self.inner = inner
        self.sent: list[str] = []

    def request(self, method: str, path: str, **options: Any) -> Any:
        self.sent.append(method)
        return self.inner.request(method, path, **options)

    def get(self, path: str, params: Any = None) -> Any:
        return self.inner.get(path, params=params)

    def describe_request(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        return self.inner.describe_request(method, path, **options)


def test_with_another_client_what_waits_is_committed_before_the_next_request(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    plain = _PlainClient(client)
    seen: dict[str, str | None] = {}
    runner = _runner(
        tmp_path, registry, store, client, {"n": 17, "key": None}, seen, watch="client"
    )
    runner.client = plain
    sends_at_commit: list[list[str]] = []
    atomic = store.atomic

    @contextmanager
    def watched(
        *, durable: bool = False, before_commit: Callable[[], None] | None = None
    ) -> Iterator[None]:
        sends_at_commit.append(list(plain.sent))
        with atomic(durable=durable, before_commit=before_commit):
            yield

    monkeypatch.setattr(store, "atomic", watched)

    (outcome,) = runner.process_pending()

    assert outcome.status == "succeeded"
    assert plain.sent == ["POST", "GET"]
    # The `sent` commit before the POST; the client's success after it, before the GET.
    assert sends_at_commit[:2] == [[], ["POST"]]
    assert (seen["sent:ids"], seen["answered:ids"]) == ("sent", "succeeded")


def test_with_another_client_a_failing_commit_sends_nothing_more(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    plain = _PlainClient(client)
    runner = _runner(tmp_path, registry, store, client, {"n": 18, "key": None}, {})
    runner.client = plain
    _fail_plain_commits(monkeypatch, store)

    with pytest.raises(StoreError, match="disk is full"):
        runner.process_pending()

    assert plain.sent == ["POST"]  # the read never left
    (run,) = store.list_runs()
    step = store.get_step(run.run_id, "client")
    assert step is not None
    assert step.status == "sent"


def test_a_commit_failing_while_the_read_is_in_flight_stops_the_run_and_nothing_repeats(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 13, "key": None}, seen)
    plain_commits = _fail_plain_commits(monkeypatch, store)

    with pytest.raises(StoreError, match="disk is full"):
        runner.process_pending()

    monkeypatch.undo()
    assert plain_commits  # the client's success, in the read's flight, then on the way out
    assert "answered:ids" not in seen  # the read's answer is dropped, not journaled
    (run,) = store.list_runs()
    step = store.get_step(run.run_id, "client")
    assert step is not None
    assert step.status == "sent"
    # Run again: the write is in doubt, found by reading back, never sent twice.
    (outcome,) = _runner(tmp_path, registry, store, client, {}, {}).process_pending()
    assert (outcome.run_id, outcome.status) == (run.run_id, "succeeded")
    step = store.get_step(run.run_id, "client")
    assert step is not None
    assert (step.status, step.resolved_by) == ("succeeded", RECONCILER)
    created = fast_sandbox.admin("GET", "/_admin/records/entities")
    assert [e["externalSystemID"] for e in created].count("journal-13") == 1


def test_a_run_abandoned_by_an_unexpected_error_keeps_its_writes_success(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 14, "key": None}, seen)
    send = client.send

    def broken_read(call: Any, **options: Any) -> Any:
        if call.method == "GET":
            raise RuntimeError("a bug in the read (test)")
        return send(call, **options)

    monkeypatch.setattr(client, "send", broken_read)

    with pytest.raises(RuntimeError, match="a bug in the read"):
        runner.process_pending()

    (run,) = store.list_runs()
    history = store.step_history(run.run_id, "client")
    assert [t.to_status for t in history] == ["pending", "sent", "succeeded"]
    assert store.get_step(run.run_id, "ids") is None


def test_a_read_that_fails_is_journaled_pending_sent_failed_with_its_error(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    missing = "00000000-0000-4000-8000-000000000000"
    fault = {"kind": "500", "count": 1, "method": "GET", "pathPrefix": "/api/v1/entities/"}
    fast_sandbox.admin("POST", "/_admin/faults", fault)
    client.retry = type(client.retry)(max_attempts=1)
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 2, "key": missing}, seen)

    (outcome,) = runner.process_pending()

    assert outcome.status == "failed"
    assert seen["sent:ids"] is None
    history = store.step_history(outcome.run_id, "ids")
    assert [t.to_status for t in history] == ["pending", "sent", "failed"]
    assert history[-1].detail["status"] == 500
    step = store.get_step(outcome.run_id, "ids")
    assert step is not None
    assert (step.status, step.attempts, step.error["status"]) == ("failed", 1, 500)
    assert step.request["input"] == {"entityKey": missing}


def test_a_read_journaled_with_its_answer_keeps_when_it_was_sent(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    tmp_path: Path,
):
    start = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    now = [start]
    with open_store(str(tmp_path / "clocked.db"), clock=lambda: now[0]) as store:
        seen: dict[str, str | None] = {}
        runner = _runner(tmp_path, registry, store, client, {"n": 3, "key": None}, seen)
        inner = runner._point

        def point(label: str) -> None:
            inner(label)
            if label.startswith("answered:"):
                now[0] += timedelta(seconds=2)  # the answer took two seconds

        runner._point = point
        (outcome,) = runner.process_pending()

        history = store.step_history(outcome.run_id, "ids")
        step = store.get_step(outcome.run_id, "ids")
    assert [(t.to_status, t.at - start) for t in history] == [
        ("pending", timedelta(seconds=2)),  # after the write's answer
        ("sent", timedelta(seconds=2)),
        ("succeeded", timedelta(seconds=4)),
    ]
    assert step is not None
    assert (step.created_at, step.sent_at, step.updated_at) == (
        start + timedelta(seconds=2),
        start + timedelta(seconds=2),
        start + timedelta(seconds=4),
    )


READ_THEN_WRITE = """\
  - id: ids
    use: get_client_integrations
    with: {entityKey: "{{ trigger.key }}"}
  - id: client
    use: create_client
    with:
      entityType: Company
      entityName: "Journal {{ trigger.n }}"
      externalSystemID: "journal-{{ trigger.n }}"
"""


def test_a_reads_moves_are_committed_with_the_next_writes_sent(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
):
    known = client.post("/api/v1/entities", {"entityType": "Company", "entityName": "Known"})
    seen: dict[str, str | None] = {}
    payload = {"n": 4, "key": known["entityKey"]}
    runner = _runner(tmp_path, registry, store, client, payload, seen, READ_THEN_WRITE)
    reads: list[StepStatus | None] = []
    inner = runner._point

    def point(label: str) -> None:
        inner(label)
        if label == "sent:client":  # the write's request is about to leave
            (run,) = store.list_runs()
            step = store.get_step(run.run_id, "ids")
            reads.append(None if step is None else step.status)

    runner._point = point
    (outcome,) = runner.process_pending()

    assert outcome.status == "succeeded"
    # Nothing is committed before the write's `sent`: the run is created by that commit.
    assert (seen["done:ids"], seen["pending:client"]) == ("no run", "no run")
    assert reads == ["succeeded"]  # in the write's fsynced commit, before it left
    assert [(t.step_id, t.to_status) for t in store.step_history(outcome.run_id)] == [
        (TRIGGER_STEP, "skipped"),
        ("ids", "pending"),
        ("ids", "sent"),
        ("ids", "succeeded"),
        ("client", "pending"),
        ("client", "sent"),
        ("client", "succeeded"),
    ]
    assert store.pending_events(client.settings.client_id) == []


@pytest.mark.parametrize("ended", ["succeeded", "cancelled"])
def test_an_event_whose_run_already_ended_is_marked_handled_and_nothing_is_sent(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    ended: str,
):
    practice = client.settings.client_id
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 6, "key": None}, seen)
    (event,) = store.pending_events(practice)
    if ended == "succeeded":  # its event left pending, as when several recipes share it
        first = runner.run_event(event, mark_handled=False)
        assert first is not None
        run_id = first.run_id
    else:  # a person cancelled it before it ran
        run_id, _ = store.start_run(practice, runner.recipe.name, event.event_id)
        store.set_run_status(run_id, "cancelled")
    assert [e.event_id for e in store.pending_events(practice)] == ["ev-1"]
    seen.clear()
    before = fast_sandbox.admin("GET", "/_admin/records/entities")

    (outcome,) = runner.process_pending()

    assert (outcome.run_id, outcome.status, outcome.created) == (run_id, ended, False)
    assert seen == {}  # no step was rendered, nothing was sent
    assert fast_sandbox.admin("GET", "/_admin/records/entities") == before
    assert store.pending_events(practice) == []


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    """A fresh store of each backend."""
    if request.param == "sqlite":
        url = str(tmp_path / "state.db")
    else:
        url = shared_server().new_schema(prefix="runner")
    with open_store(url) as opened:
        yield opened


def test_a_run_another_runner_created_first_is_driven_as_it_left_it_not_sent_again(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    any_store: StateStore,
    tmp_path: Path,
):
    store = any_store
    practice = client.settings.client_id
    seen: dict[str, str | None] = {}
    late = _runner(tmp_path, registry, store, client, {"n": 7, "key": None}, seen)
    early = Runner(late.recipe, store, client, practice=practice)
    (event,) = store.pending_events(practice)
    other: list[Any] = []
    inner = late._point

    def point(label: str) -> None:
        inner(label)
        if label == "pending:client" and not other:
            # Between `late` finding no run and its first commit, `early` runs the event.
            other.append(early.run_event(event, mark_handled=False))

    late._point = point

    (outcome,) = late.process_pending()

    (first,) = other
    assert first is not None
    assert (first.status, first.created) == ("succeeded", True)
    assert (outcome.run_id, outcome.status, outcome.created) == (first.run_id, "succeeded", False)
    assert [run.run_id for run in store.list_runs()] == [first.run_id]
    # `late`'s first commit failed before its request left: one client on the sandbox.
    records = fast_sandbox.admin("GET", "/_admin/records/entities")
    mine = [r for r in records if r.get("externalSystemID") == "journal-7"]
    assert len(mine) == 1
    history = store.step_history(first.run_id, "client")
    assert [t.to_status for t in history] == ["pending", "sent", "succeeded"]
    assert store.pending_events(practice) == []


class _WatchedCommits:
    """Wraps a store's ``atomic``: notes when each durable block's commit has returned, and
    holds its ``before_commit`` hook until the work it started has begun (so that the
    overlap the runner asks for is seen, not left to thread timing); may fail the commit."""

    def __init__(self, store: StateStore, prepared: threading.Event, *, fail: bool = False):
        self.store = store
        self.prepared = prepared
        self.fail = fail
        self.committed = 0
        self.inner = store.atomic

    @contextmanager
    def atomic(
        self, *, durable: bool = False, before_commit: Callable[[], None] | None = None
    ) -> Iterator[None]:
        hook = before_commit

        def held() -> None:
            assert hook is not None
            hook()
            assert self.prepared.wait(5), "the request was not being built during the commit"
            if self.fail:
                raise StoreError("state database: the disk is full (test)")

        with self.inner(durable=durable, before_commit=held if hook else None):
            yield
        if durable:
            self.committed += 1


def _watch(
    monkeypatch: pytest.MonkeyPatch, store: StateStore, client: Client, *, fail: bool = False
) -> tuple[_WatchedCommits, list[tuple[str, str, int]]]:
    """Watch the store's commits and the client's prepare/send: each as (what, thread,
    durable commits returned so far)."""
    prepared = threading.Event()
    watched = _WatchedCommits(store, prepared, fail=fail)
    monkeypatch.setattr(store, "atomic", watched.atomic)
    calls: list[tuple[str, str, int]] = []
    prepare, send = client.prepare, client.send

    def watched_prepare(*args: Any, **kwargs: Any) -> Any:
        calls.append(("prepare", threading.current_thread().name, watched.committed))
        prepared.set()
        return prepare(*args, **kwargs)

    def watched_send(call: Any, **options: Any) -> Any:
        calls.append(("send " + call.method, threading.current_thread().name, watched.committed))
        return send(call, **options)

    monkeypatch.setattr(client, "prepare", watched_prepare)
    monkeypatch.setattr(client, "send", watched_send)
    return watched, calls


def test_a_writes_request_is_built_during_its_sent_commit_and_leaves_after_it(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 7, "key": None}, seen)
    _, calls = _watch(monkeypatch, store, client)

    (outcome,) = runner.process_pending()

    assert outcome.status == "succeeded"
    (write_prepared, write_sent, read_prepared, read_sent) = calls
    # The write's request is built in another thread while its `sent` commit is under
    # way (no durable commit has returned yet), and leaves only once it has returned.
    assert write_prepared[0] == "prepare"
    assert write_prepared[1].startswith("pf-prepare")
    assert write_prepared[2] == 0
    assert write_sent == ("send POST", threading.current_thread().name, 1)
    assert seen["sent:client"] == "sent"
    # A read has no commit before it leaves: it is built and sent in the runner's thread.
    assert read_prepared == ("prepare", threading.current_thread().name, 1)
    assert read_sent[0] == "send GET"
    created = fast_sandbox.admin("GET", "/_admin/records/entities")
    assert [e["externalSystemID"] for e in created].count("journal-7") == 1


def test_a_write_whose_sent_commit_fails_is_built_but_never_sent(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    store: StateStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    seen: dict[str, str | None] = {}
    runner = _runner(tmp_path, registry, store, client, {"n": 8, "key": None}, seen)
    watched, calls = _watch(monkeypatch, store, client, fail=True)

    (outcome,) = runner.process_pending()

    assert outcome.status == "failed"
    assert "disk is full" in str(outcome.error)
    assert [what for what, _, _ in calls] == ["prepare"]  # built, never sent
    assert watched.committed == 0
    assert "sent:client" not in seen
    created = fast_sandbox.admin("GET", "/_admin/records/entities")
    assert "journal-8" not in [e["externalSystemID"] for e in created]
    # The step is journaled failed, never sent: nothing is in doubt.
    step = store.get_step(outcome.run_id, "client")
    assert step is not None
    assert (step.status, step.sent_at) == ("failed", None)
