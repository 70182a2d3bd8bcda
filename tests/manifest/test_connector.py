"""manifests/connector.yaml: valid against its schema and true to the spec."""

from __future__ import annotations

import pytest

from practiceflow.errors import ManifestError
from practiceflow.manifest import load_connector
from practiceflow.manifest.resources import data_dir
from practiceflow.manifest.validation import issues_for, meta_validator


def test_connector_validates_against_its_schema():
    connector = load_connector()
    assert issues_for(meta_validator("connector"), connector, file="connector.yaml") == []


def test_connector_states_the_spec_limits_and_paging():
    connector = load_connector()
    assert connector["rate_limits"]["per_minute"] == 60
    assert connector["rate_limits"]["per_hour"] == 1000
    assert connector["rate_limits"]["per_day"] == 10000
    paging = connector["paging"]
    assert (paging["page_min"], paging["page_max"]) == (1, 10000)
    assert (paging["size_default"], paging["size_max"]) == (50, 100)
    assert "/api/v1/users/list" in paging["fixed_size"]
    assert "/api/v1/entities" in paging["fixed_size"]
    assert set(paging["end_when"]) == {"short_page", "has_more_false"}


def test_connector_names_both_auth_methods_and_the_signing_rules():
    connector = load_connector()
    header = connector["auth"]["methods"]["header"]
    assert (header["client_id_header"], header["client_secret_header"]) == (
        "X-SVC-Auth-ID",
        "X-SVC-Auth-Key",
    )
    assert connector["auth"]["methods"]["basic"]["scheme"] == "Basic"
    hooks = connector["webhooks"]
    assert hooks["canonical"] == "{timestamp}.{body}"
    assert hooks["signature_prefix"] == "sha256="
    assert hooks["headers"]["signature"] == "X-Svc-Signature"


def test_region_base_urls_are_placeholders_until_configured():
    regions = load_connector()["regions"]
    assert set(regions) == {"anz", "uk", "za"}
    for name, region in regions.items():
        assert region["base_url"] == f"{{base_url_{name}}}"
        assert region["env"] == f"PRACTICEFLOW_BASE_URL_{name.upper()}"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("per_minute: 60", "per_minute: sixty", "rate_limits.per_minute: got 'sixty'"),
        ("page_param: pageNumber", "page_param: page", "paging.page_param: got 'page'"),
        ("algorithm: hmac-sha256", "algorithm: md5", "webhooks.algorithm: got 'md5'"),
    ],
)
def test_a_broken_connector_is_reported_with_its_location(tmp_path, old, new, expected):
    text = (data_dir("manifests") / "connector.yaml").read_text(encoding="utf-8")
    assert old in text
    broken = tmp_path / "connector.yaml"
    broken.write_text(text.replace(old, new), encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        load_connector(broken)
    line = next(number for number, row in enumerate(text.splitlines(), 1) if old in row)
    assert any(issue.line == line and expected in str(issue) for issue in caught.value.issues), (
        caught.value
    )
