"""The run console: see and act on runs in a browser, served by ``practiceflow serve``.

This folder owns the console, server-rendered from the state store:

* :mod:`.data`: the views (recipes, runs, a run's journal, steps needing attention,
  budget), as JSON-ready data shared by pages and the JSON API;
* :mod:`.redact`: masking of secrets and ``x-pii`` data in everything shown;
* :mod:`.chart`: the budget chart, inline SVG drawn on the server;
* :mod:`.security`: loopback by default, a token elsewhere, CSRF checks on every POST;
* :mod:`.app`: the starlette routes under ``/console/`` and ``/console/api/``;
* :mod:`.server`: :class:`ConsoleServer`, uvicorn in a background thread;
* ``templates/``: the Jinja pages and the stylesheet (package data, no build step).

Resolving a step from the console is the operation of ``practiceflow runs resolve``
(:meth:`~practiceflow.state.StateStore.resolve_step`), with who and when in the journal.
"""

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
