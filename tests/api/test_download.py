"""Downloads stream to disk with the right size and SHA-256, and leave no debris."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import requests
import responses

from practiceflow.api import Client, Download
from practiceflow.errors import NotFoundError

from .conftest import BASE

PDF = f"{BASE}/api/v1/bills/12/pdf"


@pytest.mark.parametrize("size", [0, 1, 64 * 1024, 300_001])
def test_download_writes_the_body_with_size_and_sha256(
    rsps: responses.RequestsMock, client: Client, tmp_path: Path, size: int
) -> None:
    content = os.urandom(size)
    rsps.get(PDF, body=content, content_type="application/pdf")
    dest = tmp_path / "invoice.pdf"
    result = client.download("/api/v1/bills/12/pdf", dest)
    assert result == Download(dest, size, hashlib.sha256(content).hexdigest(), "application/pdf")
    assert dest.read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == ["invoice.pdf"]
    assert rsps.calls[0].request.headers["Accept"] == "application/json"


def test_download_streams_in_chunks(
    rsps: responses.RequestsMock, client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunk_sizes: list[int] = []
    original = requests.Response.iter_content

    def spy(self: requests.Response, chunk_size: int = 1, decode_unicode: bool = False):  # type: ignore[no-untyped-def]
        chunk_sizes.append(chunk_size)
        return original(self, chunk_size=chunk_size, decode_unicode=decode_unicode)

    monkeypatch.setattr(requests.Response, "iter_content", spy)
    rsps.get(PDF, body=b"x" * 200_000)
    client.download("/api/v1/bills/12/pdf", tmp_path / "f.pdf")
    assert chunk_sizes == [64 * 1024]


def test_download_error_status_raises_and_writes_nothing(
    rsps: responses.RequestsMock, client: Client, tmp_path: Path
) -> None:
    rsps.get(PDF, status=404, json={"message": "Bill not found"})
    with pytest.raises(NotFoundError, match="Bill not found"):
        client.download("/api/v1/bills/12/pdf", tmp_path / "f.pdf")
    assert list(tmp_path.iterdir()) == []
