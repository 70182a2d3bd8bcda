"""``practiceflow mcp``: the practice's API as tools for AI assistants (Model Context Protocol).

This package owns the MCP server, built on the official ``mcp`` SDK:

* :mod:`._catalog`: one tool per action module (name, description and input schema from
  the module), one per recipe, and ``confirm_write``;
* :mod:`._desk`: carrying out calls: reads at once; writes previewed (a dry run, masked)
  and kept in the state store, then sent once confirmed, through the runner's journal as
  one-step runs keyed by the previewed write (so a confirmation sent twice, to any process
  sharing the store, sends nothing twice);
* :mod:`._confirmation`: the sealed confirmation state, the code only the user sees, and
  the claim that keeps two processes from sending one write;
* :mod:`._resources`: resources and templates (lookup lists, runs, runs held for a
  person, the rate budget);
* :mod:`._server`: the SDK server: tools, resources and the confirmation by elicitation
  (or ``input_required`` on 2026-07-28), or by confirm token and the user's code;
* :mod:`._serving`: stdio, and streamable HTTP on 127.0.0.1:8766 (a token beyond
  loopback; the port bound before the start-up, so that a taken one is said at once).

The ``mcp`` command (:mod:`practiceflow.cli.mcp`) assembles them with :func:`build_mcp`.
"""

from __future__ import annotations

from practiceflow.mcp._catalog import CONFIRM_TOOL, RECIPE_PREFIX, ToolEntry, build_catalog
from practiceflow.mcp._desk import WriteDesk
from practiceflow.mcp._resources import ASSISTANT_LIMITS, BUDGET_URI, HELD_RUNS_URI, RECENT_RUNS_URI
from practiceflow.mcp._sending import EVENT_SOURCE, run_key
from practiceflow.mcp._server import build_server
from practiceflow.mcp._serving import (
    DEFAULT_LISTEN,
    MCP_PATH,
    bind_http,
    check_http_bind,
    http_app,
    serve_http,
    serve_stdio,
)
from practiceflow.mcp._setup import assistant_budget, build_mcp

__all__ = [
    "ASSISTANT_LIMITS",
    "BUDGET_URI",
    "CONFIRM_TOOL",
    "DEFAULT_LISTEN",
    "EVENT_SOURCE",
    "HELD_RUNS_URI",
    "MCP_PATH",
    "RECENT_RUNS_URI",
    "RECIPE_PREFIX",
    "ToolEntry",
    "WriteDesk",
    "assistant_budget",
    "bind_http",
    "build_catalog",
    "build_mcp",
    "build_server",
    "check_http_bind",
    "http_app",
    "run_key",
    "serve_http",
    "serve_stdio",
]
