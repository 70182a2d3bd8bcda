"""``practiceflow mcp``: serve the practice's API as tools for AI assistants
(:mod:`practiceflow.mcp`); over stdio everything it says goes to standard error."""

from __future__ import annotations

import logging
import socket
from contextlib import ExitStack, closing
from pathlib import Path

import click

from practiceflow.cli.common import (
    ApiOptions,
    api_options,
    api_settings,
    build_client,
    log_json_option,
    modules_option,
    verbose_option,
)
from practiceflow.cli.state import open_state, practice_key, practice_option, state_option
from practiceflow.manifest import load_modules
from practiceflow.mcp import (
    DEFAULT_LISTEN,
    assistant_budget,
    bind_http,
    build_mcp,
    check_http_bind,
    serve_http,
    serve_stdio,
)
from practiceflow.runner import validate_recipe
from practiceflow.runner.report import configure_logging
from practiceflow.service.netaddr import parse_listen
from practiceflow.service.state_location import DEFAULT_STATE
from practiceflow.state.request_log import RequestLog

logger = logging.getLogger("practiceflow.mcp")


@click.command("mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a desktop assistant that starts this command; http for streamable HTTP.",
)
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    metavar="HOST:PORT",
    help="Where --transport http listens (PORT alone: on 127.0.0.1). Beyond loopback a "
    "--token is required.",
)
@click.option(
    "--token",
    envvar="PRACTICEFLOW_MCP_TOKEN",
    metavar="TOKEN",
    help="Bearer token HTTP clients must send (env PRACTICEFLOW_MCP_TOKEN); required to "
    "listen beyond 127.0.0.1.",
)
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Offer the write tools (each previewed, then sent once after the user confirms); "
    "without it, writes are refused and nothing is sent.",
)
@click.option(
    "--confirm-by-assistant",
    is_flag=True,
    help="Let the assistant confirm a write with confirm_write alone, without the code "
    "this command prints for the user. For clients that cannot ask the user: the model's "
    "own yes is then enough, and text planted in a record could make it confirm a write "
    "the user never saw.",
)
@click.option(
    "--recipe",
    "recipe_paths",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A recipe to offer as the tool run_recipe_<file stem> (repeatable).",
)
@click.option(
    "--show-personal-data",
    is_flag=True,
    help="Show the personal fields of read results (names, emails...) to the assistant; "
    "masked by default, since they would reach the assistant's model.",
)
@practice_option
@state_option
@modules_option
@log_json_option
@verbose_option
@api_options
def mcp(
    transport: str,
    listen: str,
    token: str | None,
    allow_writes: bool,
    confirm_by_assistant: bool,
    recipe_paths: tuple[str, ...],
    show_personal_data: bool,
    practice: str | None,
    state: str | None,
    modules_dirs: tuple[Path, ...],
    log_json: bool,
    verbose: bool,
    api: ApiOptions,
) -> None:
    """Serve every action (and --recipe) as an MCP tool for AI assistants.

    Reads and searches run at once. Writes are off unless --allow-writes; then each write
    answers with a preview and is sent only after the user confirms, once, through the
    runner's journal ('practiceflow runs' lists it). The assistant spends at most a third
    of the practice's rate budget.

    \b
    Examples:
      practiceflow mcp --profile acme                      # stdio, read-only
      practiceflow mcp --profile acme --allow-writes       # writes with confirmation
      practiceflow mcp --transport http --listen 127.0.0.1:8766
    """
    configure_logging(json_lines=log_json, verbose=verbose)
    host, port = parse_listen(listen, option="--listen", example=DEFAULT_LISTEN)
    with ExitStack() as stack:
        sock: socket.socket | None = None
        if transport == "http":
            check_http_bind(host, token)
            # Bound now: a taken port is a configuration error before any request is made.
            sock = stack.enter_context(bind_http(host, port))
        registry = load_modules(list(modules_dirs))
        for path in recipe_paths:  # recipe problems before the first request
            validate_recipe(path, registry=registry)
        settings = api_settings(api)  # which practice, for its budget
        budget = assistant_budget(state, settings.client_id)
        with build_client(api, budget=budget, settings=settings) as client, closing(budget):
            can_write = bool(client.validate().can_write)
            writes_on = allow_writes and can_write
            if allow_writes and not can_write:
                click.echo(
                    "warning: --allow-writes, but these credentials cannot write (canWrite is "
                    "false): write tools stay off",
                    err=True,
                )
            check = can_write if writes_on else None
            recipes = [validate_recipe(p, registry=registry, can_write=check) for p in recipe_paths]
            key = practice_key(practice, client.settings.client_id)  # as serve files it
            state_dir = Path(state).parent if state and "://" not in state else DEFAULT_STATE.parent
            with open_state(state) as store, RequestLog(store, key) as counted:
                budget.on_admit(counted.admitted)  # the console's budget chart
                server, _ = build_mcp(
                    client=client,
                    store=store,
                    practice=key,
                    registry=registry,
                    recipes=recipes,
                    writes_on=writes_on,
                    recipes_dir=state_dir / "mcp-recipes",
                    show_personal=show_personal_data,
                    assistant_confirms=confirm_by_assistant,
                )
                mode = "writes on (confirmed one by one)" if writes_on else "read-only"
                logger.info("mcp: %d tools, %s", len(registry.actions) + len(recipes) + 1, mode)
                if sock is not None:
                    serve_http(server, sock, token)
                else:
                    serve_stdio(server)


COMMANDS: list[click.Command] = [mcp]
