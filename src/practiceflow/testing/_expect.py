"""A case's ``expect`` against what came of it: one line per difference, naming step and field
(``step bill: request.body.lineItems[0].amount: expected 300, sent 350``). Expectations are
subsets (docs/testing.md, section 1); the runner's run-unique marker (``[pf-0123456789]``) is
taken out of requests and outputs before they are compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from practiceflow.testing._case import TestCase
from practiceflow.testing._case_run import CaseResult, StepView, strip_markers
from practiceflow.testing._cassette import RecordedRequest


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual or (type(expected) is type(actual) and expected == actual)
    return bool(expected == actual)


def subset_differences(expected: Any, actual: Any, where: str, verb: str = "got") -> list[str]:
    """Where ``actual`` does not hold ``expected`` (a subset; see the module docstring)."""
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{where}: expected a mapping {_show(expected)}, {verb} {_show(actual)}"]
        out: list[str] = []
        for key, value in expected.items():
            field = f"{where}.{key}" if where else str(key)
            if key not in actual:
                out.append(f"{field}: expected {_show(value)}, {verb} nothing (no such field)")
            else:
                out += subset_differences(value, actual[key], field, verb)
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list {_show(expected)}, {verb} {_show(actual)}"]
        out = []
        if len(expected) != len(actual):
            out.append(f"{where}: expected {len(expected)} items, {verb} {len(actual)}")
        for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
            out += subset_differences(left, right, f"{where}[{index}]", verb)
        return out
    if _equal(expected, actual):
        return []
    return [f"{where}: expected {_show(expected)}, {verb} {_show(actual)}"]


def _request_view(request: RecordedRequest) -> dict[str, Any]:
    return {
        "method": request.method,
        "path": request.path,
        "query": dict(request.query),
        "body": strip_markers(request.body),
    }


def _short(request: RecordedRequest) -> str:
    return f"{request.method} {request.path}"


def _request_diff(wanted: Mapping[str, Any], sent: RecordedRequest, where: str) -> list[str]:
    wanted = dict(wanted)
    if "method" in wanted:
        wanted["method"] = str(wanted["method"]).upper()
    return subset_differences(wanted, _request_view(sent), where, "sent")


def _one_request(wanted: Mapping[str, Any], sent: Sequence[RecordedRequest]) -> list[str]:
    if not sent:
        return ["request: expected one, nothing was sent"]
    scored = sorted(
        ((_request_diff(wanted, request, "request"), index) for index, request in enumerate(sent)),
        key=lambda item: (
            # the same method and path first: its body is what differs
            any(line.startswith(("request.method", "request.path")) for line in item[0]),
            len(item[0]),
        ),
    )
    best, _ = scored[0]
    if not best:
        return []
    if any(line.startswith(("request.method", "request.path")) for line in best):
        shown = ", ".join(_short(request) for request in sent)
        method = str(wanted.get("method", "?")).upper()
        return [f"request: expected {method} {wanted.get('path', '?')}, sent only: {shown}"]
    return best


def _requests(wanted: Sequence[Mapping[str, Any]], sent: Sequence[RecordedRequest]) -> list[str]:
    out = []
    if len(wanted) != len(sent):
        shown = ", ".join(_short(request) for request in sent) or "nothing"
        out.append(f"requests: expected {len(wanted)}, sent {len(sent)} ({shown})")
    for index, (left, right) in enumerate(zip(wanted, sent, strict=False)):
        out += _request_diff(left, right, f"requests[{index}]")
    return out


def _error(expected: Mapping[str, Any], actual: Any) -> list[str]:
    if not isinstance(actual, Mapping):
        return [f"error: expected {_show(dict(expected))}, got {_show(actual)}"]
    out = []
    for key, value in expected.items():
        got = actual.get(key)
        if key in ("message", "reason") and isinstance(value, str) and isinstance(got, str):
            if value not in got:
                out.append(f"error.{key}: expected it to contain {value!r}, got {_show(got)}")
        else:
            out += subset_differences(value, got, f"error.{key}")
    return out


def _step(expected: Mapping[str, Any], view: StepView) -> list[str]:
    out = []
    if "status" in expected and expected["status"] != view.status:
        detail = f" ({_show(view.error)})" if view.error else ""
        out.append(f"status: expected {expected['status']}, got {view.status}{detail}")
    if "request" in expected:
        out += _one_request(expected["request"], view.requests)
    if "requests" in expected:
        out += _requests(expected["requests"], view.requests)
    if "output" in expected:
        if view.status != "succeeded":
            out.append(f"output: expected {_show(expected['output'])}; the step {view.status}")
        else:
            out += subset_differences(expected["output"], strip_markers(view.output), "output")
    if "error" in expected:
        out += _error(expected["error"], view.error)
    return out


def _trigger(expected: Mapping[str, Any], result: CaseResult) -> list[str]:
    out = []
    events = result.events
    wanted = expected.get("events")
    if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted != len(events):
        out.append(f"events: expected {wanted}, got {len(events)}")
    elif isinstance(wanted, list):
        out += subset_differences(wanted, events, "events")
    if "event" in expected:
        candidates = [subset_differences(expected["event"], event, "event") for event in events]
        if not events:
            out.append("event: expected one, got no event")
        elif all(candidates):
            nearest: list[str] = min(candidates, key=len)
            out += nearest
    if "key" in expected and expected["key"] != result.key:
        out.append(f"key: expected {expected['key']!r}, got {result.key!r}")
    return out


def case_differences(case: TestCase, result: CaseResult, *, recipe: bool) -> list[str]:
    """Every way a case's result differs from its ``expect`` (empty: it passed).

    Args:
        case: the case.
        result: what came of it.
        recipe: whether it tests a recipe (``steps`` are a recipe's; a module's test
            expects its one step's fields at the top).
    """
    expect = case.expect
    out = list(dict.fromkeys(result.problems))  # a read retried asks the same thing again
    out += [f"unused: {line}" for line in result.unused]
    if not recipe:
        out += _step(expect, result.steps.get("", StepView(result.status)))
        return out + _trigger(expect, result)
    if "status" in expect and expect["status"] != result.status:
        out.append(f"run status: expected {expect['status']}, got {result.status}")
    if "requests" in expect:
        out += _requests(expect["requests"], [sent.request for sent in result.requests])
    if "request" in expect:
        out += _one_request(expect["request"], [sent.request for sent in result.requests])
    for step_id, wanted in (expect.get("steps") or {}).items():
        view = result.steps.get(step_id)
        if view is None:
            known = ", ".join(sorted(result.steps)) or "none"
            out.append(f"step {step_id}: no such step in the run (steps: {known})")
            continue
        out += [f"step {step_id}: {line}" for line in _step(wanted, view)]
    return out
