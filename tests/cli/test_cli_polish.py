"""CLI defects a newcomer met: masked own input, required options that need not be, tables
that cut identifiers, JSON outputs as strings, samples that disagree with the spec."""

from __future__ import annotations

import json
import logging
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.manifest import load_modules
from practiceflow.testing import SandboxHandle

REPO = Path(__file__).resolve().parents[2]
POLL_RECIPE = REPO / "recipes" / "new_client_integrations_to_jsonl.yaml"
LEAD = "entityType: Individual\nentityName: Janet\nentitySurname: Quixote\nemail: jq@example.com\n"


def _env(sandbox: SandboxHandle, tmp_path: Path) -> dict[str, str | None]:
    client_id, secret = sandbox.credentials("anz", "rw")
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("PRACTICEFLOW_")}
    env.update(
        PRACTICEFLOW_CLIENT_ID=client_id,
        PRACTICEFLOW_CLIENT_SECRET=secret,
        PRACTICEFLOW_BASE_URL=sandbox.base_url("anz"),
        PRACTICEFLOW_STATE=str(tmp_path / "state.db"),
        PRACTICEFLOW_PROFILES=str(tmp_path / "none.toml"),
    )
    return env


# -- --show-pii ----------------------------------------------------------------------------


def test_dry_run_masks_personal_input_unless_show_pii_and_never_logs_it(
    sandbox: SandboxHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lead = tmp_path / "lead.yaml"
    lead.write_text(LEAD, encoding="utf-8")
    env = _env(sandbox, tmp_path)
    before = len(sandbox.admin("GET", "/_admin/requests"))
    caplog.set_level(logging.DEBUG)
    args = ["action", "create_lead", "--input", str(lead), "--dry-run", "--json"]
    masked = CliRunner().invoke(cli, args, env=env)
    assert masked.exit_code == 0, masked.output
    assert json.loads(masked.stdout)["request"]["json"]["entityName"] == "***"
    shown = CliRunner().invoke(cli, [*args, "--show-pii"], env=env)
    assert shown.exit_code == 0, shown.output
    body = json.loads(shown.stdout)["request"]
    assert body["json"] == {
        "entityType": "Individual",
        "entityName": "Janet",
        "entitySurname": "Quixote",
        "email": "jq@example.com",
    }
    assert body["headers"]["X-SVC-Auth-Key"] == "***"  # credentials stay masked
    assert "for this terminal only" in shown.stderr
    assert "Quixote" not in caplog.text
    assert len(sandbox.admin("GET", "/_admin/requests")) == before  # nothing sent


def test_show_pii_goes_only_with_dry_run(tmp_path: Path) -> None:
    lead = tmp_path / "lead.yaml"
    lead.write_text(LEAD, encoding="utf-8")
    result = CliRunner().invoke(cli, ["action", "create_lead", "--input", str(lead), "--show-pii"])
    assert result.exit_code == 2
    assert "--show-pii only goes with --dry-run" in result.output


# -- optional --input / --once ---------------------------------------------------------------


def test_an_action_without_required_input_runs_without_input(
    sandbox: SandboxHandle, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        cli, ["action", "list_entity_types", "--json"], env=_env(sandbox, tmp_path)
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"]["count"] > 0


def test_an_action_with_required_input_says_which_and_where_to_find_an_example(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(cli, ["action", "get_client"])
    assert result.exit_code == 2
    assert "get_client needs --input FILE" in result.output
    assert "'practiceflow modules show get_client'" in result.output


def test_triggers_poll_needs_no_once(sandbox: SandboxHandle, tmp_path: Path) -> None:
    help_text = CliRunner().invoke(cli, ["triggers", "poll", "--help"]).output
    assert "required" not in help_text
    env = _env(sandbox, tmp_path)
    args = ["triggers", "poll", "new_client", "--json", "--state", str(tmp_path / "t.db")]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["baseline"] is True


# -- tables and JSON -----------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return [re.sub(r"\s+", " ", line) for line in text.splitlines()]


def test_modules_list_at_80_columns_never_cuts_a_key() -> None:
    result = CliRunner().invoke(cli, ["modules", "list"], terminal_width=80)
    assert result.exit_code == 0
    words = {word for line in _lines(result.output) for word in line.split(" ")}
    registry = load_modules([])
    for key in [*registry.actions, *registry.triggers]:
        assert key in words, f"{key} is cut in the table"
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_modules_show_at_80_columns_never_cuts_a_field_name() -> None:
    result = CliRunner().invoke(cli, ["modules", "show", "create_bill"], terminal_width=80)
    assert result.exit_code == 0
    for field in ("lineItems[].taxPercent", "lineItems[].extAccountID", "entityKey"):
        assert any(f" {field} " in f" {line} " for line in _lines(result.output)), field


def test_runs_list_show_and_json_keep_identifiers_whole(
    sandbox: SandboxHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = _env(sandbox, tmp_path)
    sandbox.admin(
        "POST",
        "/_admin/entities",
        {"entityName": "Json Test", "entityType": "Company", "clientStatus": "Active"},
    )
    since = (datetime.now(UTC) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    ran = CliRunner().invoke(
        cli, ["run", str(POLL_RECIPE), "--once", "--since", since, "--json"], env=env
    )
    assert ran.exit_code == 0, ran.output
    run_id = json.loads(ran.stdout)[0]["run_id"]
    listed = CliRunner().invoke(cli, ["runs", "list"], env=env, terminal_width=80)
    assert any(line.split(" ")[:1] == [run_id] for line in _lines(listed.output)), listed.output
    shown = CliRunner().invoke(cli, ["runs", "show", run_id, "--json"], env=env)
    steps = json.loads(shown.stdout)["steps"]
    assert isinstance(steps[0]["output"], dict)  # structured, not "a=1, b=2"
    assert all(name.endswith(("Key", "ID", "Id", "Number")) for name in steps[0]["output"])
    table = CliRunner().invoke(cli, ["runs", "show", run_id], env=env, terminal_width=80)
    assert run_id in table.output
    for step in steps:
        for name, value in step["output"].items():
            assert f"{name}={value}" in table.output  # never cut


def test_run_dry_run_prints_whole_urls_and_keys() -> None:
    recipe = REPO / "recipes" / "won_lead_to_client.yaml"
    result = CliRunner().invoke(cli, ["run", str(recipe), "--dry-run"], terminal_width=80)
    assert result.exit_code == 0, result.output
    key = load_modules([]).triggers["new_lead"].sample["entityKey"]
    assert f"GET /api/v1/leads/{key}\n" in result.output


# -- module samples and groups ---------------------------------------------------------------


def test_new_lead_sample_is_a_lead() -> None:
    assert load_modules([]).triggers["new_lead"].sample["status"] == "Lead"


def test_the_lead_modules_samples_name_one_lead() -> None:
    registry = load_modules([])
    key = registry.triggers["new_lead"].sample["entityKey"]
    assert registry.triggers["lead_converted"].sample["entityKey"] == key
    assert registry.actions["get_lead"].sample["entityKey"] == key
    assert registry.actions["convert_lead"].sample["entityKey"] == key  # the key never changes


def test_eform_modules_form_one_group() -> None:
    registry = load_modules([])
    nouns = {module.noun for module in [*registry.actions.values(), *registry.triggers.values()]}
    assert "Form" not in nouns
    assert registry.triggers["eform_submitted"].noun == registry.actions["send_eform"].noun


def test_run_once_prints_whole_run_and_event_ids(
    sandbox: SandboxHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    created = sandbox.admin(
        "POST",
        "/_admin/entities",
        {"entityName": "Whole Ids", "entityType": "Company", "clientStatus": "Active"},
    )
    since = (datetime.now(UTC) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    result = CliRunner().invoke(
        cli,
        ["run", str(POLL_RECIPE), "--once", "--since", since],
        env=_env(sandbox, tmp_path),
        terminal_width=80,
    )
    assert result.exit_code == 0, result.output
    found = re.search(
        rf"succeeded +run (\S+)  event client:{created['entityKey']}\n", result.stdout
    )
    assert found, result.stdout
    env = _env(sandbox, tmp_path)
    listed = json.loads(CliRunner().invoke(cli, ["runs", "list", "--json"], env=env).stdout)
    assert found[1] in {row["run_id"] for row in listed}  # the whole id, usable as is


def test_identifiers_that_look_like_emoji_codes_print_as_written(tmp_path: Path) -> None:
    from practiceflow.state import open_store

    state = tmp_path / "state.db"
    with open_store(str(state)) as store:
        run_id, _ = store.start_run("p", "lead:smile:", "delivery:x:1")
        store.step_skipped(run_id, "note", {"reason": ":thumbs_up: as data"})
    listed = CliRunner().invoke(cli, ["runs", "list", "--state", str(state)], terminal_width=120)
    assert listed.exit_code == 0, listed.output
    assert "lead:smile:" in listed.output
    shown = CliRunner().invoke(cli, ["runs", "show", run_id, "--state", str(state)])
    assert shown.exit_code == 0, shown.output
    assert "delivery:x:1" in shown.output
    assert "❌" not in shown.output + listed.output
    assert "😄" not in listed.output


@pytest.mark.parametrize(
    ("recipe", "fits"),
    [
        ("welcome_new_clients", True),  # fits at 80 once the status and time wrap
        ("accepted proposal -> first bill and onboarding forms", False),  # cannot fit
    ],
)
def test_runs_list_at_80_columns_never_breaks_a_recipe_name(
    tmp_path: Path, recipe: str, fits: bool
) -> None:
    from practiceflow.state import open_store

    state = tmp_path / "state.db"
    with open_store(str(state)) as store:
        run_id, _ = store.start_run("p", recipe, "delivery:x:1")
        store.step_skipped(run_id, "note", {"reason": "done"})
        store.set_run_status(run_id, "succeeded")
    env = {"COLUMNS": "80"}
    listed = CliRunner().invoke(cli, ["runs", "list", "--state", str(state)], env=env)
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if run_id in line)
    assert row.startswith(f"{run_id}  {recipe} "), listed.output  # both whole, on one line
    width = max(len(line.rstrip()) for line in listed.output.splitlines())
    assert (width <= 80) is fits, listed.output
    # The name as printed is the one --recipe filters on.
    args = ["runs", "list", "--state", str(state), "--recipe", recipe, "--json"]
    only = CliRunner().invoke(cli, args)
    assert [found["run_id"] for found in json.loads(only.stdout)] == [run_id]
