"""The sandbox's variants: the table, the presets, the admin route, and each topic's
alternative answers as a client sees them over HTTP."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.sandbox.variants import TOPICS, Variants, markdown_table, single_variants
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

GUESSES = Path(__file__).parents[2] / "src" / "practiceflow" / "sandbox" / "GUESSES.md"


def _play(sandbox: SandboxHandle, **answers: str) -> dict:
    chosen = {name.replace("__", "."): answer for name, answer in answers.items()}
    return sandbox.admin("POST", "/_admin/variants", {"set": chosen})


def _wait(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# ---- the table and the presets ------------------------------------------------------------


def test_guesses_md_holds_the_generated_table() -> None:
    text = GUESSES.read_text(encoding="utf-8")
    begin, end = "<!-- variants table: begin -->\n", "<!-- variants table: end -->"
    table = text.split(begin, 1)[1].split(end, 1)[0]
    assert table == markdown_table(), "regenerate the table: variants.markdown_table()"


def test_every_topic_has_an_alternative_and_a_valid_hostile_answer() -> None:
    for topic in TOPICS:
        assert len(topic.answers) >= 2, topic.name
        assert topic.hostile in topic.answers, topic.name
    assert len(single_variants()) == sum(len(topic.answers) - 1 for topic in TOPICS)


def test_presets_and_pairs() -> None:
    hostile = Variants.preset("hostile")
    assert all(hostile.pick(topic.name) == topic.hostile for topic in TOPICS)
    assert Variants.preset("random:7") == Variants.preset("random:7")
    assert Variants.parse("hostile", ["rounding=per_total"]).pick("rounding") == "per_total"
    assert Variants.parse(None, []).differences() == {}
    for bad in (("nope", []), (None, ["rounding"]), (None, ["rounding=sideways"])):
        with pytest.raises(ValueError, match="variant"):
            Variants.parse(*bad)
    with pytest.raises(ValueError, match=r"valid topics are page_size\.bills"):
        Variants({"nope": "x"})


def test_cli_refuses_a_bad_variant_before_serving() -> None:
    from practiceflow.cli import cli

    result = CliRunner().invoke(cli, ["sandbox", "--variant", "rounding=sideways"])
    assert result.exit_code != 0
    assert "valid answers are per_line, per_total" in result.output
    assert "Traceback" not in result.output


def test_admin_surface_sets_presets_and_reset_restores(sandbox: SandboxHandle) -> None:
    listed = sandbox.admin("GET", "/_admin/variants")
    assert listed["differences"] == {}
    assert {row["topic"] for row in listed["topics"]} == {topic.name for topic in TOPICS}
    answer = sandbox.admin(
        "POST", "/_admin/variants", {"preset": "hostile", "set": {"rounding": "per_total"}}
    )
    assert answer["differences"]["field_case"] == "Id"
    assert answer["differences"]["rounding"] == "per_total"
    assert sandbox.state.variants.pick("test_marker") == "sample"
    sandbox.reset()
    assert sandbox.admin("GET", "/_admin/variants")["differences"] == {}


def test_admin_surface_refuses_unknown_answers(sandbox: SandboxHandle) -> None:
    import requests

    with pytest.raises(requests.HTTPError) as caught:
        sandbox.admin("POST", "/_admin/variants", {"set": {"rounding": "sideways"}})
    assert "valid answers are per_line, per_total" in caught.value.response.text


# ---- each topic, over HTTP -----------------------------------------------------------------


def _active_key(api) -> str:
    rows = api.get("/api/v1/entities").json()
    return next(row["entityKey"] for row in rows if row["status"] == "Active")


def _bill(api, key: str, lines: list[dict], **extra) -> dict:
    response = api.post("/api/v1/bills", {"entityKey": key, "lineItems": lines, **extra})
    assert response.status_code == 201, response.text
    return response.json()


THIRDS = [{"amount": 33.333, "taxPercent": 10}] * 3


@pytest.mark.parametrize(("answer", "total"), [("per_line", 109.98), ("per_total", 110.0)])
def test_rounding(sandbox, api, answer: str, total: float) -> None:
    _play(sandbox, rounding=answer)
    assert _bill(api, _active_key(api), THIRDS)["billTotal"] == total


@pytest.mark.parametrize(("answer", "tax"), [("percent", 10.0), ("amount", 3.0)])
def test_tax_precedence(sandbox, api, answer: str, tax: float) -> None:
    _play(sandbox, tax_precedence=answer)
    line = {"amount": 100, "taxPercent": 10, "taxAmount": 3}
    assert _bill(api, _active_key(api), [line])["billTax"] == tax


def test_field_case_and_slim_rows_and_exclusive_end(sandbox, api) -> None:
    _play(sandbox, field_case="Id", bill_rows="slim", end_date="exclusive")
    bill = _bill(api, _active_key(api), [{"amount": 10, "taxPercent": 0}], billDate="2025-03-03")
    assert "billingId" in bill
    assert "billingID" not in bill
    assert "entityId" in bill
    inclusive = api.get(
        "/api/v1/bills/list", params={"startDate": "2025-03-03", "endDate": "2025-03-04"}
    ).json()
    (row,) = [r for r in inclusive["items"] if r["billingId"] == bill["billingId"]]
    assert "entityKey" not in row
    assert "lineItems" not in row
    assert row["entityId"]
    same_day = api.get(
        "/api/v1/bills/list", params={"startDate": "2025-03-03", "endDate": "2025-03-03"}
    ).json()
    assert all(r["billingId"] != bill["billingId"] for r in same_day["items"])


@pytest.mark.parametrize("answer", ["empty", "id_only"])
def test_create_answer(sandbox, api, answer: str) -> None:
    _play(sandbox, create_answer=answer)
    response = api.post("/api/v1/entities", {"entityName": "Ada", "entityType": "IND"})
    assert response.status_code == 201
    assert response.headers["Location"].startswith("/anz/api/v1/entities/")
    if answer == "empty":
        assert response.content == b""
    else:
        assert list(response.json()) == ["entityKey"]


@pytest.mark.parametrize(("answer", "has"), [("none", False), ("all", True)])
def test_problem_message(sandbox, api, answer: str, has: bool) -> None:
    _play(sandbox, problem_message=answer)
    body = api.get("/api/v1/entities/00000000-0000-4000-8000-000000000000").json()
    assert body["detail"]
    assert ("message" in body) is has


def test_page_size_ignored_and_plain_recurring(sandbox, api) -> None:
    _play(
        sandbox,
        page_size__proposals="ignored",
        list_shape__recurring="plain",
        proposals_filter="optional",  # every proposal: more than one page of 20
    )
    page = api.get("/api/v1/proposals/list", params={"pageSize": 100}).json()
    assert page["pageSize"] == 20
    assert len(page["items"]) == 20
    assert page["hasMore"] is True
    first = api.get("/api/v1/recurring-billing/list", params={"pageNumber": 1}).json()
    again = api.get("/api/v1/recurring-billing/list", params={"pageNumber": 2}).json()
    assert isinstance(first, list)
    assert first == again


def test_entity_order_leads_and_status_case(sandbox, api) -> None:
    _play(sandbox, entity_order="descending", leads_in_entities="hidden", status_case="upper")
    rows = api.get("/api/v1/entities", params={"lastUpdated": "2020-01-01"}).json()
    stamps = [row["lastUpdated"] for row in rows]
    assert stamps == sorted(stamps, reverse=True)
    assert {row["status"] for row in rows} == {"ACTIVE"}
    lead = api.post("/api/v1/leads", {"entityType": "IND", "entityName": "L"}).json()
    assert lead["leadStatus"] == "NEW"
    assert all(row["entityKey"] != lead["entityKey"] for row in api.get("/api/v1/entities").json())


@pytest.mark.parametrize("marker", ["none", "sample"])
def test_test_deliveries_without_marker_flat_and_first_timestamp(
    sandbox, api, receiver, marker: str
) -> None:
    _play(sandbox, test_marker=marker, delivery_body="flat", retry_timestamp="first_attempt_late")
    receiver.statuses = [500]
    created = api.post(
        "/api/v1/webhooks", {"hookUrl": receiver.url, "webhookEvent": "proposal.accepted"}
    ).json()
    api.post(f"/api/v1/webhooks/{created['id']}/test")
    _wait(lambda: len(receiver.received) == 2)
    first, second = receiver.received
    body = json.loads(second.body)
    assert "isTest" not in json.dumps(body)
    assert "data" not in body
    assert ("proposalKey" in body) is (marker == "sample")
    assert first.headers["X-Svc-Timestamp"] == second.headers["X-Svc-Timestamp"]
    assert int(time.time()) - int(second.headers["X-Svc-Timestamp"]) >= 7000


def test_credentials_check_reads_client_id_in_either_case(sandbox: SandboxHandle) -> None:
    from practiceflow.api import Client

    _play(sandbox, field_case="Id")
    client_id, secret = sandbox.credentials("anz", "rw")
    with Client(client_id, secret, base_url=sandbox.base_url("anz")) as client:
        checked = client.validate()
    assert checked.client_id == client_id
    assert checked.can_write is True
