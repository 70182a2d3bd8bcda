"""``practiceflow mcp``: the practice's API as tools for AI assistants (Model Context Protocol).

This package owns the MCP server on the official ``mcp`` SDK: the tool catalog, the desk
that reads at once and previews writes, the sending of confirmed writes at most once through
the runner's journal, resources and transports. :func:`build_mcp` assembles them.
"""

from __future__ import annotations

from practiceflow.mcp._catalog import CONFIRM_TOOL, RECIPE_PREFIX, ToolEntry, build_catalog
from practiceflow.mcp._desk import EVENT_SOURCE, WriteDesk, run_key
from practiceflow.mcp._resources import ASSISTANT_LIMITS, BUDGET_URI, HELD_RUNS_URI, RECENT_RUNS_URI
from practiceflow.mcp._server import assistant_budget, build_mcp, build_server
from practiceflow.mcp._serving import (
    DEFAULT_LISTEN,
    MCP_PATH,
    bind_http,
    check_http_bind,
    http_app,
    serve_http,
    serve_stdio,
)

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
