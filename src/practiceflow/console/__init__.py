"""The run console: see and act on runs in a browser, served by ``practiceflow serve``
(views in :mod:`.data`, masking in :mod:`.redact`, routes in :mod:`.app`, pages in
``templates/``)."""

from __future__ import annotations

from practiceflow.console.app import PREFIX, create_app
from practiceflow.console.data import ConsoleContext
from practiceflow.console.redact import Redactor
from practiceflow.console.security import Guard, check_bind
from practiceflow.console.server import DEFAULT_HOST, DEFAULT_PORT, ConsoleServer

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "PREFIX",
    "ConsoleContext",
    "ConsoleServer",
    "Guard",
    "Redactor",
    "check_bind",
    "create_app",
]
