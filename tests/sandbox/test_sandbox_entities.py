"""Entities, leads, groups, paging and lastUpdated rules (spec 3, 4.1, 8) over real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

KEY = "11111111-1111-4111-8111-111111111111"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_entities_list_uses_the_fixed_page_size_and_ends_with_a_short_page(api) -> None:
    pages = [api.get("/api/v1/entities", params={"pageNumber": n}).json() for n in (1, 2, 3, 4)]
    assert [len(page) for page in pages] == [100, 100, 100, 0]
    keys = [row["entityKey"] for page in pages for row in page]
    assert len(set(keys)) == 300
    assert api.get("/api/v1/entities/list").json() == pages[0]
    assert api.get("/api/v1/entities", params={"pageSize": 5}).json() == pages[0]


def test_page_size_of_fixed_lists_is_configurable(sandbox: SandboxHandle, api) -> None:
    sandbox.admin("POST", "/_admin/config", {"pageSize": 7})
    assert len(api.get("/api/v1/entities").json()) == 7
    assert len(api.get("/api/v1/users/list").json()) == 7
    assert len(api.get("/api/v1/users/list", params={"pageNumber": 2}).json()) == 5


def test_entity_summary_has_the_spec_fields(api) -> None:
    row = api.get("/api/v1/entities").json()[0]
    assert {
        "entityKey",
        "entityCode",
        "entityName",
        "entitySurname",
        "entityType",
        "entityTypeID",
        "status",
        "email",
        "lastUpdated",
    } <= set(row)
    statuses = {
        row["status"]
        for n in (1, 2, 3)
        for row in api.get("/api/v1/entities", params={"pageNumber": n}).json()
    }
    assert statuses == {"Lead", "Active"}


@pytest.mark.parametrize("value", ["0", "10001", "-1", "x", "1.5"])
def test_page_number_outside_1_to_10000_is_400(api, value: str) -> None:
    response = api.get("/api/v1/entities", params={"pageNumber": value})
    assert response.status_code == 400
    body = response.json()
    assert body["status"] == 400
    assert "pageNumber" in body["message"]


def test_page_number_10000_is_an_empty_page(api) -> None:
    response = api.get("/api/v1/entities", params={"pageNumber": 10000})
    assert response.status_code == 200
    assert response.json() == []


@pytest.mark.parametrize("value", ["0", "101", "abc"])
def test_page_size_beyond_100_is_400(api, value: str) -> None:
    response = api.get("/api/v1/eforms/templates", params={"pageSize": value})
    assert response.status_code == 400
    assert "pageSize" in response.json()["message"]


def test_page_size_lists_default_to_50_and_report_has_more(api) -> None:
    body = api.get("/api/v1/contacts/list").json()
    assert len(body["items"]) == 50
    assert body["hasMore"] is True
    templates = api.get("/api/v1/eforms/templates", params={"pageSize": 10}).json()
    assert len(templates["items"]) == 10
    assert templates["hasMore"] is True
    last = api.get("/api/v1/eforms/templates", params={"pageSize": 10, "pageNumber": 2}).json()
    assert len(last["items"]) == 5
    assert last["hasMore"] is False


def test_last_updated_keeps_rows_at_or_after_it(api) -> None:
    rows = [
        row
        for n in (1, 2, 3)
        for row in api.get("/api/v1/entities", params={"pageNumber": n}).json()
    ]
    stamps = sorted(row["lastUpdated"] for row in rows)
    cut = stamps[200]
    filtered = api.get("/api/v1/entities", params={"lastUpdated": cut}).json()
    assert len(filtered) == len([s for s in stamps if s >= cut])
    assert filtered[0]["lastUpdated"] == cut  # "at": the boundary row is included
    assert all(row["lastUpdated"] >= cut for row in filtered)
    assert [row["lastUpdated"] for row in filtered] == sorted(
        row["lastUpdated"] for row in filtered
    )


def test_a_change_moves_an_entity_into_the_incremental_window(sandbox: SandboxHandle, api) -> None:
    now = api.get("/api/v1/auth/validate").json()["timestamp"]
    assert api.get("/api/v1/entities", params={"lastUpdated": now}).json() == []
    key = api.get("/api/v1/entities").json()[3]["entityKey"]
    sandbox.admin("PATCH", f"/_admin/entities/{key}", {"email": "changed@example.com"})
    rows = api.get("/api/v1/entities", params={"lastUpdated": now}).json()
    assert [row["entityKey"] for row in rows] == [key]
    assert rows[0]["email"] == "changed@example.com"


def test_future_last_updated_is_400_relative_to_the_sandbox_clock(
    sandbox: SandboxHandle, api
) -> None:
    soon = _iso(datetime.now(UTC) + timedelta(hours=1))
    response = api.get("/api/v1/entities", params={"lastUpdated": soon})
    assert response.status_code == 400
    assert "future" in response.json()["message"]
    sandbox.admin("POST", "/_admin/clock", {"advance": 7200})
    assert api.get("/api/v1/entities", params={"lastUpdated": soon}).status_code == 200


@pytest.mark.parametrize("value", ["yesterday", "2025-13-01T00:00:00Z", "12/01/2025"])
def test_unparsable_last_updated_is_400(api, value: str) -> None:
    response = api.get("/api/v1/entities", params={"lastUpdated": value})
    assert response.status_code == 400
    assert "lastUpdated" in response.json()["message"]


def test_create_entity_returns_201_location_and_resolves_type_by_code_or_name(api) -> None:
    by_code = api.post(
        "/api/v1/entities",
        {
            "entityType": "TR",
            "entityName": "Kite Trust",
            "entityTypeID": 1,
            "externalSystemID": "ext-9",
        },
    )
    assert by_code.status_code == 201
    body = by_code.json()
    assert body["entityType"] == "Trust"  # entityTypeID ignored when entityType is set
    assert by_code.headers["Location"].endswith(f"/api/v1/entities/{body['entityKey']}")
    loaded = api.get(f"/api/v1/entities/{body['entityKey']}").json()
    assert loaded["externalSystemID"] == "ext-9"
    by_name = api.post("/api/v1/entities", {"entityType": "company", "entityName": "Acme"})
    assert by_name.json()["entityTypeID"] == 2
    by_id = api.post("/api/v1/entities", {"entityTypeID": 6, "entityName": "Fund"})
    assert by_id.json()["entityType"] == "Self Managed Super Fund"


@pytest.mark.parametrize(
    "body",
    [
        {"entityType": "Spaceship", "entityName": "X"},
        {"entityTypeID": 99, "entityName": "X"},
        {"entityName": "X"},
        {"entityType": "CO"},
        {"entityType": "CO", "entityName": "X", "clientStatus": "Prospect"},
        {"entityType": 5, "entityName": "X"},
    ],
)
def test_invalid_entity_create_is_400_with_message(api, body) -> None:
    response = api.post("/api/v1/entities", body)
    assert response.status_code == 400
    assert response.json()["message"]


def test_invalid_json_body_is_400(api) -> None:
    response = api.request(
        "POST", "/api/v1/entities", data=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400


def test_entity_detail_integrations_and_404(api) -> None:
    key = api.get("/api/v1/entities").json()[0]["entityKey"]
    detail = api.get(f"/api/v1/entities/{key}").json()
    assert {"physicalAddress", "postalAddress", "partner", "manager"} <= set(detail)
    ids = api.get(f"/api/v1/entities/{key}/integrations").json()
    assert set(ids) == {
        "entityKey",
        "entityName",
        "xpmClientID",
        "xglClientID",
        "gsClientID",
        "connectorClientID",
        "fyiClientID",
        "workflowClientID",
        "workflowEntityType",
        "qbClientID",
        "accountingClientUrl",
        "bglID",
        "bglContactID",
        "bglSmsfID",
        "bglSmsfFirm",
    }
    for path in (f"/api/v1/entities/{KEY}", f"/api/v1/entities/{KEY}/integrations"):
        response = api.get(path)
        assert response.status_code == 404
        assert response.json()["message"]


def test_lead_conversion_keeps_the_key_and_a_second_conversion_is_400(sandbox, api) -> None:
    lead = api.get("/api/v1/leads").json()["items"][0]
    key = lead["entityKey"]
    converted = api.post(f"/api/v1/leads/{key}/convert-to-client")
    assert converted.status_code == 200
    assert converted.json()["entityKey"] == key
    assert converted.json()["status"] == "Active"
    again = api.post(f"/api/v1/leads/{key}/convert-to-client")
    assert again.status_code == 400
    assert "already a client" in again.json()["message"]
    assert api.post(f"/api/v1/leads/{KEY}/convert-to-client").status_code == 404
    record = next(
        r for r in sandbox.admin("GET", "/_admin/records/entities") if r["entityKey"] == key
    )
    assert record["status"] == "Active"


def test_create_lead_uses_source_and_status_names(api) -> None:
    response = api.post(
        "/api/v1/leads",
        {
            "entityType": "IND",
            "entityName": "Zoe",
            "leadSource": "referral",
            "leadStatus": "Contacted",
        },
    )
    assert response.status_code == 201
    assert response.json()["leadSource"] == "Referral"
    assert response.json()["leadStatus"] == "Contacted"
    bad = api.post("/api/v1/leads", {"entityType": "IND", "entityName": "Zoe", "leadSource": "3"})
    assert bad.status_code == 400
    names = [row["name"] for row in api.get("/api/v1/settings/lead-statuses").json()]
    assert {"New", "Contacted", "Won", "Lost"} <= set(names)


def test_groups_filters_and_members(api) -> None:
    groups = api.get("/api/v1/groups/list").json()
    assert len(groups) == 25
    assert "members" not in groups[0]
    assert [
        g["groupCode"]
        for g in api.get("/api/v1/groups/list", params={"groupCode": "GRP003"}).json()
    ] == ["GRP003"]
    active = api.get("/api/v1/groups/list", params={"isActive": "false"}).json()
    assert active
    assert all(g["isActive"] is False for g in active)
    name = groups[0]["groupName"].split()[0].lower()
    assert all(
        name in g["groupName"].lower()
        for g in api.get("/api/v1/groups/list", params={"name": name}).json()
    )
    members = api.get("/api/v1/groups/list", params={"includeMembers": "true"}).json()[0]["members"]
    assert members
    assert set(members[0]) == {"entityKey", "entityName", "entityEmail"}
    cut = sorted(g["updatedOn"] for g in groups)[20]
    recent = api.get("/api/v1/groups/list", params={"lastUpdated": cut}).json()
    assert len(recent) == 5
    assert api.get("/api/v1/groups/list", params={"isActive": "maybe"}).status_code == 400


def test_settings_lists(api) -> None:
    types = api.get("/api/v1/settings/entity-types").json()
    assert {(t["code"], t["name"]) for t in types} >= {
        ("IND", "Individual"),
        ("CO", "Company"),
        ("TR", "Trust"),
        ("SP", "Sole Trader"),
        ("PS", "Partnership"),
    }
    assert any(t["code"] == "SMSF" for t in types)
    assert api.get("/api/v1/settings/lead-sources").json()


def test_contacts_of_a_client_create_and_update(api) -> None:
    key = api.get("/api/v1/entities").json()[0]["entityKey"]
    created = api.post(f"/api/v1/entities/{key}/contacts", {"firstName": "Pat", "email": "p@x.io"})
    assert created.status_code == 201
    contact_key = created.json()["contactKey"]
    updated = api.request(
        "PUT", f"/api/v1/entities/{key}/contacts/{contact_key}", json={"mobile": "0400"}
    )
    assert updated.json()["mobile"] == "0400"
    assert any(
        c["contactKey"] == contact_key for c in api.get(f"/api/v1/entities/{key}/contacts").json()
    )
