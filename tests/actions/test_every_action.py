"""What every action module does alike, one table derived from the modules themselves.

For each action of the catalog, from its own ``example_input``, input schema and request:

* the request it sends is the module's method and rendered path, with the credentials'
  headers (the answer mocked by ``responses``, which also fails an unexpected request);
* each error status keeps its class (an ``InDoubtError`` around a 5xx of a write), its
  module's hint and ``Retry-After``, and never shows the secret (``Kit.error_status``);
* an unknown field and a missing required field are refused, naming the field, with nothing
  sent (``Kit.bad_input``).

The per-module files hold only what is specific to their module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import pytest

from practiceflow.manifest import ActionModule, default_registry

STATUSES = (400, 401, 403, 404, 429, 500)


def _actions() -> list[str]:
    return sorted(default_registry().actions)


def _one_call_actions() -> list[tuple[str, int]]:
    """Actions whose request is the first call (``checks`` read something first; their own
    files test their statuses), with each status (403, a refused write, for writes only)."""
    modules = default_registry().actions
    return [
        (key, status)
        for key in _actions()
        if not modules[key].checks
        for status in STATUSES
        if status != 403 or modules[key].needs_write
    ]


def _closed_actions() -> list[str]:
    """Actions whose input admits only its declared fields (the others pass extra filters on)."""
    modules = default_registry().actions
    return [
        key for key in _actions() if modules[key].input_schema.get("additionalProperties") is False
    ]


def _example(module: ActionModule) -> dict[str, Any]:
    return module.example_input()


def _path(module: ActionModule, data: Mapping[str, Any]) -> str:
    path = module.request.path
    return path if isinstance(path, str) else str(path.render({"input": data}))


def _any_url(base: str) -> re.Pattern[str]:
    return re.compile(re.escape(base) + r"/.*")


@pytest.mark.parametrize(("key", "status"), _one_call_actions())
def test_an_error_answer_keeps_its_class_hint_and_request(kit: Any, key: str, status: int) -> None:
    module = kit.module(key)
    data = _example(module)
    kit.error_status(key, data, module.request.method, _any_url(kit.base), status)  # type: ignore[arg-type]
    sent = kit.api.calls[0].request
    assert sent.method == module.request.method
    assert urlsplit(sent.url).path == urlsplit(kit.base).path + _path(module, data)
    for name, value in kit.auth.items():
        assert sent.headers[name] == value


@pytest.mark.parametrize("key", _closed_actions())
def test_an_unknown_field_is_refused_by_name_and_nothing_is_sent(kit: Any, key: str) -> None:
    data = {**_example(kit.module(key)), "notAField": 1}
    kit.bad_input(key, data, "", "'notAField' is not ")  # a known field, or allowed here


@pytest.mark.parametrize(
    ("key", "field"),
    [
        (key, field)
        for key in _actions()
        for field in default_registry().action(key).input_schema.get("required", [])
    ],
)
def test_a_missing_required_field_is_refused_by_name_and_nothing_is_sent(
    kit: Any, key: str, field: str
) -> None:
    data = _example(kit.module(key))
    data.pop(field, None)
    kit.bad_input(key, data, field, "required field is missing")
