"""The fleet file: which practices one deployment serves, each with its own credentials.

A fleet file is YAML::

    modules: [my_modules]            # optional: folders of your own modules
    practices:
      acme:                          # the practice's key in the state store
        profile: acme                # credentials from the profile file, or:
        # client_id: 0f1e...          #   inline Client ID,
        # client_secret_env: ACME_SECRET  # the secret from this environment variable,
        # base_url: http://127.0.0.1:8000/anz   # or region: anz
        recipes: [recipes/proposal_to_bill_and_eform.yaml]
        ordered: false               # true: this practice's runs one at a time, in order
        poll_every: 60               # seconds between polls of its polling triggers
        limits: {per_minute: 60, per_hour: 1000, per_day: 10000}

Secrets never appear in the file: a profile, or the name of an environment variable.
Each practice gets its own client, its own shared rate budget (keyed by its Client ID),
and its own cursors, subscriptions and runs (keyed by its name).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import requests

from practiceflow.api import Client
from practiceflow.api.config import Settings, load_settings
from practiceflow.budget.rate_budget import RateBudget, RateLimits
from practiceflow.errors import ConfigError
from practiceflow.manifest.safe_read import FileRefused, read_text_limited
from practiceflow.manifest.yamlpos import YamlLoadError, load_yaml

__all__ = ["FleetConfig", "PracticeConfig", "load_fleet"]

_KEYS: Final = frozenset(
    {"profile", "client_id", "client_secret_env", "base_url", "region", "recipes", "ordered",
     "poll_every", "limits"}
)  # fmt: skip
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


#: A fleet file's limits: a few hundred bytes and about a dozen YAML nodes a practice, so
#: these allow some 100,000 practices where a recipe's limits would stop near 8,000.
FLEET_MAX_BYTES: Final = 50_000_000
FLEET_MAX_NODES: Final = 2_000_000


@dataclass(frozen=True)
class PracticeConfig:
    """One practice of the fleet.

    Attributes:
        name: its key in the state store (cursors, events, runs are filed under it).
        recipes: the recipe files it runs.
        profile: the profile holding its credentials, when they come from the profile file.
        client_id: its Client ID, when given inline.
        client_secret_env: the environment variable holding its secret.
        base_url: its regional base URL.
        region: its region (``anz``, ``uk``, ``za``).
        ordered: run its runs one at a time, in the order events arrived.
        poll_every: seconds between polls of its polling triggers.
        limits: its rate budget's windows.
    """

    name: str
    recipes: tuple[Path, ...]
    profile: str | None = None
    client_id: str | None = None
    client_secret_env: str | None = None
    base_url: str | None = None
    region: str | None = None
    ordered: bool = False
    poll_every: int = 60
    limits: RateLimits = field(default_factory=RateLimits)

    def settings(self, environ: Mapping[str, str] | None = None) -> Settings:
        """Resolve this practice's credentials and base URL, and nothing else's.

        The process environment's ``PRACTICEFLOW_*`` variables are not read (only
        ``PRACTICEFLOW_PROFILES``, the profile file's location): they must not fill a gap
        with another practice's credentials.

        Args:
            environ: where ``client_secret_env`` is read; ``os.environ`` when None.

        Raises:
            ConfigError: its credentials are missing or incomplete.
        """
        env = os.environ if environ is None else environ
        secret = None
        if self.client_secret_env is not None:
            secret = env.get(self.client_secret_env)
            if not secret:
                message = (
                    f"fleet practice {self.name!r}: environment variable "
                    f"{self.client_secret_env} (client_secret_env) is not set"
                )
                raise ConfigError(message)
        isolated = {k: v for k, v in env.items() if not k.startswith("PRACTICEFLOW_")}
        if "PRACTICEFLOW_PROFILES" in env:
            isolated["PRACTICEFLOW_PROFILES"] = env["PRACTICEFLOW_PROFILES"]
        return load_settings(
            self.client_id,
            secret,
            region=self.region,
            base_url=self.base_url,
            profile=self.profile,
            environ=isolated,
        )

    def client(
        self,
        budget: RateBudget | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        settings: Settings | None = None,
        session: requests.Session | None = None,
    ) -> Client:
        """Build this practice's client (see :meth:`settings` for where it reads).

        Args:
            budget: the (shared) rate budget to spend; a local one when None.
            environ: where ``client_secret_env`` is read; ``os.environ`` when None.
            settings: already resolved settings of this practice.
            session: the HTTP session to send with (its owner closes it); the client's
                own when None.

        Raises:
            ConfigError: its credentials are missing.
        """
        resolved = settings or self.settings(environ)
        return Client(settings=resolved, limits=self.limits, budget=budget, session=session)


@dataclass(frozen=True)
class FleetConfig:
    """A fleet file, loaded and checked.

    Attributes:
        path: the file.
        practices: practice name -> its configuration.
        modules: folders of the user's own modules.
    """

    path: Path
    practices: Mapping[str, PracticeConfig]
    modules: tuple[Path, ...] = ()


def _fail(path: Path, where: str, got: Any, expected: str) -> ConfigError:
    return ConfigError(f"{path}: {where}: got {got!r}; expected {expected}")


def _optional_str(path: Path, where: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _fail(path, where, value, "a string")


def _practice(path: Path, name: str, body: Any) -> PracticeConfig:
    where = f"practices.{name}"
    if not _NAME.match(name):
        raise _fail(path, where, name, "a name of letters, digits, '_', '.', '-'")
    if not isinstance(body, Mapping):
        raise _fail(path, where, body, "a mapping")
    unknown = sorted(set(body) - _KEYS)
    if unknown:
        raise _fail(path, f"{where}.{unknown[0]}", unknown[0], f"one of {sorted(_KEYS)}")
    recipes = body.get("recipes")
    if not isinstance(recipes, list) or not recipes or not all(isinstance(r, str) for r in recipes):
        raise _fail(path, f"{where}.recipes", recipes, "a non-empty list of recipe files")
    poll_every = body.get("poll_every", 60)
    if isinstance(poll_every, bool) or not isinstance(poll_every, int) or poll_every < 1:
        raise _fail(path, f"{where}.poll_every", poll_every, "whole seconds >= 1")
    ordered = body.get("ordered", False)
    if not isinstance(ordered, bool):
        raise _fail(path, f"{where}.ordered", ordered, "true or false")
    limits_body = body.get("limits", {})
    if not isinstance(limits_body, Mapping):
        raise _fail(path, f"{where}.limits", limits_body, "a mapping of per_minute, ...")
    try:
        limits = RateLimits(**dict(limits_body))
    except TypeError as exc:
        raise _fail(
            path, f"{where}.limits", dict(limits_body), "per_minute, per_hour, per_day"
        ) from exc
    values = {k: _optional_str(path, f"{where}.{k}", body.get(k)) for k in
              ("profile", "client_id", "client_secret_env", "base_url", "region")}  # fmt: skip
    if values["profile"] is None and values["client_id"] is None:
        raise _fail(path, where, "no credentials", "'profile' or 'client_id' + 'client_secret_env'")
    return PracticeConfig(
        name=name,
        recipes=tuple((path.parent / recipe).resolve() for recipe in recipes),
        ordered=ordered,
        poll_every=poll_every,
        limits=limits,
        **values,
    )


def load_fleet(path: str | os.PathLike[str]) -> FleetConfig:
    """Load and check a fleet file (see the module docstring for its shape).

    Args:
        path: the YAML file; recipe and module paths in it are relative to its folder.

    Returns:
        The checked configuration.

    Raises:
        ConfigError: the file is missing or wrong; the message names the field.
    """
    file = Path(path)
    try:
        text = read_text_limited(file, FLEET_MAX_BYTES)
        data = load_yaml(text, max_bytes=FLEET_MAX_BYTES, max_nodes=FLEET_MAX_NODES).data
    except FileRefused as exc:
        raise ConfigError(f"fleet file {file}: {exc}") from None
    except YamlLoadError as exc:
        where = f":{exc.line}:{exc.column}" if exc.line else ""
        raise ConfigError(f"fleet file {file}{where}: {exc.message}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("practices"), Mapping):
        raise _fail(file, "practices", None if not isinstance(data, Mapping) else
                    data.get("practices"), "a mapping of practice name -> settings")  # fmt: skip
    practices = {
        str(name): _practice(file, str(name), body) for name, body in data["practices"].items()
    }
    if not practices:
        raise _fail(file, "practices", {}, "at least one practice")
    modules = data.get("modules", [])
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise _fail(file, "modules", modules, "a list of folders")
    return FleetConfig(file, practices, tuple((file.parent / m).resolve() for m in modules))
