"""Masking by path: a value is masked exactly where :func:`pii_match` says its path is
personal (``*`` matching any list index), and everything else is kept, as a copy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from practiceflow.engine.masking import MASK, mask_paths, pii_match

PiiPaths = frozenset[tuple[str, ...]]


def _by_definition(value: Any, pii: PiiPaths, at: tuple[str | int, ...] = ()) -> Any:
    """The rule spelled out: mask a node when its path matches a personal path."""
    if at and pii_match(at, pii):
        return MASK
    if isinstance(value, Mapping):
        return {key: _by_definition(child, pii, (*at, key)) for key, child in value.items()}
    if isinstance(value, list):
        return [_by_definition(child, pii, (*at, index)) for index, child in enumerate(value)]
    return value


KEYS = st.sampled_from(["name", "email", "lines", "*"])
VALUES = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3),
    max_leaves=12,
)
PATHS = st.frozensets(st.lists(KEYS, max_size=3).map(tuple), max_size=4)
AT = st.lists(KEYS | st.integers(0, 2), max_size=2).map(tuple)


@settings(max_examples=400)
@given(VALUES, PATHS, AT)
def test_mask_paths_masks_exactly_what_pii_match_calls_personal(
    value: Any, pii: PiiPaths, at: tuple[str | int, ...]
) -> None:
    assert mask_paths(value, pii, at) == _by_definition(value, pii, at)


@pytest.mark.parametrize(
    ("value", "pii", "expected"),
    [
        pytest.param(
            {"name": "Ann", "type": "Company"},
            {("name",)},
            {"name": MASK, "type": "Company"},
            id="a-field",
        ),
        pytest.param(
            {"lines": [{"narration": "x", "amount": 1}, {"narration": "y", "amount": 2}]},
            {("lines", "*", "narration")},
            {"lines": [{"narration": MASK, "amount": 1}, {"narration": MASK, "amount": 2}]},
            id="every-list-item",
        ),
        pytest.param(
            {"address": {"city": "Perth"}, "name": None},
            {("address",)},
            {"address": MASK, "name": None},
            id="a-whole-object",
        ),
        pytest.param({"a": 1}, set(), {"a": 1}, id="nothing-personal"),
    ],
)
def test_mask_paths_examples(value: Any, pii: set[tuple[str, ...]], expected: Any) -> None:
    assert mask_paths(value, frozenset(pii)) == expected


def test_mask_paths_returns_a_copy() -> None:
    value = {"kept": {"inner": [1, 2]}, "name": "Ann"}
    masked = mask_paths(value, frozenset({("name",)}))
    masked["kept"]["inner"].append(3)
    assert value == {"kept": {"inner": [1, 2]}, "name": "Ann"}
