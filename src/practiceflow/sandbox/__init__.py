"""The sandbox: a faithful local simulator of the Partner Integration API on 127.0.0.1.

This folder owns everything the simulator serves and nothing the engine depends on (it
never imports ``practiceflow.api``). By concern:

- ``config``: options, regions, the throwaway default credentials and admin token;
- ``clock``: the movable sandbox clock; ``seed`` / ``store``: reproducible practice data
  and its paging indexes; ``state``: one run's state and the webhook event fan-out;
- ``auth``, ``rate_limiter``, ``faults``, ``paging``, ``problems``: the rules of spec
  sections 5, 7 and 8 and the injected faults;
- ``bodies`` and ``routes/``: the operations, one module per resource family, in one
  route table that ``openapi`` also describes (``/openapi.json``);
- ``deliveries``: signed deliveries, retries and the delivery log; ``admin``: ``/_admin``;
- ``app``: the ASGI pipeline; ``server``: uvicorn in a thread or the foreground.

Shapes the spec does not show are guesses, all listed in ``GUESSES.md`` next to this file.
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
