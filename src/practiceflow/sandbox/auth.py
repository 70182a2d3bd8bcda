"""Authentication of API requests (spec section 5): header method or Basic, never both.

Mixing the two methods on one request is refused with 401 (the spec forbids mixing and
lists 401 for credentials it cannot accept; the choice is recorded in GUESSES.md).
Secrets are compared in constant time and never echoed in an error.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Mapping

from practiceflow.sandbox.config import Credential
from practiceflow.sandbox.problems import ApiProblem


def read_credentials(headers: Mapping[str, str]) -> tuple[str, str]:
    """``(client_id, secret)`` from request headers (lowercase names); 401 when credentials
    are missing, malformed or mixed."""
    header_id = headers.get("x-svc-auth-id")
    header_key = headers.get("x-svc-auth-key")
    authorization = headers.get("authorization")
    uses_headers = header_id is not None or header_key is not None
    if uses_headers and authorization is not None:
        detail = (
            "Both X-SVC-Auth-* headers and an Authorization header were sent; use one "
            "authentication method per request."
        )
        raise ApiProblem(401, detail)
    if uses_headers:
        if not header_id or not header_key:
            detail = "Both X-SVC-Auth-ID and X-SVC-Auth-Key are required."
            raise ApiProblem(401, detail)
        return header_id, header_key
    if authorization is None:
        detail = "Credentials are missing: send X-SVC-Auth-ID/X-SVC-Auth-Key or HTTP Basic."
        raise ApiProblem(401, detail)
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        detail = "Only the Basic scheme is supported in the Authorization header."
        raise ApiProblem(401, detail)
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        detail = "The Basic credentials are not valid base64 of 'ClientID:ClientSecret'."
        raise ApiProblem(401, detail) from None
    client_id, colon, secret = decoded.partition(":")
    if not colon or not client_id or not secret:
        detail = "The Basic credentials must be 'ClientID:ClientSecret'."
        raise ApiProblem(401, detail)
    return client_id, secret


def authenticate(
    headers: Mapping[str, str], region: str, clients: Mapping[str, tuple[str, Credential]]
) -> Credential:
    """The active API client of ``region`` that the request's credentials name (``clients``:
    every one by Client ID, with its region); 401 when missing, mixed, unknown, wrong,
    inactive or of another region."""
    client_id, secret = read_credentials(headers)
    found = clients.get(client_id)
    if found is None:
        raise ApiProblem(401, "The Client ID or secret is not valid.")
    home, credential = found
    if not hmac.compare_digest(credential.secret.encode(), secret.encode()):
        raise ApiProblem(401, "The Client ID or secret is not valid.")
    if home != region:
        detail = "The credentials are not valid in this region; use the practice's region."
        raise ApiProblem(401, detail)
    if not credential.active:
        raise ApiProblem(401, "The API client is inactive.")
    return credential
