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
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from typing import Any, Final, TypeVar

import click

from practiceflow.api import Client
from practiceflow.api.rate_budget import RateBudget, RateLimits
from practiceflow.api.sqlite_budget import budget_file, open_bucket
from practiceflow.cli.common import ApiOptions, api_settings, build_client
from practiceflow.errors import ConfigError
from practiceflow.runner.priorities import PriorityBudget
from practiceflow.service.attention import find_entry, label, settle_command
from practiceflow.state import RunRecord, StateStore, open_store
from practiceflow.state.attention import AttentionRecord
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

#: Where the state store is when neither ``--state`` nor ``PRACTICEFLOW_STATE`` says.
DEFAULT_STATE: Final = Path(".practiceflow") / "state.db"
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


def state_target(state: str | None) -> str:
    """The store a command uses: ``state`` (``--state``/``PRACTICEFLOW_STATE``) or the default.

    Args:
        state: what the command line or the environment said, or None.

    Returns:
        A SQLite path or a URL.
    """
    return state or str(DEFAULT_STATE)


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


def sqlite_file(state: str | None) -> Path | None:
    """The SQLite file a command's store is, or None for a PostgreSQL store."""
    target = state_target(state)
    if _is_postgres(target):
        return None
    from practiceflow.state import sqlite_path

    return sqlite_path(target)


def _is_postgres(target: str) -> bool:
    return target.lower().startswith(("postgresql://", "postgres://"))


def practice_budget(
    state: str | None, client_id: str, limits: RateLimits | None = None
) -> RateBudget:
    """The rate budget of a practice, shared by every process on the same store.

    Requests wait by priority (:class:`~practiceflow.runner.PriorityBudget`) and count in
    the store's shared bucket: ``budget.db`` beside a SQLite state file (see
    :mod:`practiceflow.api.sqlite_budget`), the store's own database for PostgreSQL (see
    :mod:`practiceflow.fleet.postgres_budget`). A store with no file of its own (another
    scheme, or ``:memory:``, which the SQLite store refuses) gets a budget in memory.

    Args:
        state: ``--state`` / ``PRACTICEFLOW_STATE``, or None for the default store.
        client_id: the practice's Client ID (its table in the shared bucket).
        limits: this process's windows: the spec's 60/min, 1000/h, 10000/day if None; an
            assistant passes smaller ones to be admitted only while the practice as a
            whole has used less than those.

    Returns:
        The budget to give the client; close it when the command ends.
    """
    limits = limits or RateLimits()
    target = state_target(state)
    if _is_postgres(target):
        from practiceflow.fleet.postgres_budget import shared_budget  # psycopg only here

        return shared_budget(target, client_id, limits, pool_size=2, budget_type=PriorityBudget)
    try:
        path = sqlite_file(state)
    except ConfigError:  # not a SQLite file: opening the store says what is wrong
        path = None
    if path is None:
        return PriorityBudget(limits)
    bucket = open_bucket(budget_file(path), client_id, limits)
    return PriorityBudget(limits, bucket=bucket, clock=time.time)


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
