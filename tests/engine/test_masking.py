"""Masking by path: a value is masked exactly where :func:`pii_match` says its path is
personal (``*`` matching any list index), and everything else is kept, as a copy; by value:
a personal value, and every fragment of 6 characters or more of it, is masked in any text,
and an API error loses the value of every field it names."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from practiceflow.engine.masking import (
    MASK,
    mask_error,
    mask_paths,
    mask_text,
    mask_values,
    named_values,
    pii_match,
)
from practiceflow.errors import InDoubtError, ServerError, ValidationError

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


# -- by value: whole values and fragments ------------------------------------------------------

NAME = "Bartholomew Quackenbush-Featherstonehaugh"


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        (NAME, {NAME}, "***"),
        (f"hello {NAME}!", {NAME}, "hello ***!"),
        # A truncated echo, and one in another letter case.
        (f'entityName: too long (got "{NAME[:20]}', {NAME}, 'entityName: too long (got "***'),
        (f"name {NAME[3:15].upper()} refused", {NAME}, "name *** refused"),
        # Fragments of 6 characters or more; a shorter one is left.
        ("got Bartho and Barth", {NAME}, "got *** and Barth"),
        # Two values side by side merge into one mask.
        ("Quackenbush zelda@x.example", {NAME, "zelda@x.example"}, "*** ***"),
        # Short values: whole inside text from 4 characters, only as the whole text below.
        ("Jane and Janet", {"Jane"}, "*** and ***t"),
        ("J. Smith", {"J."}, "J. Smith"),
        ("J.", {"J."}, "***"),
        ("nothing personal", {NAME}, "nothing personal"),
    ],
)
def test_mask_text_masks_whole_values_and_fragments(text: str, values: set[str], expected: str):
    assert mask_text(text, values) == expected


@given(
    value=st.text(alphabet="abcdefghij XYZ.@", min_size=6, max_size=40),
    start=st.integers(0, 40),
    length=st.integers(6, 40),
    before=st.text(alphabet="0123456789 :;", max_size=10),
)
@settings(max_examples=100, deadline=None)
def test_no_fragment_of_six_characters_survives(value: str, start: int, length: int, before: str):
    fragment = value[start : start + length]
    if len(fragment) < 6:
        return
    masked = mask_text(before + fragment + before, {value})
    assert fragment.lower() not in masked.lower()
    low = masked.lower()
    assert not any(value.lower()[i : i + 6] in low for i in range(len(value) - 5))


def test_mask_values_walks_a_tree_and_numbers():
    tree = {"detail": f"bad {NAME[:30]}", "errors": {"taxNumber": [123456789]}, "n": 7}
    masked = mask_values(tree, {NAME, "123456789"})
    assert masked == {"detail": "bad ***", "errors": {"taxNumber": ["***"]}, "n": 7}


def test_named_values_are_the_values_of_fields_an_error_names():
    data = {"externalSystemID": "crm-00042-abc", "entityType": "Company", "n": 5}
    text = "externalSystemID: already used by another client"
    assert named_values(data, text) == frozenset({"crm-00042-abc"})
    assert named_values(data, "nothing named") == frozenset()


def test_mask_error_masks_message_problem_and_cause_in_place():
    data = {"entityName": NAME, "externalSystemID": "crm-00042-abc"}
    problem = {
        "title": "Bad request",
        "detail": f'entityName: too long (got "{NAME[:25]}); externalSystemID crm-00042-abc',
    }
    api = ValidationError("POST", "/api/v1/entities", 400, problem)
    doubt = InDoubtError("POST", "/api/v1/entities", api)
    masked = mask_error(doubt, data, frozenset({("entityName",)}))
    assert masked is doubt
    for text in (str(doubt), str(api), json.dumps(api.problem)):
        assert "Quackenbush" not in text
        assert "Bartho" not in text
        assert "crm-00042-abc" not in text  # named by the error, so masked though untagged
    assert api.problem["title"] == "Bad request"
    assert "entityName: too long" in api.problem["detail"]


def test_mask_error_leaves_an_error_without_personal_values_alone():
    error = ServerError("GET", "/api/v1/entities", 503, {"detail": "try later"})
    assert mask_error(error, {"entityType": "Company"}, frozenset()) is error
    assert str(error) == "GET /api/v1/entities -> 503: try later"
