"""An input key within a typo of a declared one is refused with "did you mean", for every
action whose input lets extra keys through, and nothing is sent (``send_eform`` with
``mutte: true`` would otherwise go out with its email)."""

from __future__ import annotations

from typing import Any

import pytest

from practiceflow.engine import run_action
from practiceflow.errors import InputError
from practiceflow.manifest import ActionModule, default_registry
from practiceflow.manifest.validation import near_misses


def _typo(name: str) -> str:
    """A one-edit typo that is no other declared name (a letter doubled)."""
    return name[:2] + name[1] + name[2:]


def _cases() -> list[Any]:
    cases = []
    for module in default_registry().actions.values():
        schema = module.input_schema
        declared = schema.get("properties") or {}
        if schema.get("additionalProperties") is False:
            continue
        absent = [name for name in declared if len(name) > 4 and _typo(name) not in declared]
        if absent:
            cases.append(pytest.param(module, absent[0], id=module.key))
    return cases


class _Refuses:
    """A client that fails the test if anything is sent or described."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the client was used ({name}) for an input that was refused")


@pytest.mark.parametrize(("module", "name"), _cases())
def test_a_near_miss_of_a_declared_key_is_refused_and_nothing_is_sent(
    module: ActionModule, name: str
) -> None:
    data = {**module.example_input(), _typo(name): True}

    with pytest.raises(InputError) as raised:
        run_action(module, data, _Refuses())  # type: ignore[arg-type]

    assert f"did you mean {name!r}?" in str(raised.value)


def test_send_eform_mutte_is_refused_with_the_field_named() -> None:
    module = default_registry().action("send_eform")
    data = {**module.example_input(), "mutte": True}

    with pytest.raises(InputError, match=r"unknown field 'mutte'; did you mean 'mute'\?"):
        run_action(module, data, _Refuses())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"mute": True, "extra": 1}, []),  # a real extra field, far from every name
        ({"mode": 1}, []),  # one edit from 'mute'? no: two, and 'mute' is short
        ({"Mute": True}, [(("Mute",), "unknown field 'Mute'; did you mean 'mute'?")]),
        (
            {"lines": [{"amout": 1}]},
            [(("lines", 0, "amout"), "unknown field 'amout'; did you mean 'amount'?")],
        ),
    ],
)
def test_near_misses_table(data: dict[str, Any], expected: list[Any]) -> None:
    schema = {
        "type": "object",
        "properties": {
            "mute": {"type": "boolean"},
            "lines": {"type": "array", "items": {"type": "object", "properties": {"amount": {}}}},
        },
    }
    assert near_misses(schema, data) == expected
