"""One state store and one practice key for every command.

Every command that reads or writes state (``run``, ``serve``, ``runs``, ``triggers``, ``db``,
``worker``) finds it the same way, through this module:

* the **store** is ``--state``, else ``PRACTICEFLOW_STATE``, else the SQLite file
  ``.practiceflow/state.db`` in the working directory: recipes live in a project folder, and
  their events, cursors and journals belong with that folder (as ``.git`` does);
* the **practice** (the key cursors, subscriptions, events and runs are filed under) is
  ``--practice``, else the name a fleet file (``PRACTICEFLOW_FLEET``) gives the practice of
  these credentials, else the Client ID of the credentials.

So ``practiceflow triggers poll`` moves the cursor that ``practiceflow serve`` carries on
from, and ``practiceflow runs list`` shows the runs both made.

The **rate budget** of a practice is found beside its store (:func:`practice_budget`), so
that ``serve``, ``run`` and ``mcp`` on one store count their requests together: a SQLite
store's budget is ``budget.db`` in the state file's folder, a PostgreSQL store's is a table
in its database; either way one table per Client ID.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from typing import Any, Final, TypeVar

import click

from practiceflow.api import Client
from practiceflow.cli.common import ApiOptions, api_settings, build_client
from practiceflow.errors import ConfigError
from practiceflow.service.needs_person import find_entry, label, settle_command
from practiceflow.service.state_location import (
    DEFAULT_STATE,
    practice_budget,
    sqlite_file,
    state_target,
)
from practiceflow.state import RunRecord, StateStore, open_store
from practiceflow.state.attention_rows import AttentionRecord
from practiceflow.state.runids import MIN_PREFIX, find_run

__all__ = [
    "DEFAULT_STATE",
    "FLEET_ENV",
    "STATE_ENV",
    "open_state",
    "practice_budget",
    "practice_client",
    "practice_key",
    "practice_option",
    "run_or_fail",
    "sqlite_file",
    "state_option",
    "state_target",
]

F = TypeVar("F", bound=Callable[..., Any])

STATE_ENV: Final = "PRACTICEFLOW_STATE"
FLEET_ENV: Final = "PRACTICEFLOW_FLEET"

_STATE_HELP = (
    "State store: a SQLite file, sqlite:///path or postgresql://... (env PRACTICEFLOW_STATE; "
    "default .practiceflow/state.db in the working directory)."
)
_PRACTICE_HELP = (
    "The practice's key in the state store (default: its name in the fleet file "
    "PRACTICEFLOW_FLEET, else the Client ID)."
)


def state_option(func: F) -> F:
    """The ``--state`` option (env ``PRACTICEFLOW_STATE``); the command receives ``state``."""
    option = click.option(
        "--state", metavar="PATH", envvar=STATE_ENV, default=None, help=_STATE_HELP
    )
    return option(func)


def practice_option(func: F) -> F:
    """The ``--practice`` option; the command receives ``practice`` (None: not given)."""
    option = click.option("--practice", metavar="KEY", default=None, help=_PRACTICE_HELP)
    return option(func)


def open_state(state: str | None) -> StateStore:
    """Open the state store a command names (creating the default's folder).

    Args:
        state: ``--state`` / ``PRACTICEFLOW_STATE``, or None for the default.

    Returns:
        The open store.

    Raises:
        ConfigError: the store cannot be opened.
    """
    target = state_target(state)
    if "://" not in target:
        with suppress(OSError):  # a read-only place: the store says so, naming the file
            Path(target).parent.mkdir(parents=True, exist_ok=True)
    return open_store(target)


@contextmanager
def practice_client(api: ApiOptions, state: str | None, **kwargs: Any) -> Iterator[Client]:
    """The API client of a command that spends the practice's budget (``serve``, ``run``).

    Args:
        api: the shared API options.
        state: ``--state`` / ``PRACTICEFLOW_STATE``, or None: where the budget is shared.
        **kwargs: further :func:`~practiceflow.cli.common.build_client` arguments.

    Yields:
        The client, with the practice's full budget (:func:`practice_budget`); client and
        budget are closed on exit.

    Raises:
        ConfigError: the settings are missing or invalid.
    """
    settings = api_settings(api)
    budget = practice_budget(state, settings.client_id)
    with closing(budget), build_client(api, budget=budget, settings=settings, **kwargs) as client:
        yield client


def practice_key(
    practice: str | None, client_id: str, environ: Mapping[str, str] | None = None
) -> str:
    """The key a practice's state is filed under (see the module docstring).

    Args:
        practice: ``--practice``, or None.
        client_id: the Client ID of the credentials in use.
        environ: environment to read (``os.environ`` when None).

    Returns:
        ``practice``; else the fleet file's name for the practice with this Client ID;
        else the Client ID.

    Raises:
        ConfigError: the fleet file named by ``PRACTICEFLOW_FLEET`` cannot be read.
    """
    if practice:
        return practice
    env = os.environ if environ is None else environ
    fleet_file = env.get(FLEET_ENV)
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
    """The run a full id or a unique prefix (8+ characters) names.

    Raises:
        ConfigError: no run has that id or prefix (an ambiguous prefix raises the store's
            error listing the candidates).
    """
    found = find_run(store, run_id)
    if found is None:
        short = (
            f" (a short id needs {MIN_PREFIX} characters or more)"
            if len(run_id) < MIN_PREFIX
            else ""
        )
        message = f"no run {run_id!r} in the state store{short}; see 'practiceflow runs list'"
        entry = _attention_entry(store, run_id)
        if entry is not None:
            message = (
                f"{run_id!r} is not a run but an entry needing attention ({label(entry)}: "
                f"{entry.status}); see 'practiceflow attention list', settle it with "
                f"'{settle_command(entry)}'"
            )
        raise ConfigError(message)
    return found


def _attention_entry(store: StateStore, ident: str) -> AttentionRecord | None:
    """The attention entry an id names, if any (a gap's id is not a run's)."""
    try:
        return find_entry(store, ident)
    except ConfigError:  # a prefix of several entries: the run's message says enough
        return None
