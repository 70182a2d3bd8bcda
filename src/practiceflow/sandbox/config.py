"""Settings of one sandbox run: regions, throwaway credentials (the sandbox's own, only on
127.0.0.1, printed at start on purpose), limits and switches; plain values, so a run is
reproducible from its options.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from practiceflow.sandbox.variants import Variants

#: The three regions; each is served under ``/<region>`` and holds its own practice.
REGIONS: tuple[str, ...] = ("anz", "uk", "za")

ClientKind = Literal["rw", "ro", "inactive"]
CLIENT_KINDS: tuple[ClientKind, ...] = ("rw", "ro", "inactive")

#: The environment variables ``SandboxConfig.from_env`` reads, by field.
_ENV = {
    "client_id": "PRACTICEFLOW_SANDBOX_CLIENT_ID",
    "client_secret": "PRACTICEFLOW_SANDBOX_CLIENT_SECRET",
    "admin_token": "PRACTICEFLOW_SANDBOX_ADMIN_TOKEN",
}

#: Token of the admin surface (``X-Admin-Token`` header) unless configured otherwise.
DEFAULT_ADMIN_TOKEN = "sandbox-admin-token"  # noqa: S105 - a documented local-only token


@dataclass(frozen=True)
class Credential:
    """One API client of a practice: ``name`` is its ``clientName`` (auth/validate),
    ``can_write`` its ``canWrite``; an inactive client gets 401 everywhere."""

    client_id: str
    secret: str
    name: str
    can_write: bool
    active: bool


#: The most practices one sandbox serves (``--practices``; the Client ID's hex group).
MAX_PRACTICES: Final = 0x10000


def practice_credential(number: int, region: str, kind: ClientKind = "rw") -> Credential:
    """The ``kind`` client of practice ``number`` (0 to ``MAX_PRACTICES - 1``) in ``region``,
    before any override. Practice ``k``'s has ``k`` in hex in the Client ID's second group
    (``5a4db0c0-002a-4000-8000-000000000011`` is practice 42's ANZ read-write client; region
    digits anz=1, uk=2, za=3, kind digits rw=1, ro=2, inactive=3) and secret
    ``sandbox-p42-anz-rw-secret`` (practice 0's: ``sandbox-anz-rw-secret``)."""
    if not 0 <= number < MAX_PRACTICES:
        message = f"practice: got {number}; expected 0 to {MAX_PRACTICES - 1}"
        raise ValueError(message)
    digits = f"{REGIONS.index(region) + 1}{CLIENT_KINDS.index(kind) + 1}"
    return Credential(
        client_id=f"5a4db0c0-{number:04x}-4000-8000-0000000000{digits}",
        secret=f"sandbox-{f'p{number}-' if number else ''}{region}-{kind}-secret",
        name=f"Sandbox {f'practice {number} ' if number else ''}{region.upper()} {kind} client",
        can_write=kind == "rw",
        active=kind != "inactive",
    )


#: Practice 0's clients per region: a read-write, a read-only and an inactive one.
DEFAULT_CREDENTIALS: dict[str, dict[ClientKind, Credential]] = {
    region: {kind: practice_credential(0, region, kind) for kind in CLIENT_KINDS}
    for region in REGIONS
}


@dataclass(frozen=True)
class RateLimits:
    """Requests allowed per Client ID in each fixed window of the sandbox clock."""

    per_minute: int = 60
    per_hour: int = 1000
    per_day: int = 10000


#: The longest ``latency`` or ``jitter`` the sandbox takes, in seconds.
MAX_LATENCY: Final = 60.0
#: The integer options' ranges (the ``SandboxConfig`` check).
_RANGES = (("practices", 1, MAX_PRACTICES), ("entities", 0, 100_000), ("page_size", 1, 1000))


def parse_duration(text: str) -> float:
    """Seconds from ``150ms``, ``0.15s`` or ``0.15``; ValueError when not one or out of range."""
    value = text.strip().lower()
    scale = 1.0
    if value.endswith("ms"):
        value, scale = value[:-2], 0.001
    elif value.endswith("s"):
        value = value[:-1]
    try:
        seconds = float(value) * scale
    except ValueError:
        message = f"got {text!r}; expected a duration such as 150ms, 0.15s or 0.15"
        raise ValueError(message) from None
    if not 0 <= seconds <= MAX_LATENCY:
        message = f"got {text!r}; expected 0 to {MAX_LATENCY:g} seconds"
        raise ValueError(message)
    return seconds


@dataclass(frozen=True)
class SandboxConfig:
    """Options of one sandbox run; ``reset`` returns the state to exactly these.

    Attributes:
        seed: seed of the data generator; the same seed gives the same data.
        entities: entities seeded per region (up to 100,000).
        page_size: fixed server page size of the entities, users and groups lists.
        rate_limits: the three rate windows per Client ID.
        wallet: starting wallet balance of each practice; ``onboarding_cost`` and
            ``eform_cost`` are what sending an onboarding job or an eForm takes from it.
        admin_token: value of the ``X-Admin-Token`` header of the admin surface.
        client_id: overrides the Client ID of the ``anz`` read-write client when set;
            ``client_secret`` its secret.
        ledger_connected: whether each practice starts with a connected ledger.
        webhook_retry_delays: seconds between delivery attempts, multiplied by
            ``webhook_retry_scale`` (tests use a small one); ``webhook_timeout`` is the
            seconds an attempt may take.
        variants: the answer played for each open question of the spec (variants.py).
        latency: seconds every API answer is held back, as a real API's round trip is,
            plus up to ``jitter`` seconds drawn at random for each answer.
        practices: practices served in each region, each with its own credentials
            (:func:`practice_credential`), budget, records and subscriptions.
    """

    seed: int = 1
    entities: int = 300
    page_size: int = 100
    rate_limits: RateLimits = field(default_factory=RateLimits)
    wallet: float = 1000.0
    onboarding_cost: float = 5.0
    eform_cost: float = 1.0
    admin_token: str = DEFAULT_ADMIN_TOKEN
    client_id: str | None = None
    client_secret: str | None = None
    ledger_connected: bool = False
    webhook_retry_delays: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    webhook_retry_scale: float = 1.0
    webhook_timeout: float = 5.0
    variants: Variants = field(default_factory=Variants)
    latency: float = 0.0
    jitter: float = 0.0
    practices: int = 1

    def __post_init__(self) -> None:
        problems: list[str] = []
        for name in ("latency", "jitter"):
            value = getattr(self, name)
            if not 0 <= value <= MAX_LATENCY:
                problems.append(f"{name}: got {value}; expected 0 to {MAX_LATENCY:g} seconds")
        for name, low, high in _RANGES:
            if not low <= getattr(self, name) <= high:
                problems.append(f"{name}: got {getattr(self, name)}; expected {low} to {high}")
        limits = self.rate_limits
        if min(limits.per_minute, limits.per_hour, limits.per_day) < 1:
            problems.append(f"rate_limits: got {limits}; every window needs at least 1")
        if self.wallet < 0:
            problems.append(f"wallet: got {self.wallet}; expected 0 or more")
        if self.webhook_retry_scale < 0:
            problems.append(f"webhook_retry_scale: got {self.webhook_retry_scale}; expected >= 0")
        if problems:
            message = "invalid sandbox configuration: " + "; ".join(problems)
            raise ValueError(message)

    @classmethod
    def from_env(cls, **overrides: object) -> SandboxConfig:
        """Build a config from ``PRACTICEFLOW_SANDBOX_*`` variables, then explicit overrides.

        Args:
            **overrides: field values that win over the environment (``None`` is skipped).

        Returns:
            The configuration.
        """
        env: dict[str, object] = {
            name: os.environ[var] for name, var in _ENV.items() if os.environ.get(var)
        }
        env.update({key: value for key, value in overrides.items() if value is not None})
        return replace(cls(), **env)  # type: ignore[arg-type]

    def credentials(self, region: str) -> dict[ClientKind, Credential]:
        """The API clients of one region, with the ``anz`` read-write override applied.

        Args:
            region: one of :data:`REGIONS`.

        Returns:
            The clients by kind.
        """
        clients = dict(DEFAULT_CREDENTIALS[region])
        if region == REGIONS[0] and (self.client_id or self.client_secret):
            rw = clients["rw"]
            clients["rw"] = replace(
                rw,
                client_id=self.client_id or rw.client_id,
                secret=self.client_secret or rw.secret,
            )
        return clients
