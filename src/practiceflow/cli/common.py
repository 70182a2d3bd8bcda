"""Options shared by several commands, the API client they build, and the rich console.
No option takes the secret: a command line ends up in shell history and the process list."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from practiceflow.api import Client
from practiceflow.api.config import AUTH_METHODS, REGIONS, Settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ApiOptions:
    """What the shared options said (None where an option was not given)."""

    profile: str | None = None
    region: str | None = None
    base_url: str | None = None
    auth_method: str | None = None
    client_id: str | None = None


_FIELDS = [field.name for field in fields(ApiOptions)]
_OPTIONS = (
    click.option(
        "--profile",
        metavar="NAME",
        help="Profile in the profile file (env PRACTICEFLOW_PROFILE; file from "
        "PRACTICEFLOW_PROFILES, default ~/.config/practiceflow/profiles.toml).",
    ),
    click.option(
        "--client-id",
        metavar="ID",
        help="The Client ID (env PRACTICEFLOW_CLIENT_ID); the secret never goes on a command "
        "line: PRACTICEFLOW_CLIENT_SECRET or a profile.",
    ),
    click.option(
        "--region",
        type=click.Choice(REGIONS, case_sensitive=False),
        help="The practice's region (env PRACTICEFLOW_REGION); its base URL comes from "
        "PRACTICEFLOW_BASE_URL_<REGION> or the profile.",
    ),
    click.option(
        "--base-url",
        metavar="URL",
        help="Regional base URL, e.g. http://127.0.0.1:8765/anz for the sandbox "
        "(env PRACTICEFLOW_BASE_URL).",
    ),
    click.option(
        "--auth-method",
        type=click.Choice(AUTH_METHODS, case_sensitive=False),
        help="header (X-SVC-Auth-ID/Key, the default) or basic (env PRACTICEFLOW_AUTH_METHOD).",
    ),
)


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
modules_option = click.option(
    "--modules",
    "modules_dirs",
    metavar="DIR",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder of your own modules (actions/ and triggers/ inside, or module files); "
    "repeatable. A key that is already shipped needs 'override: true'.",
)
log_json_option = click.option(
    "--log-json", is_flag=True, help="Structured logs: one JSON object per line on stderr."
)
verbose_option = click.option("-v", "--verbose", is_flag=True, help="Log every step.")


def terminal(*, stderr: bool = False, **options: Any) -> Console:
    """The rich console every command prints through; no emoji codes (``:smile:`` is data)."""
    return Console(stderr=stderr, emoji=False, **options)


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON (text as is, other values as ``str``)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def api_options(func: F) -> F:
    """Add the shared API options to a click command; it receives them as ``api``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["api"] = ApiOptions(**{name: kwargs.pop(name) for name in _FIELDS})
        return func(*args, **kwargs)

    decorated: Callable[..., Any] = wrapper
    for option in reversed(_OPTIONS):
        decorated = option(decorated)
    return decorated  # type: ignore[return-value]  # same call shape for click's purposes


def api_settings(options: ApiOptions) -> Settings:
    """The settings the shared options name (a ConfigError when missing or invalid)."""
    return load_settings(
        options.client_id,
        profile=options.profile,
        region=options.region,
        base_url=options.base_url,
        auth_method=options.auth_method,
    )


def build_client(options: ApiOptions, **kwargs: Any) -> Client:
    """A :class:`~practiceflow.api.Client` from the shared options and ``Client`` arguments."""
    settings = kwargs.pop("settings", None) or api_settings(options)
    return Client(settings=settings, **kwargs)
