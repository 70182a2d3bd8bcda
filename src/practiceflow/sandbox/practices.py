"""Many practices in one sandbox (``--practices N``): each its own credentials, budget,
records and webhooks; a request's credentials choose its practice. Practice ``k``'s have
``k`` in hex in the Client ID's second group (``5a4db0c0-002a-4000-8000-000000000011`` is
practice 42's ANZ read-write client) and secret ``sandbox-p42-anz-rw-secret``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from practiceflow.sandbox.config import (
    CLIENT_KINDS,
    DEFAULT_CREDENTIALS,
    REGIONS,
    ClientKind,
    Credential,
    SandboxConfig,
)

#: The most practices one sandbox serves (the Client ID's hex group).
MAX_PRACTICES: Final = 0x10000


def practice_credential(number: int, region: str, kind: ClientKind = "rw") -> Credential:
    """The ``kind`` client of practice ``number`` (0 to ``MAX_PRACTICES - 1``) in ``region``;
    for practice 0, the default one before any override."""
    if not 0 <= number < MAX_PRACTICES:
        message = f"practice: got {number}; expected 0 to {MAX_PRACTICES - 1}"
        raise ValueError(message)
    default = DEFAULT_CREDENTIALS[region][kind]
    if number == 0:
        return default
    head, _, rest = default.client_id.partition("-0000-")
    return replace(
        default,
        client_id=f"{head}-{number:04x}-{rest}",
        secret=f"sandbox-p{number}-{region}-{kind}-secret",
        name=f"Sandbox practice {number} {region.upper()} {kind} client",
    )


def extra_clients(config: SandboxConfig) -> dict[str, tuple[str, int, Credential]]:
    """Client ID -> (region, practice number, credential) of practices 1 and up."""
    clients: dict[str, tuple[str, int, Credential]] = {}
    for number in range(1, config.practices):
        for region in REGIONS:
            for kind in CLIENT_KINDS:
                credential = practice_credential(number, region, kind)
                clients[credential.client_id] = (region, number, credential)
    return clients
