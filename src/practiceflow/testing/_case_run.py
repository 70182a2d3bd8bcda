"""Running one case of a test file offline: the real runner (or action, or trigger) on a
throw-away SQLite store, every request through a real :class:`~practiceflow.api.Client`
over :class:`~._answers.ScriptedAnswers`, every clock one :class:`~._clock.FakeClock`.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, Final

from requests.adapters import BaseAdapter

from practiceflow.api import Client
from practiceflow.engine import run_action
from practiceflow.engine.masking import personal_values
from practiceflow.errors import ConfigError, InDoubtError, PracticeflowError
from practiceflow.manifest import (
    ActionModule,
    ModuleRegistry,
    TriggerModule,
    default_registry,
    load_module,
    load_modules,
)
from practiceflow.manifest.yamlpos import Located
from practiceflow.runner import Runner, validate_recipe
from practiceflow.runner.step_executor import error_json
from practiceflow.state import open_store
from practiceflow.templating import set_clock
from practiceflow.testing._answers import ScriptedAnswers, SentRequest
from practiceflow.testing._case import TestCase, TestFile, build_test_file
from practiceflow.testing._cassette import Cassette, RecordedRequest, load_cassette, scrub
from practiceflow.testing._clock import FakeClock
from practiceflow.testing._recording import named_values, registry_personal_names
from practiceflow.testing._replay import REPLAY_BASE_URL
from practiceflow.triggers import Poller
from practiceflow.triggers.definition import definition

#: The credentials a replayed client carries (nothing checks them; nothing is sent).
TEST_CREDENTIALS: Final = ("00000000-0000-4000-8000-000000000000", "practiceflow-test-secret")
#: The practice runs of a case are stored under.
PRACTICE: Final = "test"
_MARKER_PREFIX: Final = "pf-"


@dataclass
class StepView:
    """One step as a case saw it (a module's own test is one step named ``""``): its status
    (``succeeded``, ``skipped``, ``failed``, ``in_doubt``), output (masked, as the journal
    keeps it), error (why it failed, was skipped or is in doubt) and requests, in order."""

    status: str
    output: Any = None
    error: Any = None
    requests: list[RecordedRequest] = field(default_factory=list)


@dataclass
class CaseResult:
    """What came of one case: the run's status (a module's: its one step's), each step by id,
    every request sent (with its step), a trigger's events and a delivery's dedupe key, the
    requests nothing answered (``problems``) and the written answers nothing asked for."""

    status: str
    steps: dict[str, StepView] = field(default_factory=dict)
    requests: list[SentRequest] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    key: str | None = None
    problems: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


Target = Any  # ValidRecipe | ActionModule | TriggerModule


def load_target(test: TestFile, registry: ModuleRegistry | None = None) -> tuple[Target, Any]:
    """The recipe or module a test file tests, loaded and checked, and the registry.

    Raises:
        ManifestError, ConfigError: it does not load (the message names its file).
    """
    if registry is None:
        registry = load_modules([test.modules]) if test.modules else default_registry()
    if test.recipe is not None:
        return validate_recipe(test.recipe, registry=registry), registry
    path = test.module_path()
    if path is not None:
        return load_module(path), registry
    key = str(test.module)
    if key in registry.triggers and key not in registry.actions:
        return registry.trigger(key), registry
    return registry.action(key), registry


def strip_markers(value: Any) -> Any:
    """A tree without the runner's run-unique markers (``[pf-0123456789]``)."""
    if isinstance(value, Mapping):
        return {k: strip_markers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    if isinstance(value, str) and _MARKER_PREFIX in value:
        words = [
            word
            for word in value.split(" ")
            if not (word.strip("[]").startswith(_MARKER_PREFIX) and len(word.strip("[]")) == 13)
        ]
        return " ".join(words) or None
    return value


def case_event(recipe: Any, case: TestCase) -> Any:
    """``given.event`` (or the trigger's sample) with ``given.overrides`` laid over it."""
    given = case.given
    event = given.get("event", "sample")
    payload = dict(recipe.trigger.sample or {}) if event == "sample" else dict(event)
    payload.update(given.get("overrides") or {})
    return payload


def case_personal_values(target: Target, registry: ModuleRegistry, case: TestCase) -> set[str]:
    """The personal values of a case's event, vars or input (scrubbed when recorded and
    replayed)."""
    names = registry_personal_names(registry)
    given = case.given
    values: set[str] = set()
    if isinstance(target, ActionModule):
        data = given.get("input") or {}
        values |= set(personal_values(data, target.pii_paths)) | named_values(data, names)
    elif isinstance(target, TriggerModule):
        values |= named_values(given.get("delivery") or {}, names)
    else:
        event = case_event(target, case)
        values |= named_values(event, names) | named_values(given.get("vars") or {}, names)
    return values


def _normalizer(values: set[str]) -> Callable[[RecordedRequest], RecordedRequest]:
    def normalize(request: RecordedRequest) -> RecordedRequest:
        cleaned = scrub(request.as_dict(), values) if values else request.as_dict()
        return replace(
            request,
            path=cleaned["path"],
            query=cleaned["query"],
            body=strip_markers(cleaned["body"]),
        )

    return normalize


@contextmanager
def templates_on(clock: FakeClock) -> Iterator[FakeClock]:
    """Templates read ``clock`` as ``now`` inside the block."""
    set_clock(clock.utcnow)
    try:
        yield clock
    finally:
        set_clock(None)


def replay_client(session: Any, clock: FakeClock) -> Client:
    """A real client on a session, every clock of it the case's."""
    return Client(
        *TEST_CREDENTIALS,
        base_url=REPLAY_BASE_URL,
        session=session,
        timeout=5,
        clock=clock.monotonic,
        sleep=clock.sleep,
        utcnow=clock.utcnow,
        rng=random.Random(0),  # noqa: S311 - jitter of retries, not security
    )


def run_case(
    test: TestFile,
    case: TestCase,
    *,
    target: Target | None = None,
    registry: ModuleRegistry | None = None,
    client_for: Callable[[Any, FakeClock], Client] | None = None,
    cassette: Cassette | None = None,
    base_url: str = REPLAY_BASE_URL,
    fallback: BaseAdapter | None = None,
) -> CaseResult:
    """Run one case offline (or, with ``client_for``, against a server: recording).

    Args:
        test: the test file.
        case: the case.
        target: the loaded recipe or module (loaded from the file when omitted).
        registry: the modules.
        client_for: builds the client from (the scripted session, the clock); default: a
            replaying client. A recording passes one that sends to a sandbox.
        cassette: the recorded answers (default: the case's ``given.cassette``).
        base_url: the base URL of the client ``client_for`` builds.
        fallback: where requests no written answer matches go (a recording's recorder);
            the cassette is not read then.

    Returns:
        What came of it.
    """
    if target is None or registry is None:
        target, registry = load_target(test, registry)
    if cassette is None and case.cassette is not None and fallback is None:
        if not case.cassette.exists():
            message = (
                f"{test.display}:{case.line} given.cassette: {case.given['cassette']} does not "
                "exist yet; record it with 'practiceflow test --record'"
            )
            raise ConfigError(message)
        cassette = load_cassette(case.cassette)
    values = case_personal_values(target, registry, case)
    answers = ScriptedAnswers(
        case.answers,
        cassette,
        normalize=_normalizer(values),
        base_url=base_url,
        fallback=fallback,
    )
    clock = FakeClock(case.now)
    make = client_for or replay_client
    with templates_on(clock), make(answers.session(), clock) as api:
        if isinstance(target, ActionModule):
            result = _run_action(target, case, api)
        elif isinstance(target, TriggerModule):
            result = _run_trigger(target, case, api, clock)
        else:
            result = _run_recipe(target, case, api, answers, clock)
    result.requests = list(answers.sent)
    for view_id, view in result.steps.items():
        view.requests = [sent.request for sent in answers.sent if sent.step == view_id]
    result.problems = list(answers.problems)
    result.unused = answers.unused()
    return result


def _module_result(status: str, output: Any = None, error: Any = None, **more: Any) -> CaseResult:
    return CaseResult(status, {"": StepView(status, output, error)}, **more)


def _failed(exc: PracticeflowError) -> CaseResult:
    status = "in_doubt" if isinstance(exc, InDoubtError) else "failed"
    return _module_result(status, None, error_json(exc))


def _run_action(module: ActionModule, case: TestCase, api: Client) -> CaseResult:
    data = dict(case.given.get("input") or {})
    try:
        return _module_result("succeeded", run_action(module, data, api).output)
    except PracticeflowError as exc:
        return _failed(exc)


def _run_trigger(
    module: TriggerModule, case: TestCase, api: Client, clock: FakeClock
) -> CaseResult:
    found = definition(module)
    given = case.given
    if "delivery" in given:
        if found.webhook is None:
            error = {"message": f"{module.key} receives no webhook (it polls)"}
            return _module_result("failed", None, error)
        delivery = given["delivery"]
        headers = {"event": "", "eventId": delivery.get("id", "test-delivery"), "timestamp": ""}
        headers.update({str(k): str(v) for k, v in (delivery.get("headers") or {}).items()})
        key, data = found.webhook.to_event(delivery["body"], headers, {}, headers["eventId"])
        return _module_result("succeeded", data, events=[data], key=key)
    poll = dict(given.get("poll") or {})
    if found.poll is None:
        error = {"message": f"{module.key} cannot be polled (webhook only)"}
        return _module_result("failed", None, error)
    today = clock.utcnow().date()
    if "today" in poll:
        today = date.fromisoformat(str(poll["today"]))
    with (
        tempfile.TemporaryDirectory() as folder,
        open_store(str(Path(folder) / "state.db"), clock=clock.utcnow) as store,
    ):
        poller = Poller(
            api,
            store,
            PRACTICE,
            found,
            dict(poll.get("with") or {}),
            since=poll.get("since"),
            today=lambda: today,
        )
        try:
            poller.poll_once()
        except PracticeflowError as exc:
            return _failed(exc)
        events = [event.payload for event in store.pending_events(PRACTICE, 10_000)]
    return _module_result("succeeded", events, events=events)


def _run_recipe(
    recipe: Any, case: TestCase, api: Client, answers: ScriptedAnswers, clock: FakeClock
) -> CaseResult:
    given_vars = case.given.get("vars")
    if given_vars:
        merged = {**dict(recipe.recipe.vars), **dict(given_vars)}
        recipe = replace(recipe, recipe=replace(recipe.recipe, vars=merged))
    payload = case_event(recipe, case)

    def on_point(label: str) -> None:
        # A step's checks (reads before its request) come before its first label: the
        # requests sent since the last step finished are its own.
        moment, _, sid = label.partition(":")
        if moment == "pending" and answers.step != sid:
            answers.assign_unclaimed(sid)
        answers.step = "" if moment == "done" else sid

    with (
        tempfile.TemporaryDirectory() as folder,
        open_store(str(Path(folder) / "state.db"), clock=clock.utcnow) as store,
    ):
        store.record_event(PRACTICE, recipe.trigger.key, "test", f"case-{case.index}", payload)
        runner = Runner(recipe, store, api, practice=PRACTICE, on_point=on_point, sleep=clock.sleep)
        (event,) = store.pending_events(PRACTICE, 1)
        outcome = runner.run_event(event)
        steps: dict[str, StepView] = {}
        if outcome is not None:
            for step in store.get_steps(outcome.run_id):
                steps[step.step_id] = StepView(step.status, step.output, step.error)
        status = outcome.status if outcome is not None else "skipped"
    unfinished = [sid for sid, view in steps.items() if view.status not in ("succeeded", "skipped")]
    if unfinished:  # a step that failed before its request: its checks' requests are its own
        answers.assign_unclaimed(unfinished[0])
    for step in recipe.recipe.steps:  # a step the run never reached
        steps.setdefault(step.id, StepView("not run"))
    return CaseResult(status, steps)


def run_recipe_once(
    recipe: str | Path,
    event: Mapping[str, Any] | None = None,
    *,
    variables: Mapping[str, Any] | None = None,
    answers: Sequence[Mapping[str, Any]] = (),
    cassette: str | Path | None = None,
    now: str | None = None,
    modules: str | Path | None = None,
) -> CaseResult:
    """Run a recipe offline for one event, as a test file's case would (from Python).

    Args:
        recipe: the recipe file.
        event: the trigger event (default: the trigger's sample).
        variables: values laid over the recipe's ``vars``.
        answers: written answers, as in ``given.answers``.
        cassette: a cassette file to answer the rest from.
        now: the clock's start (ISO 8601, UTC).
        modules: a folder of your own modules.

    Returns:
        The run: its status, each step's journal entry (``steps``) and the requests it
        sent (``requests``), and the requests nothing answered (``problems``).

    Raises:
        ManifestError: the recipe, a module or an answer does not load.
    """
    path = Path(recipe).resolve()
    given: dict[str, Any] = {"event": dict(event) if event is not None else "sample"}
    if variables:
        given["vars"] = dict(variables)
    if answers:
        given["answers"] = [dict(answer) for answer in answers]
    if cassette is not None:
        given["cassette"] = str(Path(cassette).resolve())
    if now is not None:
        given["now"] = now
    document: dict[str, Any] = {
        "recipe": str(path),
        "cases": [{"name": "run", "given": given, "expect": {}}],
    }
    if modules is not None:
        document["modules"] = str(Path(modules).resolve())
    test = build_test_file(Located(document), path, f"{path.name} (run from Python)")
    return run_case(test, test.cases[0])
