"""Many practices in one sandbox: each its own credentials, budget, records and webhooks.

``practiceflow sandbox --practices N`` serves practice 0 (the sandbox's usual one per
region, with :data:`~practiceflow.sandbox.config.DEFAULT_CREDENTIALS`) and practices 1 to
N - 1 beside it, in every region. Which practice a request reaches is chosen once, from its
credentials, before any route runs: the routes never know there are others. Practice
``k``'s records are seeded from their own generator (``seed``, region and ``k``), its rate
budget is its Client ID's, and its webhook subscriptions are its own.

Credentials are a formula, so a benchmark or a test can name practice ``k``'s without
asking: the Client ID has ``k`` in hex in its second group
(``5a4db0c0-002a-4000-8000-000000000011`` is practice 42's ANZ read-write client) and the
secret is ``sandbox-p42-anz-rw-secret``. Practice 0's are the usual ones.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from practiceflow.sandbox.config import (
    DEFAULT_CREDENTIALS,
    REGIONS,
    ClientKind,
    Credential,
    SandboxConfig,
)

#: The most practices one sandbox serves (the Client ID's hex group).
MAX_PRACTICES: Final = 0x10000


def practice_credential(number: int, region: str, kind: ClientKind = "rw") -> Credential:
    """The credential of one client of practice ``number`` in ``region``.

    Args:
        number: the practice, from 0 (the usual one) to ``MAX_PRACTICES - 1``.
        region: one of :data:`~practiceflow.sandbox.config.REGIONS`.
        kind: ``rw``, ``ro`` or ``inactive``.

    Returns:
        The credential (for practice 0, the default one, before any override).

    Raises:
        ValueError: the number is out of range.
    """
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
    """Every client of practices 1 to ``config.practices - 1``, by Client ID.

    Args:
        config: the sandbox's options.

    Returns:
        Client ID -> (region, practice number, credential); empty for one practice.
    """
    clients: dict[str, tuple[str, int, Credential]] = {}
    for number in range(1, config.practices):
        for region in REGIONS:
            for kind in ("rw", "ro", "inactive"):
                credential = practice_credential(number, region, kind)
                clients[credential.client_id] = (region, number, credential)
    return clients
