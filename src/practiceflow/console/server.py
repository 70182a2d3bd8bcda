"""The console served by uvicorn in a background thread, as ``serve`` runs it (``start`` /
``stop`` around :class:`~practiceflow.service.loop.Service`'s loop).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute

from practiceflow.console.app import PREFIX, create_app
from practiceflow.console.data import ConsoleContext
from practiceflow.console.security import Guard, check_bind
from practiceflow.errors import ConfigError
from practiceflow.runner import ValidRecipe
from practiceflow.service.loop import Service
from practiceflow.service.netaddr import ThreadedServer

logger = logging.getLogger("practiceflow.console")

#: The console listens on loopback unless told otherwise.
DEFAULT_HOST = "127.0.0.1"
#: The console's default port.
DEFAULT_PORT = 8470


class ConsoleServer(ThreadedServer):
    """The console app served on ``host:port`` in a daemon thread.

    Args:
        ctx: what the console shows.
        host: the address to listen on (loopback by default).
        port: the port; ``0`` picks a free one (read ``.port`` after :meth:`start`).
        token: required when ``host`` is not loopback.
        optional: when the port cannot be taken, log a warning and carry on without the
            console instead of failing (``serve``: the automation matters more).
        extra: routes served beside the console, outside its guard.

    Raises:
        ConfigError: a non-loopback ``host`` without a token.
    """

    def __init__(
        self,
        ctx: ConsoleContext,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        token: str | None = None,
        optional: bool = False,
        extra: Sequence[BaseRoute] = (),
    ) -> None:
        check_bind(host, token)
        self.optional = optional
        self.running = False
        super().__init__(create_app(ctx, Guard(token or None), extra), host, port, "pf-console")

    @property
    def url(self) -> str:
        """The console's URL, such as ``http://127.0.0.1:8470/console/``."""
        return f"{self.root}{PREFIX}/"

    def start(self, timeout: float = 5.0) -> ConsoleServer:
        """Start serving and wait until the socket listens; ConfigError when it did not start
        within ``timeout`` (port taken, say) unless the console is optional."""
        if not self.serve(timeout):
            message = f"console on {self.host}:{self.port} did not start (port in use?)"
            if self.optional:
                logger.warning("%s; serving without it", message)
                self.stop()
                return self
            raise ConfigError(message)
        self.running = True
        logger.info("console on %s", self.url)
        return self


def console_for(
    service: Service,
    client: Any,
    recipes: Sequence[ValidRecipe],
    practice: str,
    listen: tuple[str, int],
    token: str | None,
    extra: Sequence[BaseRoute] = (),
) -> ConsoleServer:
    """The console ``practiceflow serve`` mounts: its store, recipes, budget and intake; optional
    there (a port already taken is a warning). Raises ConfigError: beyond loopback, no token."""
    intake = service.intake
    ctx = ConsoleContext(
        service.store,
        practice,
        recipes,
        limits=client.limits,
        secrets=[client.settings.client_secret.reveal()],
        intake=intake,
        stop=service.stop,
        settled=service.settled,
        wake=service.wake,
        webhook_url=getattr(intake, "public_url", None) is not None,
    )
    server = ConsoleServer(ctx, *listen, token=token, optional=True, extra=extra)
    print(f"console: {server.url}", file=sys.stderr)
    return server
