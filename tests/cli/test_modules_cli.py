"""``practiceflow modules list|show|validate`` and ``practiceflow action``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import responses
from click.testing import CliRunner
from responses import matchers

from practiceflow.cli import cli
from practiceflow.manifest.resources import data_dir

BASE = "https://api.test/anz"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "cli-secret-never-printed"
KEY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
LEAD_KEY = "6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01"
CASES = Path(__file__).parents[1] / "manifest" / "cases"


@pytest.fixture
def env(tmp_path):
    values = {name: None for name in os.environ if name.startswith("PRACTICEFLOW_")}
    values["PRACTICEFLOW_PROFILES"] = str(tmp_path / "none.toml")
    values["COLUMNS"] = "200"  # rich tables wrap to the terminal width
    return values


@pytest.fixture
def creds(env):
    return {
        **env,
        "PRACTICEFLOW_CLIENT_ID": CLIENT_ID,
        "PRACTICEFLOW_CLIENT_SECRET": SECRET,
        "PRACTICEFLOW_BASE_URL": BASE,
    }


def run(args, env, input=None):
    return CliRunner().invoke(cli, args, env=env, input=input, catch_exceptions=False)


@pytest.mark.parametrize(
    "args",
    [
        ["modules", "--help"],
        ["modules", "list", "--help"],
        ["modules", "show", "--help"],
        ["modules", "validate", "--help"],
        ["action", "--help"],
    ],
)
def test_every_command_has_help_with_an_example_and_the_modules_option(env, args):
    result = run(args, env)
    assert result.exit_code == 0
    assert "practiceflow " in result.output.split("Example", 1)[1]
    if args[-2] != "modules" or args[0] == "action":
        assert "--modules DIR" in result.output


# -- list ---------------------------------------------------------------------------------


def test_list_groups_the_modules_by_noun(env):
    result = run(["modules", "list"], env)
    assert result.exit_code == 0
    for text in ("Bill", "Client", "Lead", "create_bill", "convert_lead"):
        assert text in result.output


def test_list_json_is_machine_readable_and_includes_user_modules(env, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "list_groups.yaml").write_text((CASES / "valid" / "list_groups.yaml").read_text())
    result = run(["modules", "list", "--json", "--modules", str(folder)], env)
    rows = json.loads(result.output)
    keys = [row["key"] for row in rows]
    assert {"create_bill", "create_client", "create_lead", "convert_lead", "list_groups"} <= set(
        keys
    )
    groups = next(row for row in rows if row["key"] == "list_groups")
    assert groups == {**groups, "noun": "Group", "type": "action", "needs_write": False}


# -- show ---------------------------------------------------------------------------------


def test_show_prints_the_form_an_example_and_the_sample(env):
    result = run(["modules", "show", "create_bill"], env)
    assert result.exit_code == 0
    out = result.output
    for text in (
        "Field",
        "Required",
        "Example",
        "lineItems[].amount",
        "lineItems[].taxPercent",
        "Example input",
        "Sample output",
        '"billingID": 1042',
        "ledger_rules",
    ):
        assert text in out, text


def test_show_marks_personal_fields(env):
    assert "[personal data]" in run(["modules", "show", "create_client"], env).output


def test_show_json(env):
    payload = json.loads(run(["modules", "show", "convert_lead", "--json"], env).output)
    assert payload["example_input"] == {"entityKey": LEAD_KEY}
    assert payload["sample"]["status"] == "Active"


def test_show_unknown_key_suggests(env):
    result = run(["modules", "show", "create_bil"], env)
    assert result.exit_code == 2
    assert "did you mean 'create_bill'?" in result.output


# -- validate -----------------------------------------------------------------------------


def test_validate_without_paths_checks_everything_shipped(env):
    result = run(["modules", "validate"], env)
    assert result.exit_code == 0, result.output
    assert "ok: all modules valid" in result.output


def test_validate_files_prints_every_problem_located_and_exits_1(env):
    paths = [
        str(CASES / "invalid" / "top_level.yaml"),
        str(CASES / "invalid" / "template_mistakes.yaml"),
    ]
    result = run(["modules", "validate", *paths], env)
    assert result.exit_code == 1
    assert (
        "top_level.yaml:5:1: 'titel' is not a known field; did you mean 'title'?" in result.output
    )
    assert (
        "template_mistakes.yaml:18:13 request.body.amount: input.amonut is not declared"
        in result.output
    )
    assert "problems found" in result.output


def test_validate_a_folder_of_good_modules(env):
    result = run(["modules", "validate", str(CASES / "valid"), str(data_dir("actions"))], env)
    assert result.exit_code == 0, result.output
    shipped = [p for p in Path(str(data_dir("actions"))).iterdir() if p.suffix == ".yaml"]
    assert f"ok: {2 + len(shipped)} files valid" in result.output


def test_validate_a_modules_dir_with_an_unmarked_override(env, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "create_bill.yaml").write_text(
        (Path(str(data_dir("actions"))) / "create_bill.yaml").read_text()
    )
    result = run(["modules", "validate", "--modules", str(folder)], env)
    assert result.exit_code == 1
    assert "already shipped" in result.output


# -- action -------------------------------------------------------------------------------


def test_action_bad_input_names_file_line_and_field_and_sends_nothing(env, tmp_path):
    path = tmp_path / "bill.yaml"
    path.write_text(f"entityKey: {KEY}\nlineItems:\n  - amount: ten\n    taxAmount: 1\n")
    with responses.RequestsMock() as api:
        result = run(["action", "create_bill", "--input", str(path), "--dry-run"], env)
        assert len(api.calls) == 0
    assert result.exit_code == 2
    assert f"{path}:3:13 lineItems[0].amount: got 'ten'; expected a number" in result.output


def test_action_broken_yaml_input_is_located(env):
    result = run(["action", "create_bill", "--input", "-"], env, input="lineItems: [1\n")
    assert result.exit_code == 2
    assert "<stdin>:2:1" in result.output


def test_dry_run_prints_the_exact_request_masked_and_sends_nothing(creds, tmp_path):
    path = tmp_path / "client.json"
    path.write_text(
        json.dumps({"entityType": "Company", "entityName": "Acme", "taxNumber": "123456782"})
    )
    with responses.RequestsMock() as api:
        result = run(["action", "create_client", "--input", str(path), "--dry-run"], creds)
        assert len(api.calls) == 0
    assert result.exit_code == 0, result.output
    assert f"POST {BASE}/api/v1/entities" in result.output
    assert "X-SVC-Auth-Key: ***" in result.output
    assert '"taxNumber": "***"' in result.output
    assert SECRET not in result.output
    assert "123456782" not in result.output


def test_dry_run_without_credentials_still_shows_the_request(env):
    result = run(
        ["action", "convert_lead", "--input", "-", "--dry-run", "--json"],
        env,
        input=json.dumps({"entityKey": LEAD_KEY}),
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output[result.output.index("{") :])
    assert payload["request"]["url"] == f"/api/v1/leads/{LEAD_KEY}/convert-to-client"
    assert payload["dry_run"] is True


def test_action_sends_with_the_configured_client(creds):
    with responses.RequestsMock(assert_all_requests_are_fired=True) as api:
        api.post(
            f"{BASE}/api/v1/leads/{LEAD_KEY}/convert-to-client",
            json={"entityKey": LEAD_KEY, "status": "Active"},
            match=[matchers.header_matcher({"X-SVC-Auth-ID": CLIENT_ID, "X-SVC-Auth-Key": SECRET})],
        )
        result = run(
            ["action", "convert_lead", "--input", "-", "--json"],
            creds,
            input=json.dumps({"entityKey": LEAD_KEY}),
        )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["output"] == {"entityKey": LEAD_KEY, "status": "Active"}
    assert payload["status"] == 200


def test_action_api_error_maps_to_its_exit_code(creds):
    with responses.RequestsMock() as api:
        api.post(
            f"{BASE}/api/v1/leads/{LEAD_KEY}/convert-to-client", status=403, json={"status": 403}
        )
        result = run(
            ["action", "convert_lead", "--input", "-"],
            creds,
            input=json.dumps({"entityKey": LEAD_KEY}),
        )
    assert result.exit_code == 3
    assert "canWrite" in result.output


def test_action_without_credentials_is_a_config_error(env):
    result = run(
        ["action", "convert_lead", "--input", "-"], env, input=json.dumps({"entityKey": LEAD_KEY})
    )
    assert result.exit_code == 2
