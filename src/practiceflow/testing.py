"""Public helpers for testing code against the Partner API without credentials.

``running_sandbox`` starts the local simulator (``practiceflow.sandbox``) on a free port
of 127.0.0.1 in a background thread::

    from practiceflow.testing import running_sandbox

    with running_sandbox(seed=7, entities=500) as sandbox:
        client_id, secret = sandbox.credentials("anz", "rw")
        base = sandbox.base_url("anz")          # http://127.0.0.1:PORT/anz
        sandbox.admin("POST", "/_admin/proposals/<key>/accept")

The pytest fixtures ``sandbox_server`` (session) and ``sandbox`` (reset before each test)
of this project's ``tests/conftest.py`` are built on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from practiceflow.sandbox.config import RateLimits, SandboxConfig
from practiceflow.sandbox.server import SandboxHandle, start_sandbox

__all__ = ["RateLimits", "SandboxConfig", "SandboxHandle", "running_sandbox"]


@contextmanager
def running_sandbox(
    host: str = "127.0.0.1", port: int = 0, **options: Any
) -> Iterator[SandboxHandle]:
    """Run a sandbox for the duration of a ``with`` block.

    Args:
        host: a loopback address.
        port: ``0`` picks a free port.
        **options: fields of :class:`SandboxConfig` (``seed``, ``entities``, ``page_size``,
            ``rate_limits``, ``wallet``, ``admin_token``, ``webhook_retry_scale`` ...).

    Yields:
        The running :class:`SandboxHandle` (``url``, ``base_url()``, ``credentials()``,
        ``admin_token``, ``admin()``, ``state``).
    """
    handle = start_sandbox(SandboxConfig(**options), host, port)
    try:
        yield handle
    finally:
        handle.stop()
