"""The sandbox: a local simulator of the Partner Integration API on 127.0.0.1 (it never imports
``practiceflow.api``): seeded data, the rules of spec sections 5, 7 and 8, injected faults, the
operations (``routes/``, which ``openapi`` describes), webhook deliveries, ``/_admin``, the ASGI
``app`` and uvicorn ``server``. Shapes the spec does not show are guesses, listed in GUESSES.md.
"""

from __future__ import annotations

from practiceflow.sandbox.config import (
    DEFAULT_ADMIN_TOKEN,
    DEFAULT_CREDENTIALS,
    REGIONS,
    Credential,
    RateLimits,
    SandboxConfig,
)
from practiceflow.sandbox.deliveries import sign
from practiceflow.sandbox.server import SandboxHandle, start_sandbox
from practiceflow.sandbox.state import EVENTS, SandboxState

__all__ = [
    "DEFAULT_ADMIN_TOKEN",
    "DEFAULT_CREDENTIALS",
    "EVENTS",
    "REGIONS",
    "Credential",
    "RateLimits",
    "SandboxConfig",
    "SandboxHandle",
    "SandboxState",
    "sign",
    "start_sandbox",
]
