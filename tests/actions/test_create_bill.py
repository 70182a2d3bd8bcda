"""create_bill: POST /api/v1/bills (spec 2.4, 4.1 rules 1-2), its checks and every error status."""

from __future__ import annotations

import copy

import pytest
import responses
from responses import matchers

from practiceflow.api import Client, RateLimits, RetryPolicy
from practiceflow.engine import run_action
from practiceflow.errors import (
    AuthError,
    InDoubtError,
    InputError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
    WriteAccessError,
)
from practiceflow.hooks import tolerant
from practiceflow.manifest import default_registry

BASE = "https://api.test/anz"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "s3cr3t-bill-tests"
AUTH = {"X-SVC-Auth-ID": CLIENT_ID, "X-SVC-Auth-Key": SECRET}
KEY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
ENTITY_URL = f"{BASE}/api/v1/entities/{KEY}"
STATUS_URL = f"{BASE}/api/v1/bills/ledger/status"
RATES_URL = f"{BASE}/api/v1/bills/ledger/tax-rates"
BILLS_URL = f"{BASE}/api/v1/bills"
MODULE = default_registry().action("create_bill")

INPUT = {
    "entityKey": KEY,
    "billDate": "2024-05-01",
    "dueDate": "2024-05-31",
    "billDetails": "Onboarding services",
    "sendBill": False,
    "lineItems": [{"amount": 100, "taxPercent": 10, "narration": "Onboarding fee"}],
}
BILL = {
    "billingID": 1042,
    "entityID": 311,
    "entityName": "Acme Pty Ltd",
    "billDate": "2024-05-01",
    "dueDate": "2024-05-31",
    "billNumber": "INV-1042",
    "billAmount": 100.0,
    "billTax": 10.0,
    "billTotal": 110.0,
    "paymentTotal": 0.0,
    "billDetails": "Onboarding services",
    "syncNow": False,
    "sendBill": False,
    "invoiceStatus": "Draft",
    "externalID": None,
    "externalNumber": None,
    "externalURL": None,
    "createdOn": "2024-05-01T09:30:00Z",
    "lineItems": [
        {
            "billingDetailID": 5001,
            "billAmount": 100.0,
            "billTax": 10.0,
            "billTotal": 110.0,
            "narration": "Onboarding fee",
            "extItemID": None,
            "extAccountID": None,
            "extTaxID": None,
        },
    ],
}


@pytest.fixture
def client(tmp_path):
    with Client(
        CLIENT_ID,
        SECRET,
        base_url=BASE,
        environ={},
        profiles_file=tmp_path / "none.toml",
        retry=RetryPolicy(max_attempts=1),
        limits=RateLimits(max_wait=0),
    ) as api_client:
        yield api_client


@pytest.fixture
def api():
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def active_client_and_ledger(api, ledger=None):
    api.get(
        ENTITY_URL,
        json={"entityKey": KEY, "status": "Active"},
        match=[matchers.header_matcher(AUTH)],
    )
    api.get(STATUS_URL, json=ledger if ledger is not None else {"connected": False})


def with_lines(*lines):
    data = copy.deepcopy(INPUT)
    data["lineItems"] = list(lines)
    return data


# -- input validation: a clear error naming the field, and nothing sent --------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"entityKey": None}, "entityKey: required field is missing"),
        ({"lineItems": None}, "lineItems: required field is missing"),
        ({"entityKey": "ACME01"}, "entityKey: got 'ACME01'; expected a UUID"),
        ({"billDate": "1 May 2024"}, "billDate: got '1 May 2024'; expected a date as YYYY-MM-DD"),
        ({"sendBill": "yes"}, "sendBill: got 'yes'; expected true or false"),
        ({"lineItems": []}, "lineItems: got a list; expected at least this many items: 1"),
        (
            {"lineItems": [{"amount": "ten", "taxAmount": 1}]},
            "lineItems[0].amount: got 'ten'; expected a number",
        ),
        ({"lineItems": [{"amount": 10}]}, "lineItems[0]: needs 'taxAmount' or 'taxPercent'"),
        ({"lineItems": [{"taxPercent": 10}]}, "lineItems[0].amount: required field is missing"),
        (
            {"lineItems": [{"amonut": 10, "taxPercent": 10}]},
            "lineItems[0]: 'amonut' is not a known field; did you mean 'amount'?",
        ),
        (
            {"lineItems": [{"amount": 10, "taxPercent": 10, "extTaxID": "GST"}]},
            "lineItems[0].extTaxID: got 'GST'; expected an integer",
        ),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(api, client, change, expected):
    data = copy.deepcopy(INPUT)
    for field, value in change.items():
        if value is None:
            data.pop(field)
        else:
            data[field] = value
    with pytest.raises(InputError) as caught:
        run_action("create_bill", data, client)
    assert any(str(issue).startswith(f"input {expected}") for issue in caught.value.issues), (
        caught.value
    )
    assert "nothing was sent" in str(caught.value)
    assert len(api.calls) == 0


def test_every_input_problem_is_reported_at_once(api, client):
    data = with_lines({"amount": "ten"}, {"amount": 5, "taxAmount": "x"})
    data["entityKey"] = 7
    with pytest.raises(InputError) as caught:
        run_action("create_bill", data, client)
    paths = {issue.path for issue in caught.value.issues}
    assert {"entityKey", "lineItems[0]", "lineItems[0].amount", "lineItems[1].taxAmount"} <= paths
    assert len(api.calls) == 0


# -- the rendered request and the parsed output -------------------------------------------


def test_creates_the_bill_with_the_exact_request_and_maps_the_detail(api, client):
    active_client_and_ledger(api)
    api.post(
        BILLS_URL,
        status=201,
        json=BILL,
        match=[
            matchers.header_matcher({**AUTH, "Content-Type": "application/json"}),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher(
                {
                    "entityKey": KEY,
                    "billDate": "2024-05-01",
                    "dueDate": "2024-05-31",
                    "billDetails": "Onboarding services",
                    "sendBill": False,
                    "lineItems": [{"amount": 100, "taxPercent": 10, "narration": "Onboarding fee"}],
                },
                strict_match=True,
            ),
        ],
    )
    result = run_action("create_bill", INPUT, client)
    assert result.status == 201
    assert result.warnings == []
    assert result.output == BILL
    assert list(MODULE.output.validator.iter_errors(result.output)) == []
    assert result.request["url"] == BILLS_URL
    assert SECRET not in repr(result)


def test_unknown_response_fields_pass_through(api, client):
    active_client_and_ledger(api)
    api.post(BILLS_URL, status=201, json={**BILL, "brandNewField": {"x": 1}})
    result = run_action("create_bill", INPUT, client)
    assert result.output["brandNewField"] == {"x": 1}
    assert result.warnings == []


def test_an_answer_that_does_not_fit_the_schema_is_a_warning_not_an_error(api, client):
    active_client_and_ledger(api)
    api.post(BILLS_URL, status=201, json={**BILL, "billTotal": "110.00"})
    result = run_action("create_bill", INPUT, client)
    assert result.output["billTotal"] == "110.00"
    assert any("billTotal: got '110.00'; expected a number" in w for w in result.warnings)


def test_dry_run_sends_nothing_and_describes_the_request(api, client):
    result = run_action("create_bill", INPUT, client, dry_run=True)
    assert len(api.calls) == 0
    assert result.dry_run
    assert result.status is None
    assert result.output == {}
    assert result.request["method"] == "POST"
    assert result.request["url"] == BILLS_URL
    assert result.request["json"]["lineItems"] == INPUT["lineItems"]
    assert result.request["headers"]["X-SVC-Auth-Key"] == "***"
    assert SECRET not in repr(result)
    assert any("entity_is_active_client" in w and "dry run" in w for w in result.warnings)


# -- check: the entity must be an Active client --------------------------------------------


@pytest.mark.parametrize("record", [{"status": "Lead"}, {"clientStatus": "Lead"}])
def test_a_lead_cannot_be_billed(api, client, record):
    api.get(ENTITY_URL, json={"entityKey": KEY, **record})
    with pytest.raises(InputError) as caught:
        run_action("create_bill", INPUT, client)
    text = str(caught.value)
    assert "entityKey: the client's status is 'Lead'; bills need an Active client" in text
    assert "convert_lead" in text
    assert [call.request.method for call in api.calls] == ["GET"]


def test_client_status_field_naming_is_tolerated(api, client):
    api.get(ENTITY_URL, json={"entityKey": KEY, "clientStatus": "Active"})
    api.get(STATUS_URL, json={"isConnected": False})
    api.post(BILLS_URL, status=201, json=BILL)
    assert run_action("create_bill", INPUT, client).output["billingID"] == 1042


def test_an_unknown_entity_is_named_before_anything_is_written(api, client):
    api.get(ENTITY_URL, status=404, json={"title": "Not Found", "status": 404})
    with pytest.raises(InputError, match=r"entityKey: got '.*'; no client has this entityKey"):
        run_action("create_bill", INPUT, client)
    assert [call.request.method for call in api.calls] == ["GET"]


def test_an_entity_record_without_status_is_a_warning(api, client):
    api.get(ENTITY_URL, json={"entityKey": KEY})
    api.get(STATUS_URL, json={"connected": False})
    api.post(BILLS_URL, status=201, json=BILL)
    result = run_action("create_bill", INPUT, client)
    assert any("entityKey not checked" in w for w in result.warnings)


# -- check: ledger rules when the ledger is connected (spec 4.1 rule 2) ----------------------


def test_ledger_rules_are_skipped_when_no_ledger_is_connected(api, client):
    active_client_and_ledger(api, {"connected": False})
    api.post(BILLS_URL, status=201, json=BILL)
    assert (
        run_action("create_bill", with_lines({"amount": 1, "taxAmount": 0.1}), client).status == 201
    )


def test_with_a_ledger_each_line_needs_account_or_item_and_tax_reference(api, client):
    active_client_and_ledger(api, {"connected": True})
    data = with_lines(
        {"amount": 1, "taxAmount": 0.1},
        {"amount": 2, "taxPercent": 10, "extItemID": 3, "extTaxID": 9},
    )
    with pytest.raises(InputError) as caught:
        run_action("create_bill", data, client)
    text = [str(issue) for issue in caught.value.issues]
    assert (
        "input lineItems[0]: needs extAccountID or extItemID: the practice's ledger is connected"
        in text
    )
    assert any(
        line.startswith("input lineItems[0]: needs extTaxID, or a taxPercent") for line in text
    )
    assert not any("lineItems[1]" in line for line in text)
    assert [call.request.method for call in api.calls] == ["GET", "GET"]


@pytest.mark.parametrize("percent", [10, 10.02, 9.98, 0.01])
def test_a_tax_percent_within_002_of_a_ledger_rate_is_accepted(api, client, percent):
    active_client_and_ledger(api, {"status": "Connected"})
    api.get(RATES_URL, json=[{"name": "GST", "rate": 10.0}, {"name": "Free", "rate": 0}])
    api.post(BILLS_URL, status=201, json=BILL)
    line = {"amount": 1, "taxPercent": percent, "extAccountID": 200}
    assert run_action("create_bill", with_lines(line), client).status == 201


@pytest.mark.parametrize("percent", [10.03, 9.97, 15])
def test_a_tax_percent_off_every_ledger_rate_is_refused_with_the_rates(api, client, percent):
    active_client_and_ledger(api, {"isConnected": True})
    api.get(RATES_URL, json={"items": [{"taxRate": "10.0"}, {"taxRate": 0, "isActive": True}]})
    line = {"amount": 1, "taxPercent": percent, "extAccountID": 200}
    with pytest.raises(InputError) as caught:
        run_action("create_bill", with_lines(line), client)
    assert f"lineItems[0].taxPercent: got taxPercent {percent}" in str(caught.value)
    assert "ledger rates are [0, 10]" in str(caught.value)


def test_an_unreadable_ledger_status_is_a_warning(api, client):
    active_client_and_ledger(api, {"something": "else"})
    api.post(BILLS_URL, status=201, json=BILL)
    result = run_action("create_bill", INPUT, client)
    assert any("ledger rules not checked" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([10, 0], [10.0, 0.0]),
        ([{"rate": 10}], [10.0]),
        ([{"TaxRate": "12.5"}], [12.5]),
        ({"data": [{"effectiveRate": 15}]}, [15.0]),
        ([{"displayRate": 7}], [7.0]),
        ([{"rate": 10, "isSelected": False}, {"rate": 5}], [5.0]),
        ([{"name": "no rate"}], []),
        ("nonsense", []),
    ],
)
def test_tolerant_tax_rate_reader(data, expected):
    assert tolerant.rates(data) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (True, True),
        ({"connected": False}, False),
        ({"IsConnected": True}, True),
        ({"ledgerConnected": True}, True),
        ({"status": "Not Connected"}, False),
        ({"status": "connected"}, True),
        ({"provider": "xero"}, None),
        ([], None),
    ],
)
def test_tolerant_connected_flag_reader(data, expected):
    assert tolerant.flag(data) is expected


# -- every error status of the route ------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error", "hint"),
    [
        (400, ValidationError, "each line has amount plus taxAmount or taxPercent"),
        (401, AuthError, "Client ID and secret"),
        (403, WriteAccessError, "canWrite"),
        (404, NotFoundError, "no client with this entityKey"),
    ],
)
def test_api_errors_keep_their_class_and_gain_the_modules_hint(api, client, status, error, hint):
    active_client_and_ledger(api)
    api.post(
        BILLS_URL,
        status=status,
        json={"status": status, "title": "Refused", "message": "server says no"},
    )
    with pytest.raises(error) as caught:
        run_action("create_bill", INPUT, client)
    assert caught.value.status == status
    assert hint in caught.value.hint
    assert "server says no" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_rate_limited_bill_is_a_rate_limit_error_with_retry_after(api, client):
    active_client_and_ledger(api)
    api.post(
        BILLS_URL,
        status=429,
        json={"status": 429, "title": "Too Many Requests"},
        headers={"Retry-After": "30"},
    )
    with pytest.raises(RateLimitError) as caught:
        run_action("create_bill", INPUT, client)
    assert caught.value.retry_after == 30
    assert [call.request.method for call in api.calls].count("POST") == 1


def test_a_500_on_the_write_is_in_doubt_and_not_repeated(api, client):
    active_client_and_ledger(api)
    api.post(BILLS_URL, status=500, json={"status": 500, "title": "Internal Server Error"})
    with pytest.raises(InDoubtError) as caught:
        run_action("create_bill", INPUT, client)
    assert isinstance(caught.value.cause, ServerError)
    assert "not repeated" in str(caught.value)
    assert [call.request.method for call in api.calls].count("POST") == 1


# -- against the sandbox over real HTTP ---------------------------------------------------------


@pytest.fixture
def live(sandbox, tmp_path):
    def make(kind="rw"):
        client_id, secret = sandbox.credentials("anz", kind)
        return Client(
            client_id,
            secret,
            base_url=sandbox.base_url("anz"),
            environ={},
            profiles_file=tmp_path / "none.toml",
            retry=RetryPolicy(max_attempts=1),
        )

    with make() as rw:
        yield rw, make


def _new_client(rw):
    return run_action(
        "create_client", {"entityType": "Company", "entityName": "Bill Test Pty Ltd"}, rw
    ).output["entityKey"]


@pytest.mark.integration
def test_sandbox_bill_for_an_active_client(live):
    rw, _ = live
    key = _new_client(rw)
    data = {**INPUT, "entityKey": key}
    result = run_action("create_bill", data, rw)
    assert result.status == 201
    assert result.warnings == []
    assert result.output["billTotal"] == 110.0
    assert result.output["lineItems"][0]["narration"] == "Onboarding fee"
    assert (
        rw.get(f"/api/v1/bills/{result.output['billingID']}")["billingID"]
        == result.output["billingID"]
    )


@pytest.mark.integration
def test_sandbox_lead_is_refused_before_the_write(live, sandbox):
    rw, _ = live
    lead = run_action("create_lead", {"entityType": "Individual", "entityName": "Jo"}, rw).output[
        "entityKey"
    ]
    before = len(sandbox.admin("GET", "/_admin/records/bills"))
    with pytest.raises(InputError, match="bills need an Active client"):
        run_action("create_bill", {**INPUT, "entityKey": lead}, rw)
    assert len(sandbox.admin("GET", "/_admin/records/bills")) == before


@pytest.mark.integration
def test_sandbox_ledger_rules_when_connected(live, sandbox):
    rw, _ = live
    key = _new_client(rw)
    sandbox.admin("POST", "/_admin/config", {"ledgerConnected": True})
    with pytest.raises(InputError) as caught:
        run_action("create_bill", {**INPUT, "entityKey": key}, rw)
    assert "needs extAccountID or extItemID" in str(caught.value)
    line = {"amount": 100, "taxPercent": 10.01, "extAccountID": 200}
    result = run_action("create_bill", {**INPUT, "entityKey": key, "lineItems": [line]}, rw)
    assert result.status == 201


@pytest.mark.integration
def test_sandbox_read_only_credentials_get_the_write_hint(live):
    rw, make = live
    key = _new_client(rw)
    with make("ro") as ro, pytest.raises(WriteAccessError, match="canWrite"):
        run_action("create_bill", {**INPUT, "entityKey": key}, ro)


@pytest.mark.integration
def test_sandbox_500_on_the_write_is_in_doubt(live, sandbox):
    rw, _ = live
    key = _new_client(rw)
    sandbox.admin(
        "POST",
        "/_admin/faults",
        {"kind": "server_error", "count": 1, "method": "POST", "pathPrefix": "/api/v1/bills"},
    )
    with pytest.raises(InDoubtError):
        run_action("create_bill", {**INPUT, "entityKey": key}, rw)
