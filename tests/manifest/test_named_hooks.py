"""The registry of named checks and hooks that modules refer to."""

from __future__ import annotations

import pytest

from practiceflow.errors import BugError, ConfigError, NotFoundError
from practiceflow.hooks import (
    CHECKS,
    HOOKS,
    ActionContext,
    get_check,
    get_hook,
    register_check,
)
from practiceflow.hooks.bills import entity_is_active_client, ledger_rules
from practiceflow.hooks.leads import canonical_lead_names, lead_settings_names
from practiceflow.manifest import default_registry


def test_shipped_checks_and_hooks_are_registered():
    assert {"lead_settings_names", "entity_is_active_client", "ledger_rules"} <= set(CHECKS)
    assert "canonical_lead_names" in HOOKS
    assert all(named.summary for named in [*CHECKS.values(), *HOOKS.values()])


def test_unknown_names_list_the_valid_values():
    with pytest.raises(ConfigError, match=r"unknown check 'nope'; valid values are \["):
        get_check("nope")
    with pytest.raises(ConfigError, match="unknown hook 'nope'"):
        get_hook("nope")


def test_a_name_cannot_be_registered_twice():
    with pytest.raises(BugError, match="registered twice"):
        register_check("ledger_rules")(lambda ctx: None)


# -- each check and hook on its own, with an in-memory client ---------------------------------

KEY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"


class Reads:
    """Answers GETs from a table; counts them."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def get(self, path, params=None):
        self.calls.append(path)
        value = self.table[path]
        if isinstance(value, Exception):
            raise value
        return value


def context(action, data, table):
    module = default_registry().action(action)
    return ActionContext(module=module, input=dict(data), client=Reads(table))


def test_canonical_lead_names_fixes_case_only():
    ctx = context(
        "create_lead",
        {"leadSource": "WEBSITE", "leadStatus": "Nwe"},
        {"/api/v1/settings/lead-sources": ["Website"], "/api/v1/settings/lead-statuses": ["New"]},
    )
    assert canonical_lead_names(ctx) == {"leadSource": "Website", "leadStatus": "Nwe"}
    assert ctx.warnings == ["leadSource 'WEBSITE' sent as 'Website' (the practice's spelling)"]


def test_canonical_lead_names_changes_nothing_when_names_match():
    ctx = context(
        "create_lead", {"leadSource": "Website"}, {"/api/v1/settings/lead-sources": ["Website"]}
    )
    assert canonical_lead_names(ctx) is None


def test_lead_settings_names_reads_each_list_once():
    table = {
        "/api/v1/settings/lead-sources": ["Website"],
        "/api/v1/settings/lead-statuses": ["New"],
    }
    ctx = context("create_lead", {"leadSource": "Webiste", "leadStatus": "New"}, table)
    canonical_lead_names(ctx)
    lead_settings_names(ctx)
    assert [issue.path for issue in ctx.problems] == ["leadSource"]
    assert "did you mean 'Website'?" in ctx.problems[0].message
    assert sorted(ctx.client.calls) == sorted(table)


def test_entity_is_active_client_records_a_problem_for_a_lead_and_for_a_missing_key():
    lead = context(
        "create_bill", {"entityKey": KEY}, {f"/api/v1/entities/{KEY}": {"status": "Lead"}}
    )
    entity_is_active_client(lead)
    assert lead.problems[0].path == "entityKey"
    missing = context(
        "create_bill",
        {"entityKey": KEY},
        {f"/api/v1/entities/{KEY}": NotFoundError("GET", "/x", 404)},
    )
    entity_is_active_client(missing)
    assert "no client has this entityKey" in missing.problems[0].message


def test_ledger_rules_do_not_read_rates_when_every_line_has_a_tax_id():
    table = {"/api/v1/bills/ledger/status": {"connected": True}}
    lines = [{"amount": 1, "taxPercent": 3, "extItemID": 1, "extTaxID": 2}]
    ctx = context("create_bill", {"entityKey": KEY, "lineItems": lines}, table)
    ledger_rules(ctx)
    assert ctx.problems == []
    assert ctx.client.calls == ["/api/v1/bills/ledger/status"]
