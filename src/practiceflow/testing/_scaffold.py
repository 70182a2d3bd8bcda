"""A first, passing test for a scaffolded recipe or module (``recipes new``, ``modules new``).

The case is found by running offline on the sample event (or input examples), answering each
unanswered request (the action's sample output, or empty for a check's read) until all are;
what came of it is written as the case's ``expect``, for the person to edit.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import yaml

from practiceflow.manifest import ActionModule, ModuleRegistry, TriggerModule
from practiceflow.manifest.yamlpos import Located
from practiceflow.testing._case import TEST_SUFFIX, build_test_file
from practiceflow.testing._case_run import CaseResult, StepView, load_target, run_case

#: How many rounds of "answer what went unanswered" before giving up.
_ROUNDS: Final = 8
_SCALARS = (str, int, float, bool)


def _example_input(module: ActionModule) -> dict[str, Any]:
    schema = module.input_schema
    data: dict[str, Any] = {}
    for name in schema.get("required", []):
        examples = (schema.get("properties", {}).get(name) or {}).get("examples") or []
        if examples:
            data[name] = examples[0]
    return data


def _few(value: Any) -> Any:
    if isinstance(value, Mapping):
        picked = {k: v for k, v in value.items() if isinstance(v, _SCALARS) and v != ""}
        return dict(list(picked.items())[:4])
    return value


def _answer_for(sent: Any, registry: ModuleRegistry, target: Any) -> dict[str, Any]:
    request = sent.request
    answer: dict[str, Any] = {"method": request.method, "path": request.path}
    action = None
    if isinstance(target, ActionModule):
        action = target
    elif not isinstance(target, TriggerModule) and sent.step:
        action = target.actions.get(sent.step.split("[", 1)[0])
    # The action's own request gets its sample; a check's read before it, an empty answer.
    main = isinstance(action, ActionModule) and action.request.method.upper() == request.method
    if main and request.method != "GET":
        answer["status"] = 201
    if isinstance(target, TriggerModule):
        answer["body"] = [dict(target.sample or {})]
    elif main and isinstance(action, ActionModule) and action.sample is not None:
        answer["body"] = action.sample
    else:
        answer["body"] = {}
    return answer


@contextmanager
def _quiet() -> Iterator[None]:
    """The engine's warnings about requests not answered yet are how the case is found,
    not news for the person scaffolding."""
    logger = logging.getLogger("practiceflow")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


class _PlainDumper(yaml.SafeDumper):
    """Writes every value out (no ``&id``/``*id``: the test loader refuses aliases)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _settle(document: dict[str, Any], path: Path) -> CaseResult:
    """Run the document's one case, answering what went unanswered, round by round."""
    answers = document["cases"][0]["given"].setdefault("answers", [])
    with _quiet():
        for _ in range(_ROUNDS):
            test = build_test_file(Located(document), path, path.name)
            target, registry = load_target(test)
            result = run_case(test, test.cases[0], target=target, registry=registry)
            missing: dict[tuple[str, str], Any] = {}
            for sent in result.requests:
                if sent.answered == "nothing":
                    missing.setdefault((sent.request.method, sent.request.path), sent)
            if not missing:
                break
            answers += [_answer_for(sent, registry, target) for sent in missing.values()]
    return result


def _expect_step(view: StepView, expect: dict[str, Any]) -> dict[str, Any]:
    """The request a step sent last and its few-field output, added to ``expect``."""
    if view.requests:
        expect["request"] = {"method": view.requests[-1].method, "path": view.requests[-1].path}
    if view.status == "succeeded" and _few(view.output):
        expect["output"] = _few(view.output)
    return expect


def _write(document: dict[str, Any], path: Path, header: str) -> Path:
    text = yaml.dump(document, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=100)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + text, encoding="utf-8")
    return path


_HEADER = """\
# A first test, written by 'practiceflow {command}': it passes as written. Run it with
#   practiceflow test {where}
# then make it yours: the answers under given.answers are the API's (add faults: a 429,
# a dropped answer, a 500), and expect says what each step must send and come to.
# docs/testing.md describes every key.
"""


def write_recipe_test(recipe: Path, folder: Path, modules: Path | None = None) -> Path:
    """Write ``folder/<recipe stem>.test.yaml`` (``folder``: ``recipes/tests``): the recipe,
    with the user's ``modules`` folder if any, run for its trigger's sample; returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (recipe.stem + TEST_SUFFIX)
    document: dict[str, Any] = {"recipe": _relative(recipe, folder)}
    if modules is not None:
        document["modules"] = _relative(modules, folder)
    case: dict[str, Any] = {
        "name": "the trigger's sample event runs every step",
        "given": {"event": "sample", "now": "2026-01-05T09:00:00Z"},
        "expect": {},
    }
    document["cases"] = [case]
    result = _settle(document, path)
    steps = {sid: _expect_step(view, {"status": view.status}) for sid, view in result.steps.items()}
    case["expect"] = {"status": result.status, "steps": steps}
    header = _HEADER.format(command="recipes new", where=path)
    return _write(document, path, header)


def write_module_test(module_file: Path, folder: Path, key: str) -> Path:
    """Write ``folder/<key>.test.yaml`` (``folder``: ``DIR/tests``): the module in
    ``module_file`` run for its input's examples (an action), its sample delivered (a webhook
    trigger) or one poll (a polling trigger); returns the file written."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (key + TEST_SUFFIX)
    document: dict[str, Any] = {"module": _relative(module_file, folder)}
    test = build_test_file(
        Located({"module": document["module"], "cases": [{"name": "x", "expect": {}}]}),
        path,
        path.name,
    )
    target, _ = load_target(test)
    given: dict[str, Any]
    if isinstance(target, TriggerModule):
        if target.webhook is not None or target.poll is None:
            given = {"delivery": {"body": dict(target.sample or {}), "id": "delivery-1"}}
        else:
            given = {"poll": {"since": "2020-01-01T00:00:00Z"}}
    else:
        given = {"input": _example_input(target)}
    case: dict[str, Any] = {"name": f"{key} as scaffolded", "given": given, "expect": {}}
    document["cases"] = [case]
    result = _settle(document, path)
    view = result.steps.get("")
    expect: dict[str, Any] = {"status": result.status}
    if isinstance(target, TriggerModule):
        expect["events"] = len(result.events)
        if result.events and _few(result.events[0]):
            expect["event"] = _few(result.events[0])
    elif view is not None:
        _expect_step(view, expect)
    case["expect"] = expect
    header = _HEADER.format(command="modules new", where=path)
    return _write(document, path, header)


def _relative(target: Path, folder: Path) -> str:
    """``target`` as a path from ``folder`` (what a test file holds)."""
    return os.path.relpath(target.resolve(), folder.resolve())
