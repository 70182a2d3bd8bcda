"""The running sandbox of :mod:`practiceflow.testing`: :func:`running_sandbox`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from practiceflow.sandbox.config import SandboxConfig
from practiceflow.sandbox.server import SandboxHandle, start_sandbox


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
