"""Declared choices (``x-choices``): loading, registry checks, and the online input check."""

from __future__ import annotations

import json
import os

import pytest
import responses
import yaml
from click.testing import CliRunner
from responses import matchers

from practiceflow.api import Client
from practiceflow.cli import cli
from practiceflow.engine.masking import values_at
from practiceflow.engine.run import check_choices
from practiceflow.errors import ManifestError
from practiceflow.manifest import default_registry, load_modules
from practiceflow.manifest.choices import ChoiceSource, accepted_values, options_from_rows
from practiceflow.manifest.resources import data_dir

BASE = "https://api.test/anz"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "choices-secret-never-printed"
TYPES = [
    {"entityTypeID": 1, "code": "IND", "name": "Individual"},
    {"entityTypeID": 2, "code": "CO", "name": "Company"},
]
SOURCES = [{"leadSourceID": 1, "name": "Referral"}, {"leadSourceID": 2, "name": "Website"}]
STATUSES = [{"leadStatusID": 1, "name": "New"}]


def test_declarations_are_read_from_nested_fields_and_line_items():
    registry = default_registry()
    lead = registry.action("create_lead").choices
    assert lead[("leadSource",)] == ChoiceSource("list_lead_sources", "name", "name")
    assert lead[("entityType",)].also == ("code",)
    bill = registry.action("create_bill").choices
    assert bill[("lineItems", "*", "extTaxID")].action == "list_ledger_tax_rates"
    assert registry.trigger("any_webhook_event").choices[("event",)].value is None
    assert registry.action("send_eform").choices[("templateId",)].search is True


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("list_nothing", "valid values are ["),
        ("create_lead", "not a list action"),
    ],
)
def test_a_declaration_must_name_a_list_action(tmp_path, action, message):
    source = yaml.safe_load((data_dir("actions") / "create_lead.yaml").read_text())
    source["key"] = "create_lead_mine"
    source["input"]["properties"]["leadSource"]["x-choices"] = {"action": action}
    (tmp_path / "create_lead_mine.yaml").write_text(yaml.safe_dump(source))
    with pytest.raises(ManifestError) as caught:
        load_modules([tmp_path])
    text = str(caught.value)
    assert "create_lead_mine.yaml" in text
    assert "input.leadSource.x-choices.action" in text
    assert message in text


def test_a_declaration_with_an_unknown_keyword_is_refused_by_the_meta_schema(tmp_path):
    source = yaml.safe_load((data_dir("actions") / "create_lead.yaml").read_text())
    source["key"] = "create_lead_bad"
    source["input"]["properties"]["leadSource"]["x-choices"] = {"action": "x", "labels": "y"}
    (tmp_path / "create_lead_bad.yaml").write_text(yaml.safe_dump(source))
    with pytest.raises(ManifestError, match="labels"):
        load_modules([tmp_path])


def test_options_keep_order_drop_repeats_and_apply_where():
    rows = [
        {"id": 1, "name": "A", "isActive": True},
        {"id": 2, "name": "B", "isActive": False},
        {"id": 1, "name": "A again", "isActive": True},
        {"name": "no id", "isActive": True},
    ]
    source = ChoiceSource("x", value="id", label="name", where={"isActive": True})
    assert options_from_rows(rows, source) == [(1, "A")]
    plain = ChoiceSource("x")
    assert options_from_rows(["b.x", "a.y"], plain) == [("b.x", "b.x"), ("a.y", "a.y")]
    assert accepted_values(TYPES, ChoiceSource("x", "name", also=("code",))) == {
        "individual",
        "company",
        "ind",
        "co",
    }


def test_values_at_walks_line_items():
    data = {"lineItems": [{"extTaxID": 3}, {"amount": 1}, {"extTaxID": 4}]}
    assert list(values_at(data, ("lineItems", "*", "extTaxID"))) == [
        (("lineItems", 0, "extTaxID"), 3),
        (("lineItems", 2, "extTaxID"), 4),
    ]


def _lists(api: responses.RequestsMock) -> None:
    auth = matchers.header_matcher({"X-SVC-Auth-ID": CLIENT_ID, "X-SVC-Auth-Key": SECRET})
    api.get(f"{BASE}/api/v1/settings/entity-types", json=TYPES, match=[auth])
    api.get(f"{BASE}/api/v1/settings/lead-sources", json=SOURCES, match=[auth])
    api.get(f"{BASE}/api/v1/settings/lead-statuses", json=STATUSES, match=[auth])


def test_check_choices_names_the_valid_values_and_reads_each_list_once():
    registry = default_registry()
    module = registry.action("create_lead")
    data = {"entityType": "co", "entityName": "Jo", "leadSource": "Referal", "leadStatus": "new"}
    client = Client(base_url=BASE, client_id=CLIENT_ID, client_secret=SECRET)
    with responses.RequestsMock(assert_all_requests_are_fired=True) as api:
        _lists(api)
        issues = check_choices(module, data, client, registry, file="lead.json")
        assert len(api.calls) == 3
    assert [str(issue) for issue in issues] == [
        "lead.json leadSource: got 'Referal'; valid values are ['Referral', 'Website'] "
        "(from list_lead_sources)"
    ]


def test_check_choices_reads_only_the_lists_the_input_uses():
    registry = default_registry()
    module = registry.action("create_lead")
    client = Client(base_url=BASE, client_id=CLIENT_ID, client_secret=SECRET)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as api:
        _lists(api)
        issues = check_choices(
            module, {"entityType": "Company", "entityName": "Jo"}, client, registry
        )
        assert [call.request.path_url for call in api.calls] == [
            "/anz/api/v1/settings/entity-types"
        ]
    assert issues == []


@pytest.fixture
def creds(tmp_path):
    values: dict[str, str | None] = {
        name: None for name in os.environ if name.startswith("PRACTICEFLOW_")
    }
    values["PRACTICEFLOW_PROFILES"] = str(tmp_path / "none.toml")
    values.update(
        PRACTICEFLOW_CLIENT_ID=CLIENT_ID,
        PRACTICEFLOW_CLIENT_SECRET=SECRET,
        PRACTICEFLOW_BASE_URL=BASE,
    )
    return values


def test_action_refuses_a_value_the_list_does_not_offer_and_sends_nothing(creds, tmp_path):
    path = tmp_path / "lead.json"
    path.write_text(
        json.dumps({"entityType": "Company", "entityName": "Jo", "leadSource": "Walk-in"}, indent=1)
    )
    with responses.RequestsMock(assert_all_requests_are_fired=False) as api:
        _lists(api)
        api.post(f"{BASE}/api/v1/leads", json={"entityKey": "x"})
        result = CliRunner().invoke(cli, ["action", "create_lead", "--input", str(path)], env=creds)
        sent = [call.request.method for call in api.calls]
    assert result.exit_code == 2, result.output
    assert f"{path}:4:" in result.output
    assert "leadSource: got 'Walk-in'; valid values are ['Referral', 'Website']" in result.output
    assert "POST" not in sent
    assert SECRET not in result.output


def test_dry_run_does_not_read_the_lists(creds, tmp_path):
    path = tmp_path / "lead.json"
    path.write_text(json.dumps({"entityType": "Nope", "entityName": "Jo"}))
    with responses.RequestsMock() as api:
        result = CliRunner().invoke(
            cli, ["action", "create_lead", "--input", str(path), "--dry-run"], env=creds
        )
        assert len(api.calls) == 0
    assert result.exit_code == 0, result.output
