"""What happens while serve is down is said where a user looks (issue 24): ``triggers
list``, ``plan`` and ``serve --help``."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from practiceflow.cli import cli

RECIPES = Path(__file__).parents[2] / "recipes"


def test_triggers_list_says_which_triggers_depend_on_the_senders_retries() -> None:
    result = CliRunner().invoke(cli, ["triggers", "list", "--json"])
    assert result.exit_code == 0, result.output
    downtime = {row["key"]: row["downtime"] for row in json.loads(result.stdout)}
    assert downtime["eform_submitted"] == "sender retries only"
    assert downtime["onboarding_completed"] == "sender retries only"
    assert downtime["new_client"] == "caught up by polling"
    human = CliRunner().invoke(cli, ["triggers", "list"]).stdout
    line = next(text for text in human.splitlines() if text.startswith("eform_submitted"))
    assert line.endswith("(*)")
    assert "depend on the sender's retries" in human


def test_plan_says_what_each_recipe_does_about_downtime() -> None:
    eform = RECIPES / "eform_submitted_to_aml.yaml"
    polled = RECIPES / "new_client_integrations_to_jsonl.yaml"
    result = CliRunner().invoke(cli, ["plan", str(eform), str(polled), "--json"])
    assert result.exit_code == 0, result.output
    first, second = json.loads(result.stdout)["downtime"]
    assert "eform_submitted: no poll source" in first
    assert "sender's retries" in first
    assert "new_client: events while serve is down are caught up" in second
    human = CliRunner().invoke(cli, ["plan", str(eform)]).stdout
    assert "while serve is down" in human


def test_serve_help_says_a_stop_keeps_the_subscriptions() -> None:
    text = CliRunner().invoke(cli, ["serve", "--help"]).stdout
    assert "--unsubscribe-on-exit" in text
    assert "subscriptions are kept" in " ".join(text.split())
