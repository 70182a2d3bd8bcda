"""One state store, one practice key and one rate budget for every command that reads or
writes state: ``serve``, ``run`` and ``mcp`` on one store count their requests together.
The store is ``--state``, else ``PRACTICEFLOW_STATE``, else ``.practiceflow/state.db`` in the
working directory (a project's journals belong with its folder, as ``.git`` does).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from typing import Any

import click

from practiceflow.api import Client
from practiceflow.cli.common import ApiOptions, api_settings, build_client
from practiceflow.errors import ConfigError
from practiceflow.service.needs_person import find_entry, label, settle_command
from practiceflow.service.state_location import practice_budget, state_target
from practiceflow.state import RunRecord, StateStore, open_store
from practiceflow.state.runids import MIN_PREFIX, find_run

state_option = click.option(
    "--state",
    metavar="PATH",
    envvar="PRACTICEFLOW_STATE",
    help="State store: a SQLite file, sqlite:///path or postgresql://... (env "
    "PRACTICEFLOW_STATE; default .practiceflow/state.db in the working directory).",
)
practice_option = click.option(
    "--practice",
    metavar="KEY",
    help="The practice's key in the state store (default: its name in the fleet file "
    "PRACTICEFLOW_FLEET, else the Client ID).",
)


def open_state(state: str | None) -> StateStore:
    """Open the store ``--state`` names, or the default (creating its folder)."""
    target = state_target(state)
    if "://" not in target:
        with suppress(OSError):  # a read-only place: the store says so, naming the file
            Path(target).parent.mkdir(parents=True, exist_ok=True)
    return open_store(target)


@contextmanager
def practice_client(api: ApiOptions, state: str | None, **kwargs: Any) -> Iterator[Client]:
    """The API client of a command that spends the practice's budget, shared on ``state``."""
    settings = api_settings(api)
    budget = practice_budget(state, settings.client_id)
    with closing(budget), build_client(api, budget=budget, settings=settings, **kwargs) as client:
        yield client


def practice_key(
    practice: str | None, client_id: str, environ: Mapping[str, str] | None = None
) -> str:
    """``--practice``, else the fleet file's name for these credentials, else the Client ID."""
    if practice:
        return practice
    env = os.environ if environ is None else environ
    fleet_file = env.get("PRACTICEFLOW_FLEET")
    if fleet_file:
        from practiceflow.fleet.fleet_file import load_fleet

        for name, config in load_fleet(fleet_file).practices.items():
            try:
                if config.settings(env).client_id == client_id:
                    return name
            except ConfigError:  # another practice's credentials are not ours to need
                continue
    return client_id


def run_or_fail(store: StateStore, run_id: str) -> RunRecord:
    """The run a full id or a unique prefix (8+ characters) names, else a ConfigError."""
    found = find_run(store, run_id)
    if found is None:
        short = (
            f" (a short id needs {MIN_PREFIX} characters or more)"
            if len(run_id) < MIN_PREFIX
            else ""
        )
        message = f"no run {run_id!r} in the state store{short}; see 'practiceflow runs list'"
        try:
            entry = find_entry(store, run_id)
        except ConfigError:  # a prefix of several entries: the run's message says enough
            entry = None
        if entry is not None:
            message = (
                f"{run_id!r} is not a run but an entry needing attention ({label(entry)}: "
                f"{entry.status}); see 'practiceflow attention list', settle it with "
                f"'{settle_command(entry)}'"
            )
        raise ConfigError(message)
    return found
