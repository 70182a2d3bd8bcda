"""Write each shipped module's ``*.test.yaml`` from its recorded cassette (default preset).

    .venv/bin/python tests/conformance/module_tests.py [KEY...]

Each action gets ``tests/actions/<key>.test.yaml``: given the cassette's input and answers,
expect every request it sends (method, path, query, body) and the scalar fields of its
output (of each item too, for a list of three items or fewer), or its error's status. Each
trigger gets ``tests/triggers/<key>.test.yaml``: one poll from the recorded start (how many
events, and the fields of the first), and, for a webhook trigger, a delivery of its sample
(the event and its dedupe key). The expected values are what the modules do today: the
files are then the modules' tests (``make test`` runs them), edited by hand as modules
change; run this again only for a module whose cassette was recorded anew.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
sys.path.insert(0, str(TESTS))

from conformance.record import SINCE, TODAY  # noqa: E402 - after the path is set
from practiceflow.manifest import default_registry  # noqa: E402
from practiceflow.manifest.yamlpos import Located  # noqa: E402
from practiceflow.testing import (  # noqa: E402
    build_test_file,
    load_cassette,
    load_target,
    run_case,
)

CASSETTES = TESTS / "cassettes" / "default"
#: The clock of the recordings (their answers' dates); no module's request reads it.
NOW = "2026-11-27T23:43:30Z"
#: Where a download module writes in its test.
DOWNLOADS = "/tmp"  # noqa: S108 - a test's scratch folder, on every Unix machine
_SCALARS = (str, int, float, bool)
_MOST_FIELDS = 12


def _scalars(record: Mapping[str, Any], most: int = _MOST_FIELDS) -> dict[str, Any]:
    """Scalar fields of a record, those that say something first (not empty, zero or
    false), in the record's order: what a person reads at a glance."""
    fields = [(name, value) for name, value in record.items() if isinstance(value, _SCALARS)]
    telling = {name for name, value in fields if value not in ("", 0, False)}
    chosen = [name for name, _ in fields if name in telling][:most]
    chosen += [name for name, _ in fields if name not in telling][: most - len(chosen)]
    return {name: value for name, value in fields if name in chosen}


def _output(output: Any) -> Any:
    if not isinstance(output, Mapping):
        return output
    expected = _scalars(output)
    items = output.get("items")
    if isinstance(items, list) and len(items) <= 3:
        expected["items"] = [
            _scalars(item, 5) if isinstance(item, Mapping) else item for item in items
        ]
    return expected


def _request(exchange: Any) -> dict[str, Any]:
    request = exchange.request
    out: dict[str, Any] = {"method": request.method, "path": request.path}
    if request.query:
        out["query"] = dict(request.query)
    if request.body is not None:
        out["body"] = request.body
    return out


def _run(document: dict[str, Any], path: Path) -> Any:
    test = build_test_file(Located(document), path, path.name)
    target, registry = load_target(test)
    return run_case(test, test.cases[0], target=target, registry=registry)


def action_test(key: str) -> dict[str, Any]:
    """The test document of one action."""
    cassette = load_cassette(CASSETTES / f"{key}.yaml")
    data = dict(cassette.input)
    if "saveTo" in data:
        data["saveTo"] = DOWNLOADS
    path = TESTS / "actions" / f"{key}.test.yaml"
    given = {"input": data, "now": NOW, "cassette": f"../cassettes/default/{key}.yaml"}
    case: dict[str, Any] = {"name": f"{key} sends the recorded requests and maps the answer"}
    case["given"] = given
    case["expect"] = {}
    result = _run({"module": key, "cases": [case]}, path)
    step = result.steps[""]
    expect: dict[str, Any] = {"status": step.status}
    expect["requests"] = [_request(exchange) for exchange in cassette.exchanges]
    if step.status == "succeeded":
        expect["output"] = _output(step.output)
    else:
        case["name"] = f"{key} sends the recorded request and reports the API's refusal"
        expect["error"] = {"status": step.error.get("status")} if step.error else {}
    case["expect"] = expect
    return {"module": key, "cases": [case]}


def trigger_test(key: str) -> dict[str, Any]:
    """The test document of one trigger."""
    module = default_registry().trigger(key)
    path = TESTS / "triggers" / f"{key}.test.yaml"
    cases = []
    cassette_path = CASSETTES / f"{key}.yaml"
    raw = yaml.safe_load((TESTS.parent / "triggers" / f"{key}.yaml").read_text(encoding="utf-8"))
    if "poll" in raw:
        cassette = load_cassette(cassette_path)
        poll: dict[str, Any] = {"since": SINCE, "today": TODAY.isoformat()}
        if cassette.input:
            poll["with"] = dict(cassette.input)
        case: dict[str, Any] = {
            "name": f"one poll of {key} from the recorded start finds the recorded events",
            "given": {"poll": poll, "now": NOW, "cassette": f"../cassettes/default/{key}.yaml"},
            "expect": {},
        }
        result = _run({"module": key, "cases": [case]}, path)
        expect: dict[str, Any] = {"events": len(result.events)}
        if result.events:
            expect["event"] = _scalars(result.events[0])
        expect["requests"] = [_request(exchange) for exchange in cassette.exchanges]
        case["expect"] = expect
        cases.append(case)
    if "webhook" in raw:
        body = dict(module.sample or {})
        case = {
            "name": f"a delivery of {key}'s sample becomes its event",
            "given": {"delivery": {"body": body, "id": "delivery-1"}},
            "expect": {},
        }
        result = _run({"module": key, "cases": [case]}, path)
        case["expect"] = {"event": _scalars(result.events[0]), "key": result.key, "requests": []}
        cases.append(case)
    return {"module": key, "cases": cases}


def write(document: dict[str, Any], path: Path) -> None:
    """Write a test file with a line saying where it came from."""
    header = (
        f"# The tests of the shipped module {document['module']!r}, first written from its\n"
        "# cassette by tests/conformance/module_tests.py; run with `practiceflow test` or pytest.\n"
    )
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    path.write_text(header + text, encoding="utf-8")


def main(argv: list[str]) -> int:
    """Write the test files of the modules named (all by default)."""
    registry = default_registry()
    wanted = set(argv)
    for key in sorted(registry.actions):
        if not wanted or key in wanted:
            write(action_test(key), TESTS / "actions" / f"{key}.test.yaml")
    for key in sorted(registry.triggers):
        if not wanted or key in wanted:
            write(trigger_test(key), TESTS / "triggers" / f"{key}.test.yaml")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
