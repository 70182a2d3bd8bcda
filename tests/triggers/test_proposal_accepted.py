"""The proposal_accepted trigger module: webhook mapping, per-client poll fallback, dedupe."""

from __future__ import annotations

import pytest
from trigger_helpers import check_delivery_cases, check_error_statuses, check_loads, run_polls

from practiceflow.errors import ConfigError
from practiceflow.triggers import load_definition, resolve_mode

KEY = "proposal_accepted"
PATH = "/api/v1/proposals/list"
CLIENT = "5114e089-47cd-4e89-9966-cab520339605"


def test_module_loads_with_webhook_and_poll():
    check_loads(KEY, webhook=True, poll=True)


def test_help_text_says_where_polling_cannot_stand_in():
    text = load_definition(KEY).module.description
    assert "per client" in text
    assert "entityKey" in text


@pytest.mark.parametrize(
    ("body", "key", "fields"),
    [
        ({"data": {"proposalKey": "p1", "entityKey": "e1"}}, "proposal:p1", {"entityKey": "e1"}),
        ({"proposalKey": "p1", "entityKey": "e1"}, "proposal:p1", {"proposalKey": "p1"}),
        ({"data": "odd"}, "delivery:evt-9", {"data": "odd"}),
        ({}, "delivery:evt-9", {}),
        (["not", "an", "object"], "delivery:evt-9", {"body": ["not", "an", "object"]}),
        ("plain text", "delivery:evt-9", {"body": "plain text"}),
    ],
)
def test_delivery_bodies_map_tolerantly(body, key, fields):
    check_delivery_cases(KEY, [(body, key, fields)])


@pytest.mark.parametrize(
    ("second", "expected"),
    [
        (
            [
                {"proposalKey": "p1", "status": "Accepted"},
                {"proposalKey": "p2", "status": "Accepted"},
            ],
            ["proposal:p2"],
        ),
        (
            [{"proposalKey": "p1", "status": "Accepted"}, {"proposalKey": "p2", "status": "Draft"}],
            [],
        ),
        ([{"proposalKey": "p1", "status": "Accepted"}, {"proposalKey": "p2"}], []),
    ],
)
def test_poll_fallback_fires_newly_accepted_proposals_once(store, second, expected):
    page = {"entityKey": CLIENT, "pageNumber": "1", "pageSize": "100"}
    pages = [(page, [{"proposalKey": "p1", "status": "Accepted"}]), (page, second), (page, second)]
    found = run_polls(store, KEY, PATH, pages, options={"entityKey": CLIENT}, polls=3)
    assert found == [[], expected, []]


def test_auto_mode_polls_only_without_a_public_url():
    definition = load_definition(KEY)
    assert resolve_mode(definition, "auto", None) == "poll"
    assert resolve_mode(definition, "auto", "https://hooks.example") == "webhook"
    assert resolve_mode(definition, "both", "https://hooks.example") == "both"
    with pytest.raises(ConfigError, match="public URL"):
        resolve_mode(definition, "both", None)


def test_error_statuses_of_the_list_raise_and_move_nothing(store):
    check_error_statuses(store, KEY, PATH, {"entityKey": CLIENT})
