"""download_onboarding_documents_zip.

GET /api/v1/onboardings/{{key}}/entities/4411/documents/zip streamed to a file.
"""

from __future__ import annotations

import hashlib

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import InputError

KEY = "download_onboarding_documents_zip"
PATH = "/api/v1/onboardings/9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d/entities/4411/documents/zip"
IDENT = {"onboardingKey": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", "entityOnboardingId": 4411}
CONTENT = b"PK" + bytes(range(256)) * 300  # bigger than one streamed chunk


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {"onboardingKey": "j", "entityOnboardingId": 1, "saveTo": "x.zip"},
            "onboardingKey",
            "got 'j'; expected a UUID",
        ),
        ({**IDENT}, "saveTo", "required field is missing"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_a_missing_folder_is_refused_before_sending(kit, tmp_path):
    with pytest.raises(InputError) as caught:
        kit.run(KEY, {**IDENT, "saveTo": str(tmp_path / "no" / "such" / "file")})
    assert "saveTo: got" in str(caught.value)
    assert "does not exist" in str(caught.value)
    assert len(kit.api.calls) == 0


@pytest.mark.parametrize("to_folder", [False, True], ids=["file", "folder"])
def test_streams_the_file_and_returns_size_and_sha256(kit, tmp_path, to_folder):
    kit.api.get(
        kit.url(PATH),
        body=CONTENT,
        content_type="application/zip",
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    target = tmp_path if to_folder else tmp_path / "saved.bin"
    result = kit.run(KEY, {**IDENT, "saveTo": str(target)})
    written = tmp_path / ("onboarding-4411.zip" if to_folder else "saved.bin")
    assert result.output == {
        "path": str(written),
        "fileName": written.name,
        "size": len(CONTENT),
        "sha256": hashlib.sha256(CONTENT).hexdigest(),
        "contentType": "application/zip",
    }
    assert written.read_bytes() == CONTENT
    kit.fits(KEY, result)


def test_dry_run_writes_nothing(kit, tmp_path):
    result = kit.run(KEY, {**IDENT, "saveTo": str(tmp_path / "f")}, dry_run=True)
    assert result.request["url"] == kit.url(PATH)
    assert not (tmp_path / "f").exists()


@pytest.mark.parametrize("status", [401, 404, 429, 500])
def test_error_statuses_leave_no_file(kit, tmp_path, status):
    kit.error_status(KEY, {**IDENT, "saveTo": str(tmp_path / "f")}, "GET", kit.url(PATH), status)
    assert list(tmp_path.iterdir()) == []


def live_ident(live, sandbox):
    job = sandbox.admin("GET", "/_admin/records/onboardings")[0]
    sandbox.admin("POST", f"/_admin/onboardings/{job['onboardingKey']}/complete")
    rows = run_action("list_onboarding_documents", {"onboardingKey": job["onboardingKey"]}, live)
    return {
        "onboardingKey": job["onboardingKey"],
        "entityOnboardingId": rows.output["items"][0]["entityOnboardingId"],
    }


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox, tmp_path):
    result = run_action(KEY, {**live_ident(live, sandbox), "saveTo": str(tmp_path)}, live)
    written = tmp_path / result.output["fileName"]
    content = written.read_bytes()
    assert content.startswith(b"PK")
    assert result.output["size"] == len(content)
    assert result.output["sha256"] == hashlib.sha256(content).hexdigest()
