"""download_verification_certificate.

GET /api/v1/id-verifications/entities/{{entityKey}}/certificate streamed to a file.
"""

from __future__ import annotations

import hashlib

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import InputError

KEY = "download_verification_certificate"
PATH = "/api/v1/id-verifications/entities/0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58/certificate"
IDENT = {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"}
CONTENT = b"%PDF-" + bytes(range(256)) * 300  # bigger than one streamed chunk


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"entityKey": "nope", "saveTo": "x.pdf"}, "entityKey", "got 'nope'; expected a UUID"),
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
        content_type="application/pdf",
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    target = tmp_path if to_folder else tmp_path / "saved.bin"
    result = kit.run(KEY, {**IDENT, "saveTo": str(target)})
    written = tmp_path / (
        "verification-0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58.pdf" if to_folder else "saved.bin"
    )
    assert result.output == {
        "path": str(written),
        "fileName": written.name,
        "size": len(CONTENT),
        "sha256": hashlib.sha256(CONTENT).hexdigest(),
        "contentType": "application/pdf",
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
    client = run_action("find_clients", {"limit": 1}, live).output["items"][0]["entityKey"]
    run_action("start_id_verification", {"entityKey": client}, live)
    return {"entityKey": client}


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox, tmp_path):
    result = run_action(KEY, {**live_ident(live, sandbox), "saveTo": str(tmp_path)}, live)
    written = tmp_path / result.output["fileName"]
    content = written.read_bytes()
    assert content.startswith(b"%PDF-")
    assert result.output["size"] == len(content)
    assert result.output["sha256"] == hashlib.sha256(content).hexdigest()
