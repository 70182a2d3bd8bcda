"""The registry of named checks and hooks that modules refer to."""

from __future__ import annotations

import pytest

from practiceflow.errors import BugError, ConfigError
from practiceflow.hooks import CHECKS, HOOKS, get_check, get_hook, register_check


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
