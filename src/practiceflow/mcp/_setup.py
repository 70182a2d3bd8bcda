"""Assembling the server from what the command line gives: modules, recipes, client, store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcp.server.lowlevel import Server

from practiceflow.budget.rate_budget import RateBudget
from practiceflow.hooks import ClientLike
from practiceflow.manifest import ModuleRegistry
from practiceflow.mcp._catalog import build_catalog, settings_lists
from practiceflow.mcp._desk import WriteDesk
from practiceflow.mcp._resources import ASSISTANT_LIMITS
from practiceflow.mcp._server import build_server
from practiceflow.runner import ValidRecipe
from practiceflow.service.state_location import practice_budget
from practiceflow.state import StateStore


def assistant_budget(state: str | None, client_id: str) -> RateBudget:
    """The rate budget of an assistant's requests: :data:`ASSISTANT_LIMITS` (a third of
    the practice's) counted in the practice's shared bucket, as ``serve`` and ``run`` do."""
    return practice_budget(state, client_id, ASSISTANT_LIMITS)


def build_mcp(
    *,
    client: ClientLike,
    store: StateStore,
    practice: str,
    registry: ModuleRegistry,
    recipes: Sequence[ValidRecipe] = (),
    writes_on: bool = False,
    recipes_dir: Path,
    show_personal: bool = False,
    assistant_confirms: bool = False,
    announce: Callable[[str], None] | None = None,
) -> tuple[Server[Any], WriteDesk]:
    """Build the MCP server of one practice."""
    catalog = build_catalog(registry, recipes, writes_on=writes_on)
    desk = WriteDesk(
        store=store,
        client=client,
        practice=practice,
        registry=registry,
        catalog=catalog,
        recipes_dir=recipes_dir,
        writes_on=writes_on,
        show_personal=show_personal,
        assistant_confirms=assistant_confirms,
    )
    if writes_on:
        desk.resume_pending()
    lists = {module.key: module for module in settings_lists(registry)}
    if announce is None:
        return build_server(desk, catalog, lists), desk
    return build_server(desk, catalog, lists, announce=announce), desk
